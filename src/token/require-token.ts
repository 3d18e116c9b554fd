/**
 * `requireToken`: the RFC 6750 extraction middleware.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { gatewayContext } from '../context.js';
import { optionChecks, optionKeys } from '../options.js';
import { leavesBodyUnread } from './body.js';
import { acceptToken, extractOptions, extractToken, type ExtractedToken, type RequireTokenOptions } from './extract.js';
import type { TokenMiddleware } from './middleware.js';
import { TokenPolicy } from './policy.js';

export type { TokenMiddleware } from './middleware.js';
export type { RequireTokenOptions } from './extract.js';

const REQUIRE_TOKEN_KEYS = optionKeys<RequireTokenOptions>({
  policy: true,
  methods: true,
  maxBodySize: true,
  maxBodyFields: true,
  maxTokenLength: true,
  bodyTimeoutMs: true,
  maxBodyReadsPerAddress: true,
  clientAddress: true,
});

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
 * - a form body larger than `maxBodySize` or with more fields than `maxBodyFields`: 413 `ERR_REQUEST_TOO_LARGE`;
 * - a form body that has not arrived within `bodyTimeoutMs`: 400 `ERR_BAD_REQUEST`; one more than
 *   `maxBodyReadsPerAddress` of one client address read at once: 429 `ERR_INSTANCE_BUSY` (both
 *   close the connection after the answer, the body unread).
 *
 * While a form body is read the exchange holds no slot of `maxConcurrentRequests`: reading it is
 * waiting on the client.
 *
 * Does nothing when a token was already found for the request. Options are checked here: a bad
 * one throws an `InvalidOptionError` whose message starts with `requireToken: options.<path>`.
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
  const check = optionChecks('requireToken');
  check.object(options, '');
  check.known(options, '', REQUIRE_TOKEN_KEYS);
  const { policy } = options;
  let realm: string | undefined;
  if (typeof policy === 'string') realm = policy;
  else if (policy !== undefined && policy !== null && typeof policy === 'object' && typeof policy.name === 'string') realm = policy.name;
  else if (policy !== undefined) check.fail('policy', 'must be a TokenPolicy or a policy name');
  // A policy with DPoP on: `Authorization: DPoP` is accepted too, and refusals carry its challenge.
  const dpopPolicy = policy instanceof TokenPolicy && policy.dpop !== 'off' ? policy : undefined;
  const extract = extractOptions(check, options, realm, '', dpopPolicy !== undefined, policy instanceof TokenPolicy ? policy : undefined);
  const fail =
    dpopPolicy === undefined
      ? (_req: IncomingMessage, next: (err?: unknown) => void, err: unknown): void => next(err)
      : (req: IncomingMessage, next: (err?: unknown) => void, err: unknown): void => next(dpopPolicy.withChallenge(req, err));
  return function requireTokenMiddleware(req, res, next) {
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
      fail(req, next, err);
      return;
    }
    // The token may be in a form body: read first.
    found
      .then((token) => acceptToken(req, token, extract))
      .then(
        () => next(),
        (err: unknown) => {
          // The rest of the body is not read: the connection cannot carry another request.
          if (leavesBodyUnread(err) && !res.headersSent) res.setHeader('Connection', 'close');
          fail(req, next, err);
        },
      );
  };
}
