/**
 * `requireToken`: the RFC 6750 extraction middleware.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addDiagnostic, createTokenContext, gatewayContext, type TokenMethod } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { extractToken, type ExtractedToken, type ExtractOptions } from './extract.js';
import type { TokenPolicy } from './policy.js';

const log = logger('token');

/** Options of {@link requireToken}. */
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
}

/**
 * A connect/Express middleware, typed with Node's request and response (not Express's) so that it
 * needs no Express types.
 *
 * @param next - Express's (or connect's) `next`: called with no argument to go on, or with a
 *   {@link GatewayError} to answer with it.
 */
export type TokenMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

const ALL_METHODS: readonly TokenMethod[] = ['header', 'body', 'query'];

/** The TOKEN_RECEIVED diagnostic of each method (built once, not per request). */
const RECEIVED: Readonly<Record<TokenMethod, string>> = {
  header: 'bearer token received (header)',
  body: 'bearer token received (body)',
  query: 'bearer token received (query)',
};

/** Validates {@link RequireTokenOptions} and turns them into extraction options. */
export function extractOptions(options: RequireTokenOptions, name = 'options'): ExtractOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${name} must be an object`);
  const { policy, methods = ALL_METHODS, maxBodySize = 1024 * 1024, maxBodyFields = 1000, maxTokenLength = 16 * 1024 } = options;
  let realm: string | undefined;
  if (typeof policy === 'string') realm = policy;
  else if (policy !== undefined && policy !== null && typeof policy === 'object' && typeof policy.name === 'string') realm = policy.name;
  else if (policy !== undefined) throw new TypeError(`${name}.policy must be a TokenPolicy or a policy name`);
  if (!Array.isArray(methods) || methods.length === 0 || methods.some((m) => !ALL_METHODS.includes(m))) {
    throw new TypeError(`${name}.methods must be a non-empty array of 'header', 'body', 'query'`);
  }
  if (!Number.isSafeInteger(maxBodySize) || maxBodySize <= 0) throw new TypeError(`${name}.maxBodySize must be a positive integer`);
  if (!Number.isSafeInteger(maxBodyFields) || maxBodyFields <= 0) throw new TypeError(`${name}.maxBodyFields must be a positive integer`);
  if (!Number.isSafeInteger(maxTokenLength) || maxTokenLength <= 0) throw new TypeError(`${name}.maxTokenLength must be a positive integer`);
  return { realm, methods: new Set(methods), form: { maxBodySize, maxFields: maxBodyFields }, maxTokenLength };
}

/**
 * Finds the request's OAuth 2.0 bearer token (RFC 6750 section 2) and stores it on
 * `req.gateway.token` (the raw value non-enumerable, with the method and the policy name).
 *
 * Accepted: `Authorization: Bearer <token>` (scheme case-insensitive), the `access_token` field of an
 * `application/x-www-form-urlencoded` body (read here when no body parser ran, see
 * `docs/token-policies.md`), the `access_token` query parameter. Answers (through `next(err)`, to be
 * rendered by `problemJsonErrorHandler`):
 * - no token: 400 `ERR_TOKEN_MISSING` (`protocol:GATEWAY-1366`, `error="invalid_request"`);
 * - more than one method: 400 `ERR_TOKEN_MULTIPLE_METHODS`;
 * - malformed (empty, longer than `maxTokenLength`, bad characters, two `Authorization` headers,
 *   repeated parameter): 400 `ERR_TOKEN_MALFORMED`;
 * - a form body larger than `maxBodySize` or with more fields than `maxBodyFields`: 413 `ERR_REQUEST_TOO_LARGE`.
 *
 * Does nothing when a token was already found for the request.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { requireToken, problemJsonErrorHandler } from 'express-access-gateway';
 *
 * const app = express();
 * app.get('/pets', requireToken({ policy: 'my-idp', methods: ['header'] }), (req, res) => {
 *   res.json({ method: req.gateway?.token?.method });
 * });
 * app.use(problemJsonErrorHandler());
 * ```
 */
export function requireToken(options: RequireTokenOptions = {}): TokenMiddleware {
  const extract = extractOptions(options);
  return function requireTokenMiddleware(req, _res, next) {
    const context = gatewayContext(req);
    if (context.token !== undefined) {
      next();
      return;
    }
    let found: ExtractedToken | undefined | Promise<ExtractedToken | undefined>;
    try {
      found = extractToken(req, extract);
      if (!(found instanceof Promise)) {
        acceptToken(req, found, extract);
        next();
        return;
      }
    } catch (err) {
      next(err);
      return;
    }
    // The token may be in a form body: read first.
    found.then((token) => acceptToken(req, token, extract)).then(() => next(), next);
  };
}

/** Extracts the token into the request's context, or throws the GatewayError to answer with. */
export async function findToken(req: IncomingMessage, extract: ExtractOptions): Promise<void> {
  acceptToken(req, await extractToken(req, extract), extract);
}

/** Puts the token found on the request's context, or throws `ERR_TOKEN_MISSING` when there is none. */
function acceptToken(req: IncomingMessage, token: ExtractedToken | undefined, extract: ExtractOptions): void {
  if (token === undefined) {
    throw new GatewayError('ERR_TOKEN_MISSING', { realm: extract.realm, diagnostic: 'no token in the Authorization header, form body or query' });
  }
  const context = gatewayContext(req);
  context.token = createTokenContext(token.raw, token.method, extract.realm);
  addDiagnostic(req, 'info', 'TOKEN_RECEIVED', RECEIVED[token.method]);
  // Checked first: on every request, even the arguments of a disabled log cost.
  if (log.enabled) log('%s token received by %s', context.transactionId, token.method);
}
