/**
 * Reads an `application/x-www-form-urlencoded` request body so that `requireToken` can find
 * `access_token` in it (RFC 6750 section 2.2) without the app mounting a body parser, and without
 * losing the body for the handlers and relays after it.
 *
 * Reading a body is waiting on the client, and a client may send it a byte at a time: the read
 * has a deadline of its own, one client address has only so many bodies read at once, and the
 * exchange holds no instance slot meanwhile (see `whileWaitingOnClient`), so that clients
 * sending slowly cannot take the slots everyone else needs.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { gatewayContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { whileWaitingOnClient } from '../exchange/answer-end.js';

/** A request as body parsers leave it. */
type ParsedRequest = IncomingMessage & { body?: unknown; _body?: boolean; rawBody?: Buffer };

/** Whether the request declares a urlencoded body (parameters such as `charset` allowed). */
export function isUrlencoded(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  if (type === undefined) return false;
  return type.split(';')[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';
}

/** Whether the request has a body at all (RFC 9112: Content-Length or Transfer-Encoding). */
function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}

/** Bounds of {@link formTokens}. */
export interface FormBounds {
  /** Largest body read, in bytes (more: 413 `ERR_REQUEST_TOO_LARGE`). */
  maxBodySize: number;
  /** Most fields a body may have (more: 413 `ERR_REQUEST_TOO_LARGE`), as body-parser's `parameterLimit`. */
  maxFields: number;
  /** Longest time the body may take to arrive once its reading starts, ms (more: 400 `ERR_BAD_REQUEST`). */
  timeoutMs: number;
  /** Bodies of one client address read at once (more: 429 `ERR_INSTANCE_BUSY`, the body unread). */
  maxReadsPerAddress: number;
  /** The client's address, for `maxReadsPerAddress`. */
  clientAddress: (req: IncomingMessage) => string | undefined;
  /** Bodies being read now, by client address (shared by the middleware of one token policy). */
  reading: Map<string, number>;
}

/** Errors answered with the body left unread: their connection closes after the answer. */
const unread = new WeakSet<object>();

/**
 * Whether `err` was answered with the request's body left unread (a body that did not arrive in
 * time, or was not read at all): its connection cannot carry another request, and is closed after
 * the answer rather than drained while the client trickles the rest.
 */
export function leavesBodyUnread(err: unknown): boolean {
  return typeof err === 'object' && err !== null && unread.has(err);
}

function unreadError(error: GatewayError): GatewayError {
  unread.add(error);
  return error;
}

/**
 * The `access_token` values of the form body, reading the body if nobody did yet.
 *
 * - When a body parser already ran (`req.body` is set), its `access_token` field is used.
 * - Otherwise the stream is read here, up to `maxBodySize` bytes, and left for later middleware as
 *   body-parser leaves it: `req.body` (the parsed fields, only if `req.body` was unset),
 *   `req._body = true` (so a later `express.urlencoded()` does not wait for a stream that has
 *   ended), `req.rawBody` and `req.gateway.rawBody` (the bytes as received, which a relay sends on).
 * - The fields are counted before anything is decoded (a scan for `&` that stops at
 *   `maxFields + 1`): a body of more fields is refused with 413 without being parsed, so the
 *   parse that follows costs at most `maxFields` fields and is linear in the body size.
 * - Bodies with a `Content-Encoding` other than `identity` are not read (RFC 6750 asks for a
 *   single-part urlencoded body; decoding is the app's choice): no token is taken from them.
 * - The read is waiting on the client: at most `maxReadsPerAddress` bodies of one client address
 *   are read at once (another is refused at once with 429 `ERR_INSTANCE_BUSY`, unread), each
 *   within `timeoutMs` (else 400 `ERR_BAD_REQUEST`), and the exchange gives back its instance
 *   slot meanwhile (taken again once the body has arrived: 429 `ERR_INSTANCE_BUSY` when the cap
 *   is reached by then). Both refusals leave the body unread ({@link leavesBodyUnread}).
 */
export async function formTokens(req: IncomingMessage, bounds: FormBounds): Promise<string[]> {
  const parsed = req as ParsedRequest;
  if (parsed.body !== undefined && parsed.body !== null) return fieldValues(parsed.body);
  if (parsed._body === true || parsed.readableEnded || !hasBody(req)) return [];
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return [];

  const address = bounds.clientAddress(req) ?? '';
  const reading = bounds.reading.get(address) ?? 0;
  if (reading >= bounds.maxReadsPerAddress) {
    throw unreadError(
      new GatewayError('ERR_INSTANCE_BUSY', {
        diagnostic: `refused unread: ${reading} form bodies of this client address are being read for access_token (maxBodyReadsPerAddress)`,
      }),
    );
  }
  bounds.reading.set(address, reading + 1);
  let raw: Buffer;
  try {
    raw = await whileWaitingOnClient(gatewayContext(req), () => readBounded(req, bounds.maxBodySize, bounds.timeoutMs));
  } finally {
    const left = (bounds.reading.get(address) ?? 1) - 1;
    if (left > 0) bounds.reading.set(address, left);
    else bounds.reading.delete(address);
  }
  // Marked as read before any refusal below: the stream has ended either way.
  parsed._body = true;
  parsed.rawBody = raw;
  gatewayContext(req).rawBody = raw;
  if (hasMoreFields(raw, bounds.maxFields)) {
    throw new GatewayError('ERR_REQUEST_TOO_LARGE', {
      diagnostic: `urlencoded body with more than ${bounds.maxFields} fields, not parsed for access_token`,
    });
  }
  const fields = parseForm(raw);
  if (parsed.body === undefined || parsed.body === null) parsed.body = fields;
  return fieldValues(fields);
}

/**
 * Whether `raw` has more than `max` fields as `URLSearchParams` counts them (non-empty runs
 * between `&`). Looks only for `&` (native search), and stops at the first field over the bound.
 */
function hasMoreFields(raw: Buffer, max: number): boolean {
  let fields = 0;
  let start = 0;
  while (start <= raw.length) {
    let end = raw.indexOf(0x26, start); // '&'
    if (end < 0) end = raw.length;
    if (end > start && ++fields > max) return true;
    start = end + 1;
  }
  return false;
}

function fieldValues(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const value = (body as Record<string, unknown>)['access_token'];
  if (value === undefined) return [];
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : ''));
  return [typeof value === 'string' ? value : ''];
}

/**
 * Parses a urlencoded body into an object; a repeated field becomes an array (as `qs` does).
 * Linear: a repeated field's array grows in place (copying it at each repeat made a body of
 * `x&x&x…` cost quadratic time, seconds of blocked event loop for 40 KB).
 */
function parseForm(raw: Buffer): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(raw.toString('utf8'))) {
    const previous = fields[name];
    if (previous === undefined) fields[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else fields[name] = [previous, value];
  }
  return fields;
}

function readBounded(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    // Do not read what we will refuse; drain it so the connection can answer.
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | undefined, value?: Buffer) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.resume();
        finish(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(undefined, Buffer.concat(chunks, size));
    const onError = (err: Error) =>
      finish(new GatewayError('ERR_BAD_REQUEST', { diagnostic: `error reading the request body: ${err.message}`, cause: err }));
    const onAborted = () => finish(new GatewayError('ERR_BAD_REQUEST', { diagnostic: 'the client aborted the request body' }));
    // The client sends too slowly (or not at all): answered now, the rest never read.
    const deadline = setTimeout(() => {
      const declared = req.headers['content-length'];
      finish(
        unreadError(
          new GatewayError('ERR_BAD_REQUEST', {
            diagnostic: `the urlencoded body did not arrive within ${timeoutMs} ms (${size}${declared === undefined ? '' : ` of ${declared}`} bytes received): not read for access_token`,
          }),
        ),
      );
    }, timeoutMs);
    deadline.unref();
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('ERR_REQUEST_TOO_LARGE', { diagnostic: `urlencoded body larger than ${limit} bytes, not read for access_token` });
}
