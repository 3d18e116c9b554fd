/**
 * Message contents kept for a record as the relay streams them (spec 2.3): the headers it handed
 * to the HTTP client, and the first bytes of the request and response bodies. Nothing is buffered
 * beyond the kept bytes and nothing waits on the recording: a chunk is copied (its kept part only)
 * and passed on as it came.
 *
 * @module
 */
import type { IncomingHttpHeaders } from 'node:http';
import { BACKEND_MESSAGE, type GatewayContext, type RecordingContext } from '../context.js';
import { REDACTED } from './redact.js';
import type { RecordedBody } from './types.js';

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
export function startBackendMessage(context: GatewayContext, host: string, headers: Record<string, string | string[]>): BackendMessage | undefined {
  const recording: RecordingContext | undefined = context.recording;
  if (recording === undefined || !(recording.outgoingHeaders === true || recording.requestBody === true || recording.responseBody === true)) return undefined;
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

/** The headers the backend received: `host`, then the relay's, several values joined as on the wire. */
export function sentHeaders(message: BackendMessage, names: ReadonlyMap<string, string>): Record<string, string> {
  const out: Record<string, string> = { [names.get('host') ?? 'host']: message.host };
  for (const name of Object.keys(message.headers)) {
    const value = message.headers[name]!;
    out[names.get(name) ?? name] = typeof value === 'string' ? value : value.join(name === 'cookie' ? '; ' : ', ');
  }
  return out;
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

/** The headers as the client sent them (names in their case, repeated ones joined), from `rawHeaders`. */
export function receivedHeaders(raw: readonly string[] | undefined, fallback: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined || raw.length === 0) {
    for (const name of Object.keys(fallback)) {
      const value = fallback[name];
      if (value !== undefined) out[name] = typeof value === 'string' ? value : value.join(', ');
    }
    return out;
  }
  const seen = new Map<string, string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    const first = seen.get(lower);
    if (first === undefined) {
      seen.set(lower, name);
      out[name] = raw[i + 1]!;
    } else {
      out[first] += `${lower === 'cookie' ? '; ' : ', '}${raw[i + 1]!}`;
    }
  }
  return out;
}

const TEXTUAL = /^(?:text\/|application\/(?:[\w.+-]*\+)?(?:json|xml|x-www-form-urlencoded|javascript|ecmascript|graphql|yaml|x-yaml)\b)/i;
const FORM = /^application\/x-www-form-urlencoded\b/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Every occurrence of `needle` in `haystack` replaced by `[redacted]`. */
function replaceBytes(haystack: Buffer, needle: Buffer): Buffer {
  let at = haystack.indexOf(needle);
  if (at === -1) return haystack;
  const parts: Buffer[] = [];
  let from = 0;
  const marker = Buffer.from(REDACTED);
  while (at !== -1) {
    parts.push(haystack.subarray(from, at), marker);
    from = at + needle.length;
    at = haystack.indexOf(needle, from);
  }
  parts.push(haystack.subarray(from));
  return Buffer.concat(parts);
}

/** `bytes` without a last part that starts the token (a token cut by the limit is still a token's part). */
function withoutTokenStart(bytes: Buffer, token: Buffer): Buffer {
  for (let n = Math.min(token.length - 1, bytes.length); n >= 8; n--) {
    if (bytes.subarray(bytes.length - n).equals(token.subarray(0, n))) return Buffer.concat([bytes.subarray(0, bytes.length - n), Buffer.from(REDACTED)]);
  }
  return bytes;
}

/** Text of UTF-8 bytes, allowing a character cut by the limit at the end; `undefined` when they are not UTF-8. */
function decodeText(bytes: Buffer, cut: boolean): string | undefined {
  for (let drop = 0; drop <= (cut ? 3 : 0) && drop <= bytes.length; drop++) {
    try {
      return utf8.decode(bytes.subarray(0, bytes.length - drop));
    } catch {
      // try without the last bytes of a cut character
    }
  }
  return undefined;
}

/**
 * The record's copy of a captured body: text for a textual content type that is UTF-8, else base64;
 * the client's token (and a form body's `access_token`) replaced by `[redacted]`.
 */
export function recordedBody(capture: BodyCapture, secret: string | undefined): RecordedBody {
  let bytes = capture.bytes();
  const truncated = capture.size > capture.kept;
  if (secret !== undefined && secret !== '') {
    const token = Buffer.from(secret);
    bytes = replaceBytes(bytes, token);
    if (truncated) bytes = withoutTokenStart(bytes, token);
  }
  const type = capture.contentType;
  let text = type === undefined || TEXTUAL.test(type) ? decodeText(bytes, truncated) : undefined;
  if (text !== undefined && type !== undefined && FORM.test(type)) text = text.replace(/(^|&)(access_token=)[^&]*/g, `$1$2${REDACTED}`);
  const body: RecordedBody = text === undefined
    ? { size: capture.size, kept: capture.kept, encoding: 'base64', content: bytes.toString('base64') }
    : { size: capture.size, kept: capture.kept, encoding: 'utf8', content: text };
  if (type !== undefined) body.contentType = type;
  if (truncated) body.truncated = true;
  return body;
}
