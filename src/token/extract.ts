/**
 * RFC 6750 section 2: finds the bearer token of a request in the `Authorization` header, the
 * urlencoded form body or the query string (and, for a token policy with DPoP on, the token of
 * `Authorization: DPoP`, RFC 9449 section 7.1), rejects ambiguous or malformed requests, and puts the
 * token found on the request's context. The token lookup of `requireToken` and `introspect`.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { addDiagnostic, createTokenContext, gatewayContext, type TokenMethod } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import type { OptionChecks } from '../options.js';
import { formTokens, isUrlencoded, type FormBounds } from './body.js';
import type { TokenPolicy } from './policy.js';

const log = logger('token');

/** A token found in a request. */
export interface ExtractedToken {
  raw: string;
  method: TokenMethod;
  /** `DPoP` for `Authorization: DPoP <token>` (RFC 9449 section 7.1). */
  scheme?: 'DPoP';
}

/** What {@link extractToken} needs to know. */
export interface ExtractOptions {
  /** Realm of the challenges (the token policy name). */
  realm: string | undefined;
  /** Methods accepted. */
  methods: ReadonlySet<TokenMethod>;
  /** Bounds of a urlencoded body read to look for `access_token` (one object, built at factory time). */
  form: FormBounds;
  /** Longest token accepted, in characters, whatever the method. */
  maxTokenLength: number;
  /** Whether `Authorization: DPoP <token>` is accepted too (the token policy has DPoP on). */
  dpop: boolean;
}

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** An `Authorization` value of the Bearer scheme (case-insensitive, RFC 9110 11.1), whatever follows it. */
export const BEARER_SCHEME = /^\s*bearer(\s|$)/i;
const BEARER_CREDENTIALS = /^\s*bearer(?:\s+(.*))?$/is;
/** An `Authorization` value of the DPoP scheme (RFC 9449 section 7.1), case-insensitive. */
const DPOP_SCHEME = /^\s*dpop(\s|$)/i;
const DPOP_CREDENTIALS = /^\s*dpop(?:\s+(.*))?$/is;

/** Whether an `Authorization` header value uses the Bearer scheme (it carries a token). */
export function isBearer(value: string): boolean {
  return BEARER_SCHEME.test(value);
}
// Body and query values are form-decoded, so any visible ASCII character may appear; nothing else.
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
// Methods whose body RFC 6750 section 2.2 allows the token in (never GET; HEAD has no body).
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

function malformed(realm: string | undefined, diagnostic: string): GatewayError {
  return new GatewayError('ERR_TOKEN_MALFORMED', { realm, diagnostic });
}

/** Whether a raw header name is `Authorization`, in any case (without lower-casing the usual spellings). */
function isAuthorizationName(name: string): boolean {
  return name.length === 13 && (name === 'Authorization' || name === 'authorization' || name.toLowerCase() === 'authorization');
}

/** A token of the `Authorization` header and its scheme. */
interface HeaderToken {
  value: string;
  scheme: 'Bearer' | 'DPoP';
}

/**
 * The token of the `Authorization` header (Bearer, or DPoP when `dpop`), `undefined` when the
 * header is absent or of another scheme.
 */
function headerToken(req: IncomingMessage, realm: string | undefined, maxLength: number, dpop: boolean): HeaderToken | undefined {
  // Every Authorization line as sent: Node keeps only the first in `req.headers`.
  const raw = req.rawHeaders;
  let lines = 0;
  let ours: string | undefined;
  let count = 0;
  let scheme: HeaderToken['scheme'] = 'Bearer';
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!isAuthorizationName(raw[i]!)) continue;
    lines++;
    const value = raw[i + 1]!;
    if (BEARER_SCHEME.test(value)) {
      count++;
      ours = value;
      scheme = 'Bearer';
    } else if (dpop && DPOP_SCHEME.test(value)) {
      count++;
      ours = value;
      scheme = 'DPoP';
    }
  }
  if (lines === 0) return undefined;
  if (lines > 1) {
    if (count > 0) throw malformed(realm, `${lines} Authorization headers in one request`);
    return undefined;
  }
  if (ours === undefined) return undefined; // another scheme (Basic, ...): not ours
  const match = (scheme === 'Bearer' ? BEARER_CREDENTIALS : DPOP_CREDENTIALS).exec(ours);
  const credentials = match?.[1]?.trim() ?? '';
  if (credentials === '') throw malformed(realm, `Authorization: ${scheme} without a token`);
  if (credentials.length > maxLength) throw malformed(realm, `Authorization: ${scheme} token longer than ${maxLength} characters`);
  if (!B64TOKEN.test(credentials)) {
    throw malformed(realm, `Authorization: ${scheme} value does not match the b64token syntax of RFC 6750`);
  }
  return { value: credentials, scheme };
}

function single(values: string[], where: string, options: ExtractOptions): string | undefined {
  if (values.length === 0) return undefined;
  const { realm, maxTokenLength } = options;
  if (values.length > 1) throw malformed(realm, `access_token appears ${values.length} times in the ${where}`);
  const value = values[0]!;
  if (value === '') throw malformed(realm, `empty access_token in the ${where}`);
  // Refused here, as the client's error: sent on, the authorization server may refuse the
  // request itself, which the gateway would then take for an outage (503).
  if (value.length > maxTokenLength) throw malformed(realm, `access_token in the ${where} longer than ${maxTokenLength} characters`);
  if (!VISIBLE_ASCII.test(value)) throw malformed(realm, `access_token in the ${where} has characters outside visible ASCII`);
  return value;
}

/** No values (shared: never modified). */
const NONE: string[] = [];

function queryValues(req: IncomingMessage): string[] {
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const question = url.indexOf('?');
  if (question < 0) return NONE;
  // Parsed here rather than through req.query, whose parser differs between Express 4 and 5.
  return new URLSearchParams(url.slice(question + 1)).getAll('access_token');
}

/**
 * Finds the request's bearer token. Returns `undefined` when there is none; throws a
 * {@link GatewayError} (`ERR_TOKEN_MULTIPLE_METHODS`, `ERR_TOKEN_MALFORMED`,
 * `ERR_REQUEST_TOO_LARGE`, `ERR_BAD_REQUEST`) when the request is ambiguous or malformed (the
 * promise rejects with it when the body had to be read).
 *
 * Synchronous unless the token may be in a form body that has to be read first: most requests
 * (a header token, any GET) are answered without a promise.
 */
export function extractToken(
  req: IncomingMessage,
  options: ExtractOptions,
): ExtractedToken | undefined | Promise<ExtractedToken | undefined> {
  const { realm, methods } = options;
  const header = methods.has('header') ? headerToken(req, realm, options.maxTokenLength, options.dpop) : undefined;
  const query = methods.has('query') ? single(queryValues(req), 'query string', options) : undefined;
  // The body is read only when it can carry the token: method enabled, a method whose body RFC 6750 allows it in, urlencoded.
  if (methods.has('body') && BODY_METHODS.has(req.method ?? '') && isUrlencoded(req)) {
    return formTokens(req, options.form).then((values) => onlyOne(header, query, single(values, 'form body', options), realm));
  }
  return onlyOne(header, query, undefined, realm);
}

/** The one token found, by method; `ERR_TOKEN_MULTIPLE_METHODS` when there are several. */
function onlyOne(
  header: HeaderToken | undefined,
  query: string | undefined,
  body: string | undefined,
  realm: string | undefined,
): ExtractedToken | undefined {
  const count = (header === undefined ? 0 : 1) + (query === undefined ? 0 : 1) + (body === undefined ? 0 : 1);
  if (count > 1) {
    const methods: TokenMethod[] = [];
    if (header !== undefined) methods.push('header');
    if (query !== undefined) methods.push('query');
    if (body !== undefined) methods.push('body');
    throw new GatewayError('ERR_TOKEN_MULTIPLE_METHODS', {
      realm,
      diagnostic: `token sent with more than one method: ${methods.join(', ')}`,
    });
  }
  if (header !== undefined)
    return header.scheme === 'DPoP' ? { raw: header.value, method: 'header', scheme: 'DPoP' } : { raw: header.value, method: 'header' };
  if (query !== undefined) return { raw: query, method: 'query' };
  if (body !== undefined) return { raw: body, method: 'body' };
  return undefined;
}

/** Options of `requireToken` (those that find the token are also `introspect`'s `extraction`). */
export interface RequireTokenOptions {
  /**
   * The token policy (or just its name): its name is the realm of the `WWW-Authenticate` challenges
   * and is recorded on `req.gateway.token.policy`.
   */
  policy?: TokenPolicy | string;
  /** Where the token may be sent. Default all of RFC 6750: `['header', 'body', 'query']`. */
  methods?: TokenMethod[];
  /**
   * Largest `application/x-www-form-urlencoded` body read to look for `access_token`, in bytes.
   * Larger bodies are refused with 413 (`ERR_REQUEST_TOO_LARGE`). Default 1 MiB.
   */
  maxBodySize?: number;
  /**
   * Most fields of an `application/x-www-form-urlencoded` body read to look for `access_token`
   * (as body-parser's `parameterLimit`). A body with more is refused with 413
   * (`ERR_REQUEST_TOO_LARGE`) before it is parsed. Default 1000.
   */
  maxBodyFields?: number;
  /**
   * Longest token accepted, in characters, in the header, the body or the query. A longer one is
   * refused with 400 `invalid_request` (`ERR_TOKEN_MALFORMED`) and never sent to the authorization
   * server. Default 16384 (16 KiB, Node's default limit of all request headers together, so no
   * token that could come in a header is refused in a body).
   */
  maxTokenLength?: number;
  /**
   * Longest time, in milliseconds, an `application/x-www-form-urlencoded` body read to look for
   * `access_token` may take to arrive, from the moment its reading starts. Past it the request is
   * answered 400 (`ERR_BAD_REQUEST`) and its connection closed, the rest of the body unread: a
   * client that sends a byte every few seconds is answered then, not at the server's
   * `requestTimeout`. Default 10000. At most 2147483647.
   */
  bodyTimeoutMs?: number;
  /**
   * Most form bodies of one client address read at once to look for `access_token` (counted per
   * token policy: the middleware given one `TokenPolicy` share the count). One more is answered
   * at once with 429 (`ERR_INSTANCE_BUSY`, `Retry-After: 1`) and its connection closed, its body
   * unread. Default 16.
   */
  maxBodyReadsPerAddress?: number;
  /**
   * The client's address, for `maxBodyReadsPerAddress`. Default: the connection's peer
   * (`req.socket.remoteAddress`). Behind a reverse proxy every caller has the proxy's address:
   * give the caller's here (as `createGateway` does with `trustProxy`'s).
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
}

/** Every place RFC 6750 lets a token be sent: the default of `requireToken`.  @internal */
export const ALL_METHODS: readonly TokenMethod[] = ['header', 'body', 'query'];

/** The longest timer Node keeps (a longer one fires at once). */
const LONGEST_TIMER_MS = 2_147_483_647;

const peerAddress = (req: IncomingMessage): string | undefined => req.socket?.remoteAddress;

/** The form bodies being read, by client address, of each token policy's middleware. */
const readingByPolicy = new WeakMap<object, Map<string, number>>();

function readingOf(owner: object | undefined): Map<string, number> {
  if (owner === undefined) return new Map();
  let reading = readingByPolicy.get(owner);
  if (reading === undefined) readingByPolicy.set(owner, (reading = new Map()));
  return reading;
}

/**
 * Checks the token-finding options (at `prefix` below `options`: `''` for `requireToken`'s own,
 * `'extraction.'` for `introspect`'s) and turns them into {@link ExtractOptions}. `owner` (the
 * token policy) shares the count of form bodies being read by client address between the
 * middleware made for it; without one the middleware counts alone.
 */
export function extractOptions(
  check: OptionChecks,
  options: Omit<RequireTokenOptions, 'policy'>,
  realm: string | undefined,
  prefix = '',
  dpop = false,
  owner?: object,
): ExtractOptions {
  const methods = options.methods ?? ALL_METHODS;
  if (!Array.isArray(methods) || methods.length === 0 || methods.some((m) => !ALL_METHODS.includes(m))) {
    check.fail(`${prefix}methods`, "must be a non-empty array of 'header', 'body', 'query'");
  }
  const timeoutMs = check.positive(options.bodyTimeoutMs, `${prefix}bodyTimeoutMs`, 10_000, true);
  if (timeoutMs > LONGEST_TIMER_MS) check.fail(`${prefix}bodyTimeoutMs`, `must be at most ${LONGEST_TIMER_MS}`);
  return {
    realm,
    methods: new Set(methods),
    form: {
      maxBodySize: check.positive(options.maxBodySize, `${prefix}maxBodySize`, 1024 * 1024, true),
      maxFields: check.positive(options.maxBodyFields, `${prefix}maxBodyFields`, 1000, true),
      timeoutMs,
      maxReadsPerAddress: check.positive(options.maxBodyReadsPerAddress, `${prefix}maxBodyReadsPerAddress`, 16, true),
      clientAddress:
        check.optionalFunction<(req: IncomingMessage) => string | undefined>(options.clientAddress, `${prefix}clientAddress`) ??
        peerAddress,
      reading: readingOf(owner),
    },
    maxTokenLength: check.positive(options.maxTokenLength, `${prefix}maxTokenLength`, 16 * 1024, true),
    dpop,
  };
}

/** The TOKEN_RECEIVED diagnostic of each method (built once, not per request). */
const RECEIVED: Readonly<Record<TokenMethod | 'dpop', string>> = {
  dpop: 'DPoP-bound token received (header)',
  header: 'bearer token received (header)',
  body: 'bearer token received (body)',
  query: 'bearer token received (query)',
};

/** Puts the token found on the request's context, or throws `ERR_TOKEN_MISSING` when there is none. */
export function acceptToken(req: IncomingMessage, token: ExtractedToken | undefined, extract: ExtractOptions): void {
  if (token === undefined) {
    throw new GatewayError('ERR_TOKEN_MISSING', {
      realm: extract.realm,
      diagnostic: 'no token in the Authorization header, form body or query',
    });
  }
  const context = gatewayContext(req);
  context.token = createTokenContext(token.raw, token.method, extract.realm, token.scheme);
  addDiagnostic(req, 'info', 'TOKEN_RECEIVED', RECEIVED[token.scheme === 'DPoP' ? 'dpop' : token.method]);
  // Checked first: on every request, even the arguments of a disabled log cost.
  if (log.enabled) log('%s token received by %s%s', context.transactionId, token.method, token.scheme === 'DPoP' ? ' (DPoP)' : '');
}

/** Extracts the token into the request's context, or throws the GatewayError to answer with. */
export async function findToken(req: IncomingMessage, extract: ExtractOptions): Promise<void> {
  acceptToken(req, await extractToken(req, extract), extract);
}
