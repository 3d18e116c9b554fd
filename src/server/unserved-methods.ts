/**
 * Requests that `node:http` never hands to a request listener, answered all the same: CONNECT
 * (its `connect` event, which by default closes the socket unanswered) and a request line whose
 * method the parser does not know (`FOO /`, `get /`: a `clientError` with `HPE_INVALID_METHOD`,
 * by default a bare 400 without a body). Each becomes a request and a response on its socket, given
 * to the listener's own handler: the API listener's gateway answers 501 problem+json and records
 * the exchange; the admin listener answers 501 problem+json. The connection closes after the answer.
 *
 * @module
 */
import { IncomingMessage, METHODS, ServerResponse, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { GatewayError, messageSets } from '../errors.js';
import { renderProblem } from '../problem/render.js';

/** The longest part of a refused request read to make it a request: Node's default header limit. */
const MAX_HEAD_BYTES = 16 * 1024;
/** How long the answer of such a request may take before its connection is closed anyway, ms. */
const ANSWER_TIMEOUT_MS = 30_000;

// A method is a token (RFC 9110 section 9.1); any other first line stays Node's 400.
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}) ([\x21-\x7e]{1,16384}) HTTP\/1\.([01])$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
// One character class each, no two quantifiers side by side: linear on hostile input.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const KNOWN_METHODS = new Set(METHODS);

/** What `node:http` answers a client error with when no listener takes it (its own default). */
function defaultAnswer(code: string | undefined): string {
  const status =
    code === 'HPE_HEADER_OVERFLOW'
      ? '431 Request Header Fields Too Large'
      : code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? '413 Payload Too Large'
        : code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : '400 Bad Request';
  return `HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`;
}

/** A header line's name and value (optional whitespace around the value dropped), or `undefined`. */
function headerOf(text: string): [string, string] | undefined {
  const colon = text.indexOf(':');
  const name = text.slice(0, Math.max(colon, 0));
  const value = text.slice(colon + 1);
  if (colon < 1 || !HEADER_NAME.test(name) || !HEADER_VALUE.test(value)) return undefined;
  let start = 0;
  let end = value.length;
  const blank = (code: number): boolean => code === 32 || code === 9;
  while (start < end && blank(value.charCodeAt(start))) start++;
  while (end > start && blank(value.charCodeAt(end - 1))) end--;
  return [name, value.slice(start, end)];
}

/**
 * The request of a head the parser refused for its method, when its first line is a request line
 * with a method Node does not know; the header lines when each is well formed (else none).
 */
function requestOfRawHead(raw: Buffer, socket: Socket): IncomingMessage | undefined {
  const lines = raw.subarray(0, MAX_HEAD_BYTES).toString('latin1').split('\r\n');
  const line = REQUEST_LINE.exec(lines[0] ?? '');
  // A known method here would be a pipelined request before the refused one: not this case.
  if (line === null || KNOWN_METHODS.has(line[1]!) || lines.length < 2) return undefined;
  const req = new IncomingMessage(socket);
  req.method = line[1]!;
  req.url = line[2]!;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = Number(line[3]);
  req.httpVersion = `1.${line[3]}`;
  const rawHeaders: string[] = [];
  // The last piece is the rest of the packet (a partial line, or what follows the head).
  for (const text of lines.slice(1, -1)) {
    if (text === '') break;
    const header = headerOf(text);
    if (header === undefined || rawHeaders.length >= 200) {
      rawHeaders.length = 0;
      break;
    }
    rawHeaders.push(...header);
  }
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    const before = req.headers[name];
    req.headers[name] = before === undefined ? value : `${String(before)}, ${value}`;
  }
  req.rawHeaders = rawHeaders;
  return req;
}

/**
 * The connections answering such requests: `node:http` hands them over (`server.close()` does not
 * wait for them), so that a stop waits for them here, lest their record come after the store closed.
 */
export interface UnservedAnswers {
  /** Resolves once every connection answering now has closed (each within its answer timeout). */
  settled(): Promise<void>;
  /** Closes those connections at once (the stop's grace period is over). */
  closeAll(): void;
}

/** Answers `req` on `socket` through `handler`, then closes the connection. */
function answerOn(socket: Socket, req: IncomingMessage, handler: RequestListener): void {
  // The request has no body the gateway reads: the connection closes after the answer.
  if (!req.complete) req.push(null);
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  const timer = setTimeout(() => socket.destroy(), ANSWER_TIMEOUT_MS);
  timer.unref();
  // Closed once the answer is written; the socket's close is the response's (the record's cue).
  res.on('finish', () => {
    clearTimeout(timer);
    socket.destroySoon();
  });
  socket.on('close', () => clearTimeout(timer));
  handler(req, res);
}

/** The admin listener's refusal, rendered once. */
let refusal: ReturnType<typeof renderProblem> | undefined;

/** The admin listener's answer: 501 problem+json (English, as its other refusals), not recorded. */
export const refuseMethod: RequestListener = (_req, res) => {
  refusal ??= renderProblem(new GatewayError('ERR_METHOD_NOT_IMPLEMENTED'), messageSets.en);
  const text = JSON.stringify(refusal.body);
  res.writeHead(refusal.status, { ...refusal.headers, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

/** Answers the CONNECT requests and unknown methods of `server` with `handler`. */
export function answerUnservedMethods(server: Server, handler: RequestListener): UnservedAnswers {
  const open = new Set<Socket>();
  const waiting: Array<() => void> = [];
  const answer = (socket: Socket, req: IncomingMessage): void => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      // After the turn: the response's 'close' (the record's cue) comes on the next tick.
      if (open.size === 0) setImmediate(() => open.size === 0 && waiting.splice(0).forEach((resolve) => resolve()));
    });
    answerOn(socket, req, handler);
  };
  server.on('connect', (req: IncomingMessage, socket: Duplex) => answer(socket as Socket, req));
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex) => {
    // The parser stays in its error state: more data on the socket is the same error again.
    if (answered.has(socket)) return;
    answered.add(socket);
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    const req =
      err.code === 'HPE_INVALID_METHOD' && Buffer.isBuffer(err.rawPacket) && socket.writable && !inFlight
        ? requestOfRawHead(err.rawPacket, socket as Socket)
        : undefined;
    if (req !== undefined) {
      answer(socket as Socket, req);
      return;
    }
    // Node's own answer to every other client error, as when no listener takes them.
    if (socket.writable && inFlight?.headersSent !== true) socket.write(defaultAnswer(err.code));
    socket.destroy(err);
  });
  return {
    settled: () => (open.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
    closeAll: () => {
      for (const socket of open) socket.destroy();
    },
  };
}
