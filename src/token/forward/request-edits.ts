/**
 * In-place edits of the incoming request before it is relayed: headers a client could spoof or
 * that carry the token, the `access_token` URL and form parameters, and what the client's
 * `Connection` header lists. Both `req.headers` and `req.rawHeaders` are edited: relays copy one
 * or the other.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayContext } from '../../context.js';
import { removeFormParameter, removeQueryParameter } from '../../url/parameters.js';

/** The `Authorization` schemes that carry an access token: Bearer (RFC 6750) and DPoP (RFC 9449). */
const TOKEN_SCHEME = /^\s*(?:bearer|dpop)(\s|$)/i;

/** Whether an `Authorization` value carries an access token: the Bearer or the DPoP scheme. */
export function isTokenCredential(value: string): boolean {
  return TOKEN_SCHEME.test(value);
}

/**
 * Headers that prove possession of a sender-constrained token: the DPoP proof (RFC 9449), bound to
 * the gateway's public URL and single-use, which a backend could replay. Never relayed.
 */
export const SENDER_PROOF_HEADERS: ReadonlySet<string> = new Set(['dpop']);

/** Removes `access_token` from a URL property of the request, writing it only when it changes. */
export function stripTokenParameter<K extends 'url' | 'originalUrl'>(req: { [P in K]?: string }, property: K): void {
  const url = req[property] ?? '/';
  const stripped = removeQueryParameter(url, 'access_token');
  if (stripped !== url) req[property] = stripped;
}

/** Which request headers to remove: `mayDrop` is a quick pre-check on the name as is, `drop` decides (lower-case name, value). */
export interface HeaderFilter {
  mayDrop(name: string): boolean;
  drop(lowerName: string, value: string): boolean;
}

/** The lower-cased first character of a name (ASCII letters; other characters as they are). */
export function firstLetter(name: string): number {
  const code = name.charCodeAt(0);
  return code >= 65 && code <= 90 ? code + 32 : code;
}

/**
 * Removes headers from `req.headers` and `req.rawHeaders` (http-proxy and some handlers copy one,
 * some the other).
 */
export function stripHeaders(req: IncomingMessage, filter: HeaderFilter): void {
  const headers = req.headers;
  for (const name in headers) {
    if (!filter.mayDrop(name)) continue;
    const value = headers[name];
    if (filter.drop(name.toLowerCase(), typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : ''))
      delete headers[name];
  }
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) return;
  // Compacted in place: kept pairs move down over the dropped ones.
  let kept = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    if (filter.mayDrop(name) && filter.drop(name.toLowerCase(), value)) continue;
    if (kept !== i) {
      raw[kept] = name;
      raw[kept + 1] = value;
    }
    kept += 2;
  }
  if (kept !== raw.length) raw.length = kept;
}

/**
 * Removes the headers the client's `Connection` header lists (hop-by-hop for this message, RFC 9110
 * 7.6.1) and leaves only `close`/`keep-alive` in it, before the gateway adds its own: a client
 * listing `gateway-token-subject` must not make a relay drop the gateway's header after the record
 * listed it as sent.
 */
const ONLY_PERSISTENCE = /^\s*(keep-alive|close)\s*$/i;

export function stripConnectionListed(req: IncomingMessage): void {
  const connection = req.headers.connection;
  // The usual values list no header: no split, no set.
  if (connection === undefined || ONLY_PERSISTENCE.test(connection)) return;
  const listed = new Set<string>();
  const kept: string[] = [];
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === 'close' || name === 'keep-alive') kept.push(name);
    else if (name !== '') listed.add(name);
  }
  if (listed.size === 0) return;
  // `connection` itself is one of the names that may be dropped here, and is set again below.
  stripHeaders(req, { mayDrop: () => true, drop: (lower) => listed.has(lower) || lower === 'connection' });
  if (kept.length > 0) {
    req.headers.connection = kept.join(', ');
    setRawHeader(req, 'Connection', req.headers.connection);
  }
}

/** Replaces every `rawHeaders` entry of `name` by one. */
export function setRawHeader(req: IncomingMessage, name: string, value: string): void {
  const lower = name.toLowerCase();
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) return;
  for (let i = raw.length - 2; i >= 0; i -= 2) if ((raw[i] as string).toLowerCase() === lower) raw.splice(i, 2);
  raw.push(name, value);
}

/**
 * Takes `access_token` out of a form body that `requireToken` buffered (`req.gateway.rawBody`,
 * also `req.rawBody`), which is what a relay sends instead of the consumed stream, and out of a
 * parsed `req.body` (what `http-proxy-middleware`'s `fixRequestBody` re-serializes).
 */
export function stripBodyToken(req: IncomingMessage, gateway: GatewayContext): void {
  const withBody = req as IncomingMessage & { rawBody?: unknown; body?: unknown };
  const raw = gateway.rawBody ?? (Buffer.isBuffer(withBody.rawBody) ? withBody.rawBody : undefined);
  if (raw !== undefined) {
    const form = raw.toString('latin1');
    const stripped = removeFormParameter(form, 'access_token');
    if (stripped !== form) {
      const body = Buffer.from(stripped, 'latin1');
      gateway.rawBody = body;
      withBody.rawBody = body;
      req.headers['content-length'] = String(body.length);
      setRawHeader(req, 'Content-Length', String(body.length));
    }
  }
  if (withBody.body !== null && typeof withBody.body === 'object' && Object.hasOwn(withBody.body, 'access_token')) {
    delete (withBody.body as Record<string, unknown>).access_token;
  }
}
