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

/** Which call failed, for the diagnostic. */
export type Operation = 'discovery' | 'introspection' | 'userinfo' | 'jwks';

// OAuth error codes that mean "this token" rather than "this server" or "this gateway's client".
const TOKEN_ERRORS = new Set(['invalid_token', 'unsupported_token_type']);

function unavailable(realm: string, operation: Operation, why: string, cause: unknown): GatewayError {
  return new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm, diagnostic: `${operation}: ${why}`, cause });
}

function responseStatus(err: unknown): number | undefined {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Response ? cause.status : undefined;
}

/** The `error` parameter of the first challenge, e.g. `invalid_client` or `insufficient_scope`. */
function challengeError(err: WWWAuthenticateChallengeError): string | undefined {
  const error = err.cause[0]?.parameters.error;
  return typeof error === 'string' ? error : undefined;
}

/** Classifies an error thrown by an `openid-client` call (discovery, introspection, UserInfo). */
export function classifyClientError(err: unknown, realm: string, operation: Operation): GatewayError {
  if (err instanceof GatewayError) return err;
  const tooLarge = responseTooLarge(err);
  if (tooLarge !== undefined) return unavailable(realm, operation, `non-conforming response (body larger than ${tooLarge.limit} bytes, not read further)`, err);
  if (err instanceof ResponseBodyError) {
    if (operation !== 'discovery' && TOKEN_ERRORS.has(err.error)) {
      return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `${operation}: the server refused the token (${err.error})` });
    }
    return unavailable(realm, operation, `the server answered ${err.status} ${err.error}`, err);
  }
  if (err instanceof WWWAuthenticateChallengeError) {
    const error = challengeError(err);
    // UserInfo answers 401 (invalid_token) or 403 (insufficient_scope, e.g. no `openid` scope):
    // both are about the caller's token, not an outage.
    if (operation === 'userinfo' && (err.status === 401 || err.status === 403)) {
      return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `userinfo: the server refused the token (${err.status}${error ? ` ${error}` : ''})` });
    }
    // At introspection a challenge is about the gateway's own client (invalid_client: check its credentials).
    return unavailable(realm, operation, `the server answered ${err.status} with a challenge${error ? ` (${error})` : ''}`, err);
  }
  if (err instanceof ClientError) {
    const status = responseStatus(err);
    if (operation === 'userinfo' && (status === 401 || status === 403)) {
      return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `userinfo: the server refused the token (${status})` });
    }
    if (operation === 'userinfo' && err.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON') {
      return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: 'userinfo: sub differs from the token subject' });
    }
    switch (err.code) {
      case 'OAUTH_TIMEOUT':
        return unavailable(realm, operation, 'timed out', err);
      case 'OAUTH_ABORT':
        return unavailable(realm, operation, 'aborted', err);
      case 'OAUTH_RESPONSE_IS_NOT_CONFORM': {
        const status = responseStatus(err);
        return unavailable(realm, operation, `non-conforming response${status === undefined ? '' : ` (HTTP ${status})`}`, err);
      }
      case 'OAUTH_RESPONSE_IS_NOT_JSON':
        return unavailable(realm, operation, 'non-conforming response (not JSON)', err);
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
    const code = ((cause as { cause?: { code?: unknown } } | undefined)?.cause)?.code;
    return unavailable(realm, 'jwks', `unreachable (${typeof code === 'string' ? code : cause instanceof Error ? cause.message : 'unknown'})`, cause);
  }
  if (err instanceof joseErrors.JOSEError) {
    // Signature, claims, algorithm, no matching key, not a JWS at all: the token is not valid.
    return new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic: `jwt: ${err.code}` });
  }
  return unavailable(realm, 'jwks', `unexpected failure (${err instanceof Error ? err.name : typeof err})`, err);
}
