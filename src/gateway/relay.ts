/**
 * The relay: streams a request to a backend and the backend's answer back to the client, over
 * keep-alive connections kept by an undici `Agent`.
 *
 * undici was chosen over http-proxy-middleware by measurement (see docs/gateway.md, "Relay"):
 * higher throughput through the same Express app, per-request read timeouts that distinguish
 * "unreachable" from "too slow", and a maintained HTTP client from the Node.js project.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { addDiagnostic, gatewayContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { isHeaderValue, requestHeadersForBackend, responseHeadersForClient, writeProxyHeaders, type BackendHeaderRules } from './headers.js';
import { compileTrust, type TrustProxy } from './trust-proxy.js';

const log = logger('relay');

/** Options of {@link createRelay}. */
export interface RelayOptions {
  /**
   * The backend's base URL, `http:` or `https:`, for example `http://127.0.0.1:9001` or
   * `https://backend.example/api/v3`. The resource path of the request is appended to its path.
   */
  target: string | URL;
  /**
   * The undici dispatcher that holds the connections. Default: an `Agent` created for this relay
   * (keep-alive, closed by {@link Relay.close}). Pass one to share connections between relays;
   * then its owner closes it.
   */
  dispatcher?: Dispatcher;
  /**
   * Read timeout in milliseconds: the longest wait for the backend's response headers, and then
   * between two chunks of its body. Past it the client gets 504 (`ERR_BACKEND_TIMEOUT`).
   * Default `30000`.
   */
  timeoutMs?: number;
  /**
   * Connect timeout in milliseconds of the relay's own `Agent` (ignored with `dispatcher`).
   * Default `10000`. A backend that cannot be reached gives 503 (`ERR_BACKEND_UNAVAILABLE`).
   */
  connectTimeoutMs?: number;
  /**
   * Writes `X-Forwarded-For`, `X-Forwarded-Host`, `X-Forwarded-Proto` and `Forwarded` for the
   * backend from the connection. The client's copies are dropped unless it is a trusted proxy
   * (`trustProxy`). `false` relays none of them, the client's included. Default `true`.
   */
  forwardedHeaders?: boolean;
  /**
   * Whose `X-Forwarded-*` and `Forwarded` headers are continued instead of replaced, with
   * Express's `trust proxy` values (see {@link TrustProxy}). Default `false`: nobody's.
   */
  trustProxy?: TrustProxy;
  /**
   * Relay client headers whose name has `_`. Default `false`: dropped, as nginx does, so that a
   * backend that reads `_` and `-` alike (CGI, WSGI, PHP) cannot be sent a forged gateway header.
   */
  keepUnderscoreHeaders?: boolean;
  /**
   * The resource path to request from the backend (below `target`'s path), query string included.
   * Default: `req.url` as the relay sees it (so mount the relay where `req.url` is the resource
   * path). `createGateway` passes the part after `/<provider>/<api>/v<n>`.
   */
  resourceUrl?: (req: IncomingMessage) => string;
  /**
   * Value of the `Server` header of relayed responses (the backend's own is never relayed).
   * Default: none.
   */
  server?: string;
  /**
   * Adds `Gateway-Transaction-ID` (always) and `Gateway-Message-ID` (status below 400) from
   * `req.gateway` to relayed responses, in the same write as the backend's headers. For a host
   * whose recorder does not set them itself (`createGateway`); with `recordTransaction` in the
   * chain, leave it off: the recorder sets them. Default `false`.
   */
  idHeaders?: boolean;
}

/** An Express-compatible middleware that relays the request, plus its cleanup. */
export interface Relay {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void;
  /** Closes the relay's own `Agent` once in-flight requests end (no-op with a given dispatcher). */
  close(): Promise<void>;
}

/** Error codes of undici and Node that mean "the backend could not be reached". */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

/** Error codes that mean "the backend was reached but did not answer in time". */
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function errorCode(err: unknown): string | undefined {
  let current: unknown = err;
  // undici wraps socket errors (`cause`); the first code found names the failure.
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Maps a relay failure to the catalogue: 504 for a read timeout, 503 otherwise. */
export function backendError(err: unknown, backend: string): GatewayError {
  const code = errorCode(err) ?? 'unknown';
  const message = err instanceof Error ? err.message : String(err);
  const diagnostic = `backend ${backend}: ${code} ${message}`;
  if (TIMED_OUT.has(code)) return new GatewayError('ERR_BACKEND_TIMEOUT', { diagnostic, cause: err });
  if (!UNREACHABLE.has(code)) log('unexpected relay error %s: %s', code, message);
  return new GatewayError('ERR_BACKEND_UNAVAILABLE', { diagnostic, cause: err });
}

/**
 * The body to send: the request stream itself (relayed as it arrives, never buffered whole), or,
 * when a body parser already consumed it, the parsed body encoded again.
 */
function requestBody(req: IncomingMessage, headers: Record<string, string | string[]>): Readable | Buffer | null {
  const parsed = req as IncomingMessage & { _body?: boolean; body?: unknown; rawBody?: unknown };
  const raw = req.gateway?.rawBody;
  if (raw !== undefined || parsed._body === true || parsed.readableEnded) {
    // A gateway middleware (requireToken on form bodies) or body-parser read the stream: send the
    // bytes it kept, or else re-encode what the parser produced.
    let buffer: Buffer | undefined;
    if (raw !== undefined) buffer = raw;
    else if (Buffer.isBuffer(parsed.rawBody)) buffer = parsed.rawBody;
    else if (Buffer.isBuffer(parsed.body)) buffer = parsed.body;
    else if (typeof parsed.body === 'string') buffer = Buffer.from(parsed.body);
    else if (parsed.body !== undefined && parsed.body !== null && typeof parsed.body === 'object') {
      const type = String(headers['content-type'] ?? '');
      buffer = type.includes('application/x-www-form-urlencoded')
        ? Buffer.from(new URLSearchParams(parsed.body as Record<string, string>).toString())
        : Buffer.from(JSON.stringify(parsed.body));
    }
    delete headers['transfer-encoding'];
    if (buffer === undefined || buffer.length === 0) {
      delete headers['content-length'];
      return null;
    }
    headers['content-length'] = String(buffer.length);
    return buffer;
  }
  const length = headers['content-length'];
  if (length !== undefined && length !== '0') return req;
  if (req.headers['transfer-encoding'] !== undefined) return req;
  return null;
}

function validatedTarget(target: string | URL): URL {
  let url: URL;
  try {
    url = new URL(String(target));
  } catch {
    throw new TypeError(`createRelay: options.target must be an http(s) URL, got ${JSON.stringify(String(target))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`createRelay: options.target must be an http(s) URL, got ${JSON.stringify(String(target))}`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new TypeError('createRelay: options.target must not have a query or fragment');
  }
  return url;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`createRelay: options.${name} must be a positive number of milliseconds`);
  }
  return value;
}

/**
 * Creates a relay to one backend: any method, the query string and body relayed unchanged and
 * streamed, the backend's status, headers and body streamed back (hop-by-hop headers dropped in
 * both directions, the backend's `Server` and gateway id headers replaced by the gateway's).
 * Errors before the response starts go to `next` as {@link GatewayError}: unreachable →
 * `ERR_BACKEND_UNAVAILABLE` (503), read timeout → `ERR_BACKEND_TIMEOUT` (504). The request headers
 * sent are `req.headers` as earlier middleware (forwardTokenHeaders) left them.
 *
 * @example
 * ```ts
 * // fragment
 * const relay = createRelay({ target: 'http://127.0.0.1:9001', timeoutMs: 5000 });
 * app.use('/petstore', relay, problemJsonErrorHandler());
 * ```
 */
export function createRelay(options: RelayOptions): Relay {
  if (options === null || typeof options !== 'object') throw new TypeError('createRelay: options must be an object');
  const target = validatedTarget(options.target);
  const timeoutMs = positive('timeoutMs', options.timeoutMs, 30_000);
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs, 10_000);
  if (options.dispatcher !== undefined && typeof options.dispatcher?.dispatch !== 'function') {
    throw new TypeError('createRelay: options.dispatcher must be an undici Dispatcher');
  }
  if (options.resourceUrl !== undefined && typeof options.resourceUrl !== 'function') {
    throw new TypeError('createRelay: options.resourceUrl must be a function');
  }
  if (options.server !== undefined && (typeof options.server !== 'string' || !isHeaderValue(options.server))) {
    throw new TypeError('createRelay: options.server must be a header value (no control characters)');
  }
  if (options.idHeaders !== undefined && typeof options.idHeaders !== 'boolean') throw new TypeError('createRelay: options.idHeaders must be a boolean');
  const server = options.server;
  const idHeaders = options.idHeaders ?? false;
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent({ connect: { timeout: connectTimeoutMs } });
  const forwarded = options.forwardedHeaders ?? true;
  if (typeof forwarded !== 'boolean') throw new TypeError('createRelay: options.forwardedHeaders must be a boolean');
  if (options.keepUnderscoreHeaders !== undefined && typeof options.keepUnderscoreHeaders !== 'boolean') {
    throw new TypeError('createRelay: options.keepUnderscoreHeaders must be a boolean');
  }
  const trust = compileTrust(options.trustProxy, 'createRelay: options.trustProxy');
  const headerRules: BackendHeaderRules = { keepUnderscoreHeaders: options.keepUnderscoreHeaders ?? false };
  const resourceUrl = options.resourceUrl ?? ((req: IncomingMessage) => req.url ?? '/');
  const origin = target.origin;
  // The backend's base path without its trailing slash; the resource path brings its own.
  const basePath = target.pathname.endsWith('/') ? target.pathname.slice(0, -1) : target.pathname;
  const backendLabel = `${origin}${basePath}`;

  const relay = function relay(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const context = gatewayContext(req);
    // The one place the backend's request head is made: the client's headers as the chain left
    // them, cleaned, then the gateway's own (transaction id, proxy headers) over any copy.
    const headers = requestHeadersForBackend(req.headers, headerRules);
    headers['gateway-transaction-id'] = context.transactionId;
    if (forwarded) writeProxyHeaders(req, headers, trust);
    const resource = resourceUrl(req);
    const path = basePath + (resource.startsWith('/') ? resource : `/${resource}`);
    const body = requestBody(req, headers);

    // Abort the backend exchange when the client goes away before its response is complete.
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort();
    };
    // `on`, not `once` (no wrapper per request): the completion callback removes it.
    res.on('close', onClose);

    dispatcher.stream(
      {
        origin,
        path,
        method: req.method ?? 'GET',
        headers,
        body,
        signal: abort.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      ({ statusCode, headers: backendHeaders }) => {
        const out = responseHeadersForClient(backendHeaders);
        // Added to the one object written with the status: when nothing was set on the response
        // before, Node validates and serializes it directly (no setHeader per header).
        if (server !== undefined) out.Server = server;
        if (idHeaders) {
          out['Gateway-Transaction-ID'] = context.transactionId;
          // The message id goes with success only (spec 2.5).
          if (statusCode < 400) out['Gateway-Message-ID'] = context.messageId;
        }
        res.writeHead(statusCode, out);
        return res;
      },
      (err) => {
        res.removeListener('close', onClose);
        if (err === null) return;
        if (abort.signal.aborted) {
          // The client left: nothing to answer, only to note.
          addDiagnostic(req, 'info', 'RELAY_ABORTED', `client closed the connection before the backend ${backendLabel} answered`);
          return;
        }
        const error = backendError(err, backendLabel);
        if (res.headersSent) {
          // Mid-body failure: the status is already out, so the only honest signal is a cut connection.
          addDiagnostic(req, 'error', error.code, error.diagnostic ?? error.message);
          res.destroy(error);
          return;
        }
        if (body instanceof Readable && !body.readableEnded) body.resume();
        next(error);
      },
    );
  } as Relay;
  relay.close = async (): Promise<void> => {
    if (ownDispatcher) await dispatcher.close();
  };
  return relay;
}
