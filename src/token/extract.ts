/**
 * RFC 6750 section 2: finds the bearer token of a request in the `Authorization` header, the
 * urlencoded form body or the query string, and rejects ambiguous or malformed requests.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { TokenMethod } from '../context.js';
import { GatewayError } from '../errors.js';
import { formTokens, isUrlencoded } from './body.js';

/** A token found in a request. */
export interface ExtractedToken {
  raw: string;
  method: TokenMethod;
}

/** What {@link extractToken} needs to know. */
export interface ExtractOptions {
  /** Realm of the challenges (the token policy name). */
  realm: string | undefined;
  /** Methods accepted. */
  methods: ReadonlySet<TokenMethod>;
  /** Largest urlencoded body read to look for `access_token`, in bytes. */
  maxBodySize: number;
}

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
// The Bearer scheme (case-insensitive), and what follows it.
const BEARER_SCHEME = /^\s*bearer(\s|$)/i;
const BEARER_CREDENTIALS = /^\s*bearer(?:\s+(.*))?$/is;
// Body and query values are form-decoded, so any visible ASCII character may appear; nothing else.
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
// Methods whose body RFC 6750 section 2.2 allows the token in (never GET; HEAD has no body).
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

function malformed(realm: string | undefined, diagnostic: string): GatewayError {
  return new GatewayError('ERR_TOKEN_MALFORMED', { realm, diagnostic });
}

/** Every `Authorization` header line as sent (Node keeps only the first in `req.headers`). */
function authorizationLines(req: IncomingMessage): string[] {
  const lines: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    // Length first: most header names are not 13 characters long, and need no lower-casing.
    if (name.length === 13 && name.toLowerCase() === 'authorization') lines.push(raw[i + 1]!);
  }
  return lines;
}

/** The bearer token of the `Authorization` header, `undefined` when the header is absent or not Bearer. */
function headerToken(req: IncomingMessage, realm: string | undefined): string | undefined {
  const lines = authorizationLines(req);
  if (lines.length === 0) return undefined;
  const bearer = lines.filter((line) => BEARER_SCHEME.test(line));
  if (lines.length > 1) {
    if (bearer.length > 0) throw malformed(realm, `${lines.length} Authorization headers in one request`);
    return undefined;
  }
  if (bearer.length === 0) return undefined; // another scheme (Basic, ...): not ours
  const match = BEARER_CREDENTIALS.exec(bearer[0]!);
  const credentials = match?.[1]?.trim() ?? '';
  if (credentials === '') throw malformed(realm, 'Authorization: Bearer without a token');
  if (!B64TOKEN.test(credentials)) {
    throw malformed(realm, 'Authorization: Bearer value does not match the b64token syntax of RFC 6750');
  }
  return credentials;
}

function single(values: string[], where: string, realm: string | undefined): string | undefined {
  if (values.length === 0) return undefined;
  if (values.length > 1) throw malformed(realm, `access_token appears ${values.length} times in the ${where}`);
  const value = values[0]!;
  if (value === '') throw malformed(realm, `empty access_token in the ${where}`);
  if (!VISIBLE_ASCII.test(value)) throw malformed(realm, `access_token in the ${where} has characters outside visible ASCII`);
  return value;
}

function queryValues(req: IncomingMessage): string[] {
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const question = url.indexOf('?');
  if (question < 0) return [];
  // Parsed here rather than through req.query, whose parser differs between Express 4 and 5.
  return new URLSearchParams(url.slice(question + 1)).getAll('access_token');
}

/**
 * Finds the request's bearer token. Returns `undefined` when there is none; throws a
 * {@link GatewayError} (`ERR_TOKEN_MULTIPLE_METHODS`, `ERR_TOKEN_MALFORMED`,
 * `ERR_REQUEST_TOO_LARGE`, `ERR_BAD_REQUEST`) when the request is ambiguous or malformed.
 */
export async function extractToken(req: IncomingMessage, options: ExtractOptions): Promise<ExtractedToken | undefined> {
  const { realm, methods } = options;
  const found: ExtractedToken[] = [];
  if (methods.has('header')) {
    const raw = headerToken(req, realm);
    if (raw !== undefined) found.push({ raw, method: 'header' });
  }
  if (methods.has('query')) {
    const raw = single(queryValues(req), 'query string', realm);
    if (raw !== undefined) found.push({ raw, method: 'query' });
  }
  if (methods.has('body') && BODY_METHODS.has(req.method ?? '') && isUrlencoded(req)) {
    const raw = single(await formTokens(req, options.maxBodySize), 'form body', realm);
    if (raw !== undefined) found.push({ raw, method: 'body' });
  }
  if (found.length > 1) {
    throw new GatewayError('ERR_TOKEN_MULTIPLE_METHODS', {
      realm,
      diagnostic: `token sent with more than one method: ${found.map((t) => t.method).join(', ')}`,
    });
  }
  return found[0];
}
