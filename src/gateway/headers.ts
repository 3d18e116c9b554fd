/**
 * Header hygiene for the relay: which headers stop at the gateway (RFC 9110 section 7.6.1) and
 * which the gateway owns, in both directions.
 *
 * @module
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

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
 * backend's own is sent) and `expect` (Node answers `100-continue` itself; undici refuses it).
 */
const REQUEST_DROPPED = new Set([...HOP_BY_HOP, 'host', 'expect']);

/**
 * Headers of the backend's response that the gateway replaces with its own: `server` and the
 * gateway's id headers (a backend must not be able to spoof them), besides hop-by-hop ones.
 */
const RESPONSE_DROPPED = new Set([...HOP_BY_HOP, 'server', 'gateway-transaction-id', 'gateway-message-id']);

/** Whether Node accepts `value` as a header value (RFC 9110 field-value characters: no controls but tab). */
export function isHeaderValue(value: string): boolean {
  return /^[\t\x20-\x7e\x80-\xff]*$/.test(value);
}

/** Names listed in a `Connection` header, which are hop-by-hop for that message too. */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const joined = Array.isArray(value) ? value.join(',') : value;
  const tokens = new Set<string>();
  for (const token of joined.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '' && name !== 'close' && name !== 'keep-alive') tokens.add(name);
  }
  return tokens.size > 0 ? tokens : undefined;
}

/**
 * The request headers to send to the backend: the client's (as edited by earlier middleware, for
 * example token forwarding) minus hop-by-hop and gateway-owned ones. Returns a new object.
 */
export function requestHeadersForBackend(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = connectionTokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    if (REQUEST_DROPPED.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
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
