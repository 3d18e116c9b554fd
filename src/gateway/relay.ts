/**
 * The relay: streams a request to a backend and the backend's answer back to the client, over
 * keep-alive connections kept by an undici `Agent`.
 *
 * undici was chosen over http-proxy-middleware by measurement (see docs/gateway.md, "Why undici"):
 * higher throughput through the same Express app, per-request read timeouts that distinguish
 * "unreachable" from "too slow", and a maintained HTTP client from the Node.js project.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { addDiagnostic, gatewayContext } from '../context.js';
import { errorCatalogue, GatewayError } from '../errors.js';
import { logger } from '../log.js';
import {
  requestHeadersForBackend,
  responseHeadersForClient,
  writeProxyHeaders,
  writeTraceHeaders,
  type BackendHeaderRules,
} from './headers.js';
import type { BackendObserver } from '../observability/metrics.js';
import { endRelaySpan, traceHeadersFor, type GatewayTracing } from '../observability/tracing.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { addIdentityHead, TRANSACTION_ID_HEADER } from '../exchange/head.js';
import { compileTrust, type TrustProxy } from '../trust-proxy.js';
import { BackendExchange, type ExchangeSettings } from './backend-exchange.js';
import { startBackendMessage, type BodyCapture } from '../exchange/capture.js';

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
   * Client headers never relayed, whoever sent them, such as the header in which a TLS-terminating
   * proxy sends the client certificate (`createGateway` drops its `clientCertificateHeader`).
   * Default: none.
   */
  dropHeaders?: readonly string[];
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
   * @deprecated Ignored: relayed responses always carry `Gateway-Transaction-ID` and, below status
   * 400, `Gateway-Message-ID`, written with the backend's headers in one head write.
   */
  idHeaders?: boolean;
  /**
   * How long an idle keep-alive connection to the backend is kept, in milliseconds, by the relay's
   * own `Agent` (ignored with `dispatcher`). A longer `Keep-Alive: timeout=` hint from the backend
   * does not extend it (a shorter one shortens it). Default `4000`.
   */
  keepAliveTimeoutMs?: number;
  /**
   * When the backend answers before the client's upload is read (a 401/403/413 to a big POST), the
   * rest of the upload is read and discarded after the answer, so that the client's next request on
   * the same connection is answered. Past this many bytes (`Content-Length`, or any chunked upload),
   * the answer carries `Connection: close` instead. Default `1048576` (1 MiB).
   */
  maxDrainBytes?: number;
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
 * The client's body stream as undici reads it: an async iterable rather than the stream itself.
 * undici destroys a stream body when it stops sending (the backend answered first, or failed);
 * destroying an `IncomingMessage` leaves its socket paused with the rest of the upload unread, and
 * the client's next request on that connection is never read. Iterated without `destroyOnReturn`,
 * the stream stays ours: the relay drains it or closes the connection (see `settleUpload`).
 */
class ClientBody implements AsyncIterable<Buffer> {
  /** Where the first bytes go as they pass, when the request's recording asks for the body. */
  capture: BodyCapture | undefined;

  constructor(readonly req: IncomingMessage) {}

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    const chunks = this.req.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
    const capture = this.capture;
    if (capture === undefined) return chunks;
    // Each chunk is counted (its first bytes copied) and passed on as it came.
    return {
      next: async () => {
        const item = await chunks.next();
        if (item.done !== true) capture.add(item.value);
        return item;
      },
      return: async (value?: unknown) => (chunks.return === undefined ? { done: true, value: undefined } : chunks.return(value)),
    };
  }
}

/**
 * The body to send: the request stream itself (relayed as it arrives, never buffered whole), or,
 * when a body parser already consumed it, the parsed body encoded again.
 */
function requestBody(req: IncomingMessage, headers: Record<string, string | string[]>): ClientBody | Buffer | null {
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
  if (length !== undefined && length !== '0') return new ClientBody(req);
  if (req.headers['transfer-encoding'] !== undefined) return new ClientBody(req);
  return null;
}

/** Whether the client has gone (or its exchange is already answered): nothing may be relayed for it. */
function exchangeOver(req: IncomingMessage, res: ServerResponse): boolean {
  const socket = req.socket as IncomingMessage['socket'] | null;
  // `req.destroyed` alone is no sign: a request whose body was read to its end is destroyed too.
  return res.destroyed || res.writableEnded || socket === null || socket.destroyed || (req.destroyed && !req.complete);
}

/**
 * Whether the unread rest of the client's upload may be drained: its declared length is within
 * the bound (a chunked upload has none, so it may not).
 */
function drainable(req: IncomingMessage, maxDrainBytes: number): boolean {
  const length = req.headers['content-length'];
  return length !== undefined && Number(length) <= maxDrainBytes;
}

function discard(): void {}

/**
 * After the backend's answer (or failure), the upload the backend did not take: read and dropped
 * (within `maxDrainBytes`, so the connection serves the client's next request), or else the answer
 * closes the connection.
 */
function settleUpload(req: IncomingMessage, res: ServerResponse, maxDrainBytes: number): void {
  if (req.complete || req.destroyed) return;
  if (drainable(req, maxDrainBytes)) {
    req.on('data', discard);
    req.resume();
  } else if (!res.headersSent) {
    res.setHeader('Connection', 'close');
  }
}

/**
 * Notes a backend failure after the status line was sent: the answer can only be cut, and the
 * record must say that the backend failed (not that the client left).
 */
function noteBackendFailure(req: IncomingMessage, error: GatewayError): void {
  const definition = errorCatalogue[error.code];
  gatewayContext(req).error = {
    code: error.code,
    status: definition.status,
    gatewayStatus: definition.gatewayStatus,
    outcome: definition.outcome,
  };
  addDiagnostic(req, 'error', error.code, error.diagnostic ?? error.message);
}

function validatedTarget(check: OptionChecks, target: unknown): URL {
  let url: URL | undefined;
  try {
    url = new URL(String(target));
  } catch {
    // reported below
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    check.fail('target', `must be an http(s) URL, got ${JSON.stringify(String(target))}`);
  if (url.search !== '' || url.hash !== '') check.fail('target', 'must not have a query or fragment');
  return url;
}

/** What `createGateway` adds to a relay: the relay's span, and its API's backend metrics.  @internal */
export interface RelayObservability {
  /** The gateway's spans. */
  readonly tracing?: GatewayTracing | undefined;
  /** The backend's durations by status class. */
  readonly backend?: BackendObserver | undefined;
}

const RELAY_KEYS = optionKeys<RelayOptions>({
  target: true,
  dispatcher: true,
  timeoutMs: true,
  connectTimeoutMs: true,
  forwardedHeaders: true,
  trustProxy: true,
  keepUnderscoreHeaders: true,
  dropHeaders: true,
  resourceUrl: true,
  server: true,
  idHeaders: true,
  keepAliveTimeoutMs: true,
  maxDrainBytes: true,
});

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
  return observedRelay(options, {});
}

/** {@link createRelay} with `createGateway`'s spans and backend metrics.  @internal */
export function observedRelay(options: RelayOptions, observability: RelayObservability): Relay {
  const check = optionChecks('createRelay');
  check.object(options, '');
  check.known(options, '', RELAY_KEYS);
  const target = validatedTarget(check, options.target);
  const timeoutMs = check.positive(options.timeoutMs, 'timeoutMs', 30_000);
  const connectTimeoutMs = check.positive(options.connectTimeoutMs, 'connectTimeoutMs', 10_000);
  if (options.dispatcher !== undefined && typeof options.dispatcher?.dispatch !== 'function')
    check.fail('dispatcher', 'must be an undici Dispatcher');
  check.optionalFunction(options.resourceUrl, 'resourceUrl');
  const server = options.server === undefined ? undefined : check.headerValue(options.server, 'server', undefined, true);
  check.boolean(options.idHeaders, 'idHeaders', false);
  const ownDispatcher = options.dispatcher === undefined;
  const keepAliveTimeoutMs = check.positive(options.keepAliveTimeoutMs, 'keepAliveTimeoutMs', 4_000);
  const maxDrainBytes = check.nonNegative(options.maxDrainBytes, 'maxDrainBytes', 1_048_576, true);
  // keepAliveMaxTimeout caps the backend's `Keep-Alive: timeout=` hint (undici would otherwise keep
  // an idle connection for up to 10 minutes on a backend's word).
  const dispatcher =
    options.dispatcher ??
    new Agent({ connect: { timeout: connectTimeoutMs }, keepAliveTimeout: keepAliveTimeoutMs, keepAliveMaxTimeout: keepAliveTimeoutMs });
  const forwarded = check.boolean(options.forwardedHeaders, 'forwardedHeaders', true);
  const trust = compileTrust(options.trustProxy, check, 'trustProxy');
  const headerRules: BackendHeaderRules = {
    keepUnderscoreHeaders: check.boolean(options.keepUnderscoreHeaders, 'keepUnderscoreHeaders', false),
    dropped: droppedHeaders(check, options.dropHeaders),
  };
  const resourceUrl = options.resourceUrl ?? ((req: IncomingMessage) => req.url ?? '/');
  const origin = target.origin;
  // The backend's base path without its trailing slash; the resource path brings its own.
  const basePath = target.pathname.endsWith('/') ? target.pathname.slice(0, -1) : target.pathname;
  const backendLabel = `${origin}${basePath}`;

  const exchangeSettings: ExchangeSettings = {
    label: backendLabel,
    head(statusCode, backendHeaders, req) {
      const out = responseHeadersForClient(backendHeaders);
      // Added to the one object written with the status: when nothing was set on the response
      // before, Node validates and serializes it directly (no setHeader per header).
      addIdentityHead(out, gatewayContext(req), statusCode, server);
      // The backend answers before the upload is all read: past the drain bound, the connection
      // cannot serve another request, so the client is told now.
      if (!req.complete && req.headers['content-length'] !== undefined && !drainable(req, maxDrainBytes)) out.Connection = 'close';
      else if (!req.complete && req.headers['transfer-encoding'] !== undefined) out.Connection = 'close';
      return out;
    },
    failure: (err) => backendError(err, backendLabel),
    noteFailure: noteBackendFailure,
    settleUpload: (req, res) => settleUpload(req, res, maxDrainBytes),
    ended: ended(observability),
  };
  const tracing = observability.tracing;

  const relay = function relay(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const context = gatewayContext(req);
    // The one place the backend's request head is made: the client's headers as the chain left
    // them, cleaned, then the gateway's own (transaction id, proxy headers) over any copy.
    const headers = requestHeadersForBackend(req.headers, headerRules);
    headers['gateway-transaction-id'] = context.transactionId;
    // The record lists what the backend receives (forwardTokenHeaders recorded its own headers).
    context.outgoing.headers[TRANSACTION_ID_HEADER] = context.transactionId;
    if (forwarded) writeProxyHeaders(req, headers, trust);
    const resource = resourceUrl(req);
    const path = basePath + (resource.startsWith('/') ? resource : `/${resource}`);
    const body = requestBody(req, headers);
    // Checked now, as late as possible: a client that gave up during a slow introspection has had
    // its exchange recorded as aborted, and a DELETE sent for it now would run for nobody.
    if (exchangeOver(req, res)) {
      addDiagnostic(req, 'info', 'RELAY_SKIPPED', `not relayed to ${backendLabel}: the client closed the connection first`);
      return;
    }
    // The trace context the backend gets (the relay's span, or the client's as it came), recorded as sent.
    const span = tracing?.startRelay(context, req.method, target, path);
    const trace = traceHeadersFor(req, context, span);
    if (trace !== undefined) writeTraceHeaders(headers, context.outgoing.headers, trace);
    // What the backend receives, kept for the record when the request's recording asks for it.
    const message = startBackendMessage(context, target.host, headers);
    const requestCapture = message?.requestBody;
    if (requestCapture !== undefined && body !== null) {
      if (body instanceof ClientBody) body.capture = requestCapture;
      else requestCapture.add(body);
    }
    const exchange = new BackendExchange(req, res, next, exchangeSettings, body instanceof ClientBody, span, message?.responseBody);
    dispatcher.dispatch(
      {
        origin,
        path,
        method: req.method ?? 'GET',
        headers,
        // An AsyncIterable body is documented (undici's Dispatcher.md) but missing from its types.
        body: body as Readable | Buffer | null,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      exchange,
    );
  } as Relay;
  relay.close = async (): Promise<void> => {
    if (ownDispatcher) await dispatcher.close();
  };
  return relay;
}

/** The end of each backend exchange, when something watches them. */
function ended({ tracing, backend }: RelayObservability): ExchangeSettings['ended'] {
  if (tracing === undefined && backend === undefined) return undefined;
  return (exchange, error) => {
    backend?.done(error === undefined ? exchange.status : undefined, (performance.now() - exchange.started) / 1000);
    if (exchange.span !== undefined) endRelaySpan(exchange.span, exchange.status, error);
  };
}

/** `dropHeaders`, checked: lower-case names, `undefined` when none. */
function droppedHeaders(check: OptionChecks, given: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (given === undefined) return undefined;
  if (!Array.isArray(given)) check.fail('dropHeaders', 'must be an array of header names');
  const names = given.map((name: unknown, i) => check.headerName(name, `dropHeaders[${i}]`).toLowerCase());
  return names.length === 0 ? undefined : new Set(names);
}
