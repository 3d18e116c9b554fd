/**
 * Turns what `openid-client` and `jose` throw into the gateway's answer: the token is bad (401) or
 * the authorization server could not be used (503). Fail closed: anything unknown is a 503, never
 * a pass.
 *
 * @module
 */
import { errors as joseErrors } from 'jose';
import { ClientError, ResponseBodyError, WWWAuthenticateChallengeError } from 'openid-client';
import { GatewayError } from '../errors.js';
import { responseTooLarge } from './bounded-fetch.js';

/** Which call failed, for the diagnostic (`token`: the gateway obtaining its own bearer token for introspection). */
export type Operation = 'discovery' | 'introspection' | 'userinfo' | 'jwks' | 'token';

// OAuth error codes that mean "this token" rather than "this server" or "this gateway's client".
const TOKEN_ERRORS = new Set(['invalid_token', 'unsupported_token_type']);

function unavailable(realm: string, operation: Operation, why: string, cause: unknown): GatewayError {
  return new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm, diagnostic: `${operation}: ${why}`, cause });
}

function refused(realm: string, operation: Operation, why: string): GatewayError {
  return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `${operation}: ${why}` });
}

/** The HTTP status of the answer an openid-client error is about, when there was one. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof ResponseBodyError || err instanceof WWWAuthenticateChallengeError) return err.status;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof Response ? cause.status : undefined;
}

/** The OAuth `error` of an answer: its JSON body's, or its `WWW-Authenticate` challenge's. */
function oauthError(err: unknown): string | undefined {
  if (err instanceof ResponseBodyError) return err.error;
  if (err instanceof WWWAuthenticateChallengeError) {
    const error = err.cause[0]?.parameters.error;
    return typeof error === 'string' ? error : undefined;
  }
  return undefined;
}

/**
 * Whether the authorization server refused the gateway's own client authentication: a 401 or 403
 * from the endpoints the gateway authenticates at (introspection, token). Whatever the body says
 * (`invalid_client`, `invalid_token` for an expired bearer token of the gateway, or no JSON at
 * all), it is about the gateway, not the caller's token.
 */
export function refusedClientAuthentication(err: unknown, operation: Operation): boolean {
  if (operation !== 'introspection' && operation !== 'token') return false;
  const status = httpStatusOf(err);
  return status === 401 || status === 403;
}

/**
 * Whether a UserInfo answer refuses the caller's token: any 4xx but 408 and 429 (a 401
 * `invalid_token`, a 403 `insufficient_scope` for a token without `openid`, a 404 for a
 * client_credentials token with no end-user behind it). 408, 429, 5xx and network failures are
 * outages.
 */
function refusesToken(status: number | undefined): status is number {
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/** Classifies an error thrown by an `openid-client` call (discovery, introspection, UserInfo, token). */
export function classifyClientError(err: unknown, realm: string, operation: Operation): GatewayError {
  if (err instanceof GatewayError) return err;
  // A GatewayError thrown inside an openid-client call (the gateway's own bearer token could not be had) comes back wrapped.
  if (err instanceof ClientError && err.cause instanceof GatewayError) return err.cause;
  const tooLarge = responseTooLarge(err);
  if (tooLarge !== undefined)
    return unavailable(realm, operation, `non-conforming response (body larger than ${tooLarge.limit} bytes, not read further)`, err);
  const status = httpStatusOf(err);
  const error = oauthError(err);
  if (refusedClientAuthentication(err, operation)) {
    // Named, status kept: "not JSON" or "a challenge" said nothing of the gateway's credentials.
    return unavailable(
      realm,
      operation,
      `the authorization server refused the gateway's client authentication (HTTP ${status}${error ? `, ${error}` : ''})`,
      err,
    );
  }
  if (operation === 'userinfo' && refusesToken(status)) {
    return refused(realm, operation, `the server refused the token (HTTP ${status}${error ? `, ${error}` : ''})`);
  }
  if (err instanceof ResponseBodyError) {
    if (operation === 'introspection' && TOKEN_ERRORS.has(err.error))
      return refused(realm, operation, `the server refused the token (${err.error})`);
    return unavailable(realm, operation, `the server answered ${err.status} ${err.error}`, err);
  }
  if (err instanceof WWWAuthenticateChallengeError) {
    return unavailable(realm, operation, `the server answered ${err.status} with a challenge${error ? ` (${error})` : ''}`, err);
  }
  if (err instanceof ClientError) {
    if (operation === 'userinfo' && err.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON')
      return refused(realm, operation, 'sub differs from the token subject');
    switch (err.code) {
      case 'OAUTH_TIMEOUT':
        return unavailable(realm, operation, 'timed out', err);
      case 'OAUTH_ABORT':
        return unavailable(realm, operation, 'aborted', err);
      case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
        return unavailable(realm, operation, `non-conforming response${status === undefined ? '' : ` (HTTP ${status})`}`, err);
      case 'OAUTH_RESPONSE_IS_NOT_JSON':
        return unavailable(realm, operation, `non-conforming response (not JSON${status === undefined ? '' : `, HTTP ${status}`})`, err);
      default:
        return unavailable(realm, operation, `non-conforming response or client error (${err.code ?? err.message})`, err);
    }
  }
  if (err instanceof TypeError) {
    // fetch() rejects with TypeError('fetch failed', { cause: ECONNREFUSED, ... }).
    const code = (err.cause as { code?: unknown } | undefined)?.code;
    return unavailable(realm, operation, `unreachable (${typeof code === 'string' ? code : err.message})`, err);
  }
  return unavailable(realm, operation, `unexpected failure (${err instanceof Error ? err.name : typeof err})`, err);
}

/**
 * Thrown by the key getter when the JWKS could not be fetched or used (as opposed to "no key
 * matches this token"), so that {@link classifyJwtError} can tell server failures from bad tokens:
 * jose reports both as `JOSEError`.
 */
export class KeySetUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the JWKS could not be obtained', { cause });
    this.name = 'KeySetUnavailableError';
  }
}

/** Classifies an error thrown by `jose.jwtVerify` with the policy's key getter. */
export function classifyJwtError(err: unknown, realm: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof joseErrors.JWTExpired) {
    return new GatewayError('ERR_TOKEN_EXPIRED', { realm, diagnostic: 'jwt: the token has expired (exp)' });
  }
  if (err instanceof KeySetUnavailableError) {
    const cause = err.cause;
    if (cause instanceof joseErrors.JWKSTimeout) return unavailable(realm, 'jwks', 'timed out', cause);
    if (cause instanceof joseErrors.JOSEError) return unavailable(realm, 'jwks', `non-conforming JWKS response (${cause.message})`, cause);
    const code = (cause as { cause?: { code?: unknown } } | undefined)?.cause?.code;
    return unavailable(
      realm,
      'jwks',
      `unreachable (${typeof code === 'string' ? code : cause instanceof Error ? cause.message : 'unknown'})`,
      cause,
    );
  }
  if (err instanceof joseErrors.JOSEError) {
    // Signature, claims, algorithm, no matching key, not a JWS at all: the token is not valid.
    return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `jwt: ${err.code}` });
  }
  return unavailable(realm, 'jwks', `unexpected failure (${err instanceof Error ? err.name : typeof err})`, err);
}
