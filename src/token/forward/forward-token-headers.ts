/**
 * `forwardTokenHeaders`: puts the token information on the request relayed to the backend and
 * takes the token, and anything a client could use to spoof token information, off it.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { CompactSign } from 'jose';
import type { KeyInput } from 'jose';
import { gatewayContext } from '../../context.js';
import type { GatewayContext, Middleware, TokenContext } from '../../context.js';
import { optionChecks, type OptionChecks } from '../../options.js';
import { memoPerToken, REDACTED } from '../shared.js';
import { GatewayError } from '../../errors.js';
import { collectItems, defaultForwardedHeaderNames, headerValue, itemsDocument } from './items.js';
import type { ForwardDateFormat, ForwardedItem, ForwardedValue } from './items.js';
import { appendQueryParameter, removeFormParameter, removeQueryParameter } from '../../url.js';

/** How the collected token information travels: one header per item, a base64 JSON, or a signed JWT. */
export type ForwardInfoMode = 'headers' | 'json' | 'jws';

/**
 * Whether and how the original token is passed on as well:
 * - `asReceived`: the way the client sent it (header, query or form body);
 * - `authorizationHeader`: as `Authorization: Bearer <token>`;
 * - `query`: as the `access_token` URL parameter;
 * - `{ header: name }`: as the bare value of a custom header.
 */
export type OriginalTokenMode =
  | 'asReceived'
  | 'authorizationHeader'
  | 'query'
  | {
      /** Name of the header that carries the bare token, for example `X-Access-Token`. */
      header: string;
    };

/** The signing key of `jws` mode. */
export interface ForwardJwsOptions {
  /** Private key or shared secret: `CryptoKey`, `KeyObject`, JWK or bytes (anything `jose` signs with). */
  key: KeyInput;
  /** JWS algorithm, for example `RS256`, `ES256`, `EdDSA`, `HS256`. */
  alg: string;
  /** `kid` of the protected header, so the backend can pick the verification key. */
  kid?: string;
}

/** Options of {@link forwardTokenHeaders}. */
export interface ForwardTokenHeadersOptions {
  /** Collected-information mode(s). Default `headers`. `[]` forwards no token information. */
  mode?: ForwardInfoMode | readonly ForwardInfoMode[];
  /**
   * Pass the original token on as well. Default `false`: the backend never sees it. `'none'`, the
   * configuration file's spelling, is the same as `false`.
   */
  originalToken?: OriginalTokenMode | 'none' | false;
  /** Signing key of `jws` mode (required with it). */
  jws?: ForwardJwsOptions;
  /** Date format of `Expire`, `IssuedAt`, `NotToBeUsedBefore` in every mode. Default `iso`. */
  dateFormat?: ForwardDateFormat;
  /** Header names of `headers` mode, replacing the defaults item by item. */
  headerNames?: Partial<Record<ForwardedItem, string>>;
  /** Header of `json` mode. Default `Gateway-Token`. */
  jsonHeader?: string;
  /** Header of `jws` mode. Default `Gateway-JWT`. */
  jwsHeader?: string;
  /**
   * Header carrying the transaction id to the backend; `false` for none. Default
   * `Gateway-Transaction-ID`. `createRelay` sends `Gateway-Transaction-ID` itself: `false` leaves it
   * the only one to set it (as `createGateway` does); with the default both set the same value.
   */
  transactionIdHeader?: string | false;
}

/**
 * Token forwarding (spec 4.2 step 4, docs/forwarding.md). Edits the incoming request in place
 * so that whatever relays it (`createGateway`'s relay, `http-proxy-middleware`, your own handler
 * copying `req.headers` and `req.url`) sends the right thing:
 *
 * 1. removes every client-sent `Gateway-*` header and every header this middleware may set (from
 *    `req.headers` and `req.rawHeaders`), so a client cannot spoof token information;
 * 2. removes the token: a `Bearer` `Authorization` header and the `access_token` URL parameter
 *    (from `req.url` and `req.originalUrl`); a form-body token is left in the body (see
 *    `docs/forwarding.md`);
 * 3. sets `Gateway-Transaction-ID` and the token information (`headers`: `Gateway-Token-Subject`,
 *    `-Issuer`, …; `json`: base64 JSON in `Gateway-Token`; `jws`: a compact JWS in `Gateway-JWT`);
 * 4. puts the original token back if `originalToken` says so;
 * 5. records every header it set in `req.gateway.outgoing.headers` (token values redacted).
 *
 * Put it after `introspect` and before the relay. Without a token (no `requireToken` before it) it
 * still strips spoofed headers and the `access_token` parameter, and sets the transaction id.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createProxyMiddleware } from 'http-proxy-middleware';
 * import { forwardTokenHeaders } from 'express-access-gateway';
 *
 * const app = express();
 * // ... requireToken(...), introspect(...) before it
 * app.use('/api', forwardTokenHeaders({ mode: 'headers' }), createProxyMiddleware({ target: 'http://127.0.0.1:9001' }));
 * ```
 */
export function forwardTokenHeaders(options: ForwardTokenHeadersOptions = {}): Middleware {
  const check = optionChecks('forwardTokenHeaders');
  check.object(options, '');
  const modeList: readonly unknown[] = options.mode === undefined ? ['headers'] : typeof options.mode === 'string' ? [options.mode] : options.mode;
  if (!Array.isArray(modeList) && typeof options.mode !== 'string') check.fail('mode', 'must be headers, json, jws or an array of them');
  const modes = new Set<ForwardInfoMode>(modeList.map((mode, i) => check.oneOf(mode, Array.isArray(options.mode) ? `mode[${i}]` : 'mode', FORWARD_INFO_MODES)));
  const originalToken = originalTokenMode(options.originalToken, check);
  const jws = options.jws;
  if (modes.has('jws')) {
    if (jws === undefined || jws === null || jws.key === undefined || typeof jws.alg !== 'string' || jws.alg === '' || jws.alg === 'none') {
      check.fail('jws', 'must give a signing key and an alg (not none) for jws mode');
    }
  }
  const dateFormat = options.dateFormat ?? 'iso';
  if (typeof dateFormat !== 'function' && !(DATE_FORMATS as readonly string[]).includes(dateFormat)) {
    check.fail('dateFormat', `must be ${DATE_FORMATS.join(', ')} or a function`);
  }
  if (options.headerNames !== undefined) check.object(options.headerNames, 'headerNames');
  const headerNames: Record<ForwardedItem, string> = { ...defaultForwardedHeaderNames, ...options.headerNames };
  for (const item of Object.keys(headerNames)) check.headerName(headerNames[item as ForwardedItem], `headerNames.${item}`);
  const jsonHeader = check.headerName(options.jsonHeader, 'jsonHeader', 'Gateway-Token');
  const jwsHeader = check.headerName(options.jwsHeader, 'jwsHeader', 'Gateway-JWT');
  const transactionIdHeader = options.transactionIdHeader === false ? false : check.headerName(options.transactionIdHeader, 'transactionIdHeader', 'Gateway-Transaction-ID');
  // Every name this middleware may set is stripped from what the client sent, whatever the mode.
  const spoofable = new Set(
    [...Object.values(headerNames), jsonHeader, jwsHeader, ...(transactionIdHeader ? [transactionIdHeader] : [])].map((n) => n.toLowerCase()),
  );
  if (typeof originalToken === 'object') spoofable.add(originalToken.header.toLowerCase());
  // `_` and `-` compare equal: CGI/WSGI backends read `Gateway_Token_Subject` as `Gateway-Token-Subject`.
  const isSpoofable = (lowerName: string): boolean => {
    const name = lowerName.includes('_') ? lowerName.replaceAll('_', '-') : lowerName;
    return name.startsWith('gateway-') || spoofable.has(name);
  };
  const dropHeader = (lower: string, value: string): boolean => isSpoofable(lower) || (lower === 'authorization' && isBearer(value));
  // The first letters (lower-cased) of every name that may be dropped: most headers are passed
  // over on their first character, without lower-casing their name.
  const dropFirst = new Set([...spoofable, 'gateway-', 'authorization'].map(firstLetter));
  const strip: HeaderFilter = { mayDrop: (name) => dropFirst.has(firstLetter(name)), drop: dropHeader };
  // Names this middleware sets, lower-cased once. When they are all distinct, each one was just
  // stripped from rawHeaders, so setting it is a plain append (no scan of rawHeaders per header).
  const configuredNames = [
    ...Object.values(headerNames),
    jsonHeader,
    jwsHeader,
    ...(transactionIdHeader ? [transactionIdHeader] : []),
    ...(typeof originalToken === 'object' ? [originalToken.header] : []),
  ];
  const lowerNames = new Map(configuredNames.map((n) => [n, n.toLowerCase()]));
  const appendable: ReadonlySet<string> = new Set(lowerNames.values()).size === configuredNames.length ? spoofable : new Set();
  const lowerOf = (name: string): string => lowerNames.get(name) ?? name.toLowerCase();
  // What the token alone decides (the items and their header entries, but the per-request
  // processTime), once per cached token result. Not with a dateFormat function: it is called
  // for every request, as documented.
  const memoizable = typeof dateFormat !== 'function';

  /** One header to set: its name, lower-case name, value, and the value recorded (token redacted). */
  function entry(name: string, value: string, raw: string | undefined): HeaderEntry {
    return [name, lowerOf(name), value, raw !== undefined && raw !== '' && value.includes(raw) ? value.replace(raw, REDACTED) : value];
  }

  function tokenForward(token: TokenContext | undefined): TokenForward {
    const items = collectItems(token, dateFormat);
    items.delete('processTime');
    const headers: HeaderEntry[] = [];
    if (modes.has('headers')) for (const [item, value] of items) headers.push(entry(headerNames[item], headerValue(value), token?.raw));
    return { items, headers };
  }

  const tokenForwardOf = memoizable ? memoPerToken(tokenForward) : tokenForward;

  function prepare(req: IncomingMessage, gateway: GatewayContext): HeaderEntry[] {
    stripHeaders(req, strip);
    stripConnectionListed(req);
    const withOriginal = req as IncomingMessage & { originalUrl?: string };
    stripTokenParameter(req, 'url');
    if (typeof withOriginal.originalUrl === 'string') stripTokenParameter(withOriginal, 'originalUrl');
    if (gateway.token?.method === 'body' && originalToken !== 'asReceived') stripBodyToken(req, gateway);
    const set: HeaderEntry[] = [];
    if (transactionIdHeader) set.push(entry(transactionIdHeader, gateway.transactionId, gateway.token?.raw));
    return set;
  }

  function putOriginalToken(req: IncomingMessage, gateway: GatewayContext, set: HeaderEntry[]): void {
    const token = gateway.token;
    if (originalToken === false || token === undefined) return;
    const mode = originalToken === 'asReceived' ? { header: 'authorizationHeader', query: 'query', body: 'body' }[token.method] : originalToken;
    if (mode === 'authorizationHeader') set.push(entry('Authorization', `Bearer ${token.raw}`, token.raw));
    else if (mode === 'query') req.url = appendQueryParameter(req.url ?? '/', 'access_token', token.raw);
    else if (typeof mode === 'object') set.push(entry(mode.header, token.raw, token.raw));
    // 'body': the form body still holds it, nothing to put back.
  }

  return function forwardTokenHeadersMiddleware(req, _res, next): void {
    const gateway = gatewayContext(req);
    let set: HeaderEntry[];
    let items: Map<ForwardedItem, ForwardedValue>;
    try {
      set = prepare(req, gateway);
      const token = gateway.token;
      const forward = tokenForwardOf(token);
      const processTime = token?.processTimeMs;
      items = forward.items;
      if (processTime !== undefined && (modes.has('json') || modes.has('jws'))) {
        items = new Map(items);
        items.set('processTime', processTime);
      }
      if (modes.has('headers')) {
        for (const header of forward.headers) set.push(header);
        if (processTime !== undefined) set.push(entry(headerNames.processTime, headerValue(processTime), token?.raw));
      }
      if (modes.has('json')) set.push(entry(jsonHeader, Buffer.from(JSON.stringify(itemsDocument(gateway.transactionId, items))).toString('base64'), token?.raw));
      putOriginalToken(req, gateway, set);
    } catch (cause) {
      next(new GatewayError('ERR_INTERNAL', { diagnostic: `token forwarding failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause }));
      return;
    }
    if (!modes.has('jws') || jws === undefined) {
      finish(req, gateway, set);
      next();
      return;
    }
    const header = { alg: jws.alg, typ: 'JWT', ...(jws.kid === undefined ? {} : { kid: jws.kid }) };
    new CompactSign(Buffer.from(JSON.stringify(itemsDocument(gateway.transactionId, items))))
      .setProtectedHeader(header)
      .sign(jws.key)
      .then(
        (jwt) => {
          set.push(entry(jwsHeader, jwt, gateway.token?.raw));
          finish(req, gateway, set);
          next();
        },
        (cause: unknown) => {
          // Fail closed: the backend must not get a request without the token information it relies on.
          next(new GatewayError('ERR_INTERNAL', { diagnostic: `token forwarding: signing the JWS failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause }));
        },
      );
  };

  function finish(req: IncomingMessage, gateway: GatewayContext, set: readonly HeaderEntry[]): void {
    const raw = Array.isArray(req.rawHeaders) ? req.rawHeaders : undefined;
    const recorded = gateway.outgoing.headers;
    for (const [name, lower, value, recordedValue] of set) {
      req.headers[lower] = value;
      if (raw !== undefined && appendable.has(lower)) raw.push(name, value);
      else setRawHeader(req, name, value);
      recorded[name] = recordedValue;
    }
  }
}

/** A header to set: name, lower-case name, value, value as recorded (the token redacted). */
type HeaderEntry = readonly [name: string, lower: string, value: string, recorded: string];

/** What the token alone decides: the forwarded items but `processTime`, and their header entries. */
interface TokenForward {
  readonly items: Map<ForwardedItem, ForwardedValue>;
  readonly headers: readonly HeaderEntry[];
}

/**
 * Takes `access_token` out of a form body that `requireToken` buffered (`req.gateway.rawBody`,
 * also `req.rawBody`), which is what a relay sends instead of the consumed stream, and out of a
 * parsed `req.body` (what `http-proxy-middleware`'s `fixRequestBody` re-serializes).
 */
function stripBodyToken(req: IncomingMessage, gateway: GatewayContext): void {
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

const FORWARD_INFO_MODES: readonly ForwardInfoMode[] = ['headers', 'json', 'jws'];
const DATE_FORMATS = ['iso', 'epoch', 'epochMillis', 'http'] as const;
const ORIGINAL_TOKEN_MODES = ['asReceived', 'authorizationHeader', 'query'] as const;

/**
 * The `originalToken` option: `false` or `'none'` (the configuration file's spelling) for none, a
 * mode, or `{ header }`.
 */
function originalTokenMode(value: ForwardTokenHeadersOptions['originalToken'], check: OptionChecks): OriginalTokenMode | false {
  if (value === undefined || value === false || value === 'none') return false;
  if (typeof value === 'object' && value !== null) {
    check.headerName(value.header, 'originalToken.header');
    return { header: value.header };
  }
  if (typeof value === 'string' && (ORIGINAL_TOKEN_MODES as readonly string[]).includes(value)) return value as (typeof ORIGINAL_TOKEN_MODES)[number];
  return check.fail('originalToken', 'must be false, none, asReceived, authorizationHeader, query or { header: <name> }');
}

const BEARER = /^\s*bearer(\s|$)/i;

function isBearer(value: string): boolean {
  return BEARER.test(value);
}

/** Removes `access_token` from a URL property of the request, writing it only when it changes. */
function stripTokenParameter<K extends 'url' | 'originalUrl'>(req: { [P in K]?: string }, property: K): void {
  const url = req[property] ?? '/';
  const stripped = removeQueryParameter(url, 'access_token');
  if (stripped !== url) req[property] = stripped;
}

/** Which request headers to remove: `mayDrop` is a quick pre-check on the name as is, `drop` decides (lower-case name, value). */
interface HeaderFilter {
  mayDrop(name: string): boolean;
  drop(lowerName: string, value: string): boolean;
}

/** The lower-cased first character of a name (ASCII letters; other characters as they are). */
function firstLetter(name: string): number {
  const code = name.charCodeAt(0);
  return code >= 65 && code <= 90 ? code + 32 : code;
}

/**
 * Removes headers from `req.headers` and `req.rawHeaders` (http-proxy and some handlers copy one,
 * some the other).
 */
function stripHeaders(req: IncomingMessage, filter: HeaderFilter): void {
  const headers = req.headers;
  for (const name in headers) {
    if (!filter.mayDrop(name)) continue;
    const value = headers[name];
    if (filter.drop(name.toLowerCase(), typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : '')) delete headers[name];
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

function stripConnectionListed(req: IncomingMessage): void {
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
function setRawHeader(req: IncomingMessage, name: string, value: string): void {
  const lower = name.toLowerCase();
  const raw = req.rawHeaders;
  if (!Array.isArray(raw)) return;
  for (let i = raw.length - 2; i >= 0; i -= 2) if ((raw[i] as string).toLowerCase() === lower) raw.splice(i, 2);
  raw.push(name, value);
}
