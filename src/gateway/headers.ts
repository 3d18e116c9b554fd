/**
 * Header hygiene for the relay: which headers stop at the gateway (RFC 9110 section 7.6.1) and
 * which the gateway owns, in both directions.
 *
 * @module
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { isHeaderName } from '../options.js';
import type { TraceHeaders } from '../observability/trace-context.js';
import { withoutGatewayCookies } from '../operators/session-cookie.js';
import { SENDER_PROOF_HEADERS } from '../token/forward/request-edits.js';
import type { TrustFunction } from '../trust-proxy.js';

/** Hop-by-hop headers: meaningful for one connection only, never relayed (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/**
 * Headers of the client's request that the relay does not pass on: hop-by-hop ones, `host` (the
 * backend's own is sent), `expect` (Node answers `100-continue` itself; undici refuses it) and
 * the sender proofs (the DPoP proof: `forwardTokenHeaders` takes it off the request already; a
 * relay without it never sends it either).
 */
const REQUEST_DROPPED = new Set([...HOP_BY_HOP, 'host', 'expect', ...SENDER_PROOF_HEADERS]);

/**
 * Headers of the backend's response that the gateway replaces with its own: `server` and the
 * gateway's id headers (a backend must not be able to spoof them), besides hop-by-hop ones.
 */
const RESPONSE_DROPPED = new Set([...HOP_BY_HOP, 'server', 'gateway-transaction-id', 'gateway-message-id']);

const ONLY_PERSISTENCE = /^\s*(keep-alive|close)\s*$/i;

/** Names listed in a `Connection` header, which are hop-by-hop for that message too. */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  // The usual values list no header: no split, no set.
  if (value === undefined || (typeof value === 'string' && ONLY_PERSISTENCE.test(value))) return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  const tokens = new Set<string>();
  for (const token of joined.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '' && name !== 'close' && name !== 'keep-alive') tokens.add(name);
  }
  return tokens.size > 0 ? tokens : undefined;
}

/** The proxy headers the gateway writes itself from the connection. */
const PROXY_HEADERS = new Set(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'forwarded']);

/**
 * The W3C trace context headers: the gateway writes them itself from the exchange's trace (the
 * client's, validated, or the gateway's span's), so that an invalid one never reaches the backend.
 */
const TRACE_HEADERS = new Set(['traceparent', 'tracestate']);

/** What {@link requestHeadersForBackend} keeps of the client's headers. */
export interface BackendHeaderRules {
  /**
   * Keep client headers whose name has `_`. When dropped (the default, as nginx does), a backend
   * that maps `-` and `_` to one name (CGI, WSGI, PHP: `HTTP_GATEWAY_TOKEN_SUBJECT`) cannot be sent
   * a forged copy of a gateway header.
   */
  readonly keepUnderscoreHeaders: boolean;
  /** Client headers never relayed (lower-case names), such as a proxy's client certificate header. */
  readonly dropped?: ReadonlySet<string> | undefined;
}

/**
 * The request headers to send to the backend: the client's (as edited by earlier middleware, for
 * example token forwarding) minus hop-by-hop ones, names the client's `Connection` lists, names
 * with `_` (unless kept), the proxy headers, which only {@link writeProxyHeaders} writes (continuing
 * a trusted peer's), the trace context headers, which only {@link writeTraceHeaders} writes, and
 * the gateway's own cookies (an operator's session, sent by a browser to any port of the host):
 * the client's other cookies are kept as they came, and no `Cookie` header is left without one.
 * Returns a new object.
 */
export function requestHeadersForBackend(headers: IncomingHttpHeaders, rules: BackendHeaderRules): Record<string, string | string[]> {
  const listed = connectionTokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    if (REQUEST_DROPPED.has(name) || listed?.has(name) || rules.dropped?.has(name)) continue;
    if (!rules.keepUnderscoreHeaders && name.includes('_')) continue;
    if (PROXY_HEADERS.has(name) || TRACE_HEADERS.has(name)) continue;
    const value = name === 'cookie' ? clientCookies(headers.cookie) : headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The client's `Cookie` header(s) without the gateway's own cookies; `undefined` when none is left. */
function clientCookies(value: string | string[] | undefined): string | string[] | undefined {
  if (typeof value === 'string') return withoutGatewayCookies(value);
  if (value === undefined) return undefined;
  // Only a middleware writes an array here (Node joins repeated Cookie headers into one string).
  const kept = value.flatMap((one) => withoutGatewayCookies(one) ?? []);
  return kept.length === 0 ? undefined : kept;
}

/**
 * Writes `X-Forwarded-For`, `X-Forwarded-Host`, `X-Forwarded-Proto` and `Forwarded` (RFC 7239) for
 * the backend from the connection. The client's own copies are continued only when the peer is
 * trusted (`trust(address, 0)`); otherwise they were dropped and the chain starts here.
 */
export function writeProxyHeaders(req: IncomingMessage, out: Record<string, string | string[]>, trust: TrustFunction): void {
  const remote = req.socket.remoteAddress;
  const proto = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
  const host = req.headers.host;
  const trusted = remote !== undefined && trust(remote, 0);
  const sent = req.headers;
  const prior = (name: string): string | undefined => {
    const value = trusted ? sent[name] : undefined;
    return value === undefined ? undefined : Array.isArray(value) ? value.join(', ') : value;
  };
  const priorFor = prior('x-forwarded-for');
  if (remote !== undefined) out['x-forwarded-for'] = priorFor === undefined ? remote : `${priorFor}, ${remote}`;
  const forwardedHost = prior('x-forwarded-host') ?? host;
  if (forwardedHost !== undefined) out['x-forwarded-host'] = forwardedHost;
  out['x-forwarded-proto'] = prior('x-forwarded-proto') ?? proto;
  // Node's parser already refused a Host with control characters; quoting is all it needs.
  let element = remote === undefined ? '' : `for=${forwardedNode(remote)};`;
  if (host !== undefined) element += `host=${quoted(host)};`;
  element += `proto=${proto}`;
  const priorForwarded = prior('forwarded');
  out.forwarded = priorForwarded === undefined ? element : `${priorForwarded}, ${element}`;
}

/**
 * Writes `traceparent` (and `tracestate`) for the backend, and the same values into `recorded`, the
 * headers the record lists as sent.
 */
export function writeTraceHeaders(out: Record<string, string | string[]>, recorded: Record<string, string>, trace: TraceHeaders): void {
  out.traceparent = recorded.traceparent = trace.traceparent;
  if (trace.tracestate !== undefined) out.tracestate = recorded.tracestate = trace.tracestate;
}

/** A node of RFC 7239: IPv6 addresses quoted and bracketed. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

function quoted(value: string): string {
  return isHeaderName(value) ? value : `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * The response headers to relay to the client: the backend's minus hop-by-hop and gateway-owned
 * ones. Returns a new object.
 */
export function responseHeadersForClient(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionTokens(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (RESPONSE_DROPPED.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
