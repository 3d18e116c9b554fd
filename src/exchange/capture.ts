/**
 * Message contents kept for a record as the relay streams them (docs/console.md, "Message recording
 * per API"): the headers it handed to the HTTP client, the client's headers before any step edited
 * them, and the first bytes of the request and response bodies. Nothing is buffered beyond the kept
 * bytes and nothing waits on the recording: a chunk is copied (its kept part only) and passed on as
 * it came. The record's copies of them (headers as sent, bodies redacted) are `record/messages.ts`.
 *
 * @module
 */
import { BACKEND_MESSAGE, type GatewayContext, type RecordingContext } from '../context.js';

/** Default most bytes of a recorded body. */
export const DEFAULT_MAX_BODY_BYTES = 4096;

/** The first bytes of a body, and how many went through. */
export class BodyCapture {
  readonly #chunks: Buffer[] = [];
  /** Bytes kept. */
  kept = 0;
  /** Bytes that went through. */
  size = 0;
  /** The body's `content-type`, when known. */
  contentType: string | undefined;

  constructor(readonly max: number) {}

  /** Counts a chunk and copies what is still wanted of it. */
  add(chunk: Uint8Array): void {
    this.size += chunk.length;
    const room = this.max - this.kept;
    if (room <= 0) return;
    // A copy of the kept part only: a slice would pin the whole chunk.
    const part = Buffer.from(chunk.subarray(0, Math.min(room, chunk.length)));
    this.#chunks.push(part);
    this.kept += part.length;
  }

  /** The kept bytes. */
  bytes(): Buffer {
    return Buffer.concat(this.#chunks, this.kept);
  }
}

/** What the relay sent to the backend, and what it received back, for the record. */
export interface BackendMessage {
  /** The `Host` the HTTP client writes for the backend. */
  readonly host: string;
  /** The headers handed to the HTTP client (lower-case names), as sent. */
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  /** The request body's first bytes, when recorded. */
  readonly requestBody?: BodyCapture;
  /** The response body's first bytes, when recorded. */
  readonly responseBody?: BodyCapture;
}

/**
 * Starts the backend message of a relayed request when its recording asks for outgoing headers or
 * a body (`undefined` otherwise: nothing kept, nothing allocated).
 */
export function startBackendMessage(
  context: GatewayContext,
  host: string,
  headers: Record<string, string | string[]>,
): BackendMessage | undefined {
  const recording: RecordingContext | undefined = context.recording;
  if (recording === undefined || !(recording.outgoingHeaders === true || recording.requestBody === true || recording.responseBody === true))
    return undefined;
  const max = recording.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const message: { -readonly [K in keyof BackendMessage]: BackendMessage[K] } = { host, headers };
  if (recording.requestBody === true) {
    const capture = new BodyCapture(max);
    const type = headers['content-type'];
    if (typeof type === 'string') capture.contentType = type;
    message.requestBody = capture;
  }
  if (recording.responseBody === true) message.responseBody = new BodyCapture(max);
  (context as { [BACKEND_MESSAGE]?: BackendMessage })[BACKEND_MESSAGE] = message;
  return message;
}

/** The backend message of a request, when the relay kept one. */
export function backendMessageOf(context: GatewayContext): BackendMessage | undefined {
  return (context as { [BACKEND_MESSAGE]?: BackendMessage })[BACKEND_MESSAGE];
}

/** The client's headers as received, kept before any step could edit them (token forwarding edits `rawHeaders`). */
const received = new WeakMap<GatewayContext, readonly string[]>();

/** Keeps a copy of the request's `rawHeaders` as they are now, for the record's incoming headers. */
export function keepReceivedHeaders(context: GatewayContext, raw: readonly string[]): void {
  received.set(context, raw.slice());
}

/** The headers kept by {@link keepReceivedHeaders}, else `undefined`. */
export function keptReceivedHeaders(context: GatewayContext): readonly string[] | undefined {
  return received.get(context);
}
