/**
 * Checks of an introspection response (RFC 7662 section 2.2) beyond `active`: times, audience,
 * issuer, token type; and of the time claims of any source. Pure functions over claims and a clock.
 *
 * @module
 */
import { GatewayError } from '../errors.js';
import type { Claims } from './normalize.js';

/** What the checks compare against. */
export interface ClaimChecks {
  /** Realm of the errors. */
  realm: string;
  /** Seconds since the epoch. */
  now: number;
  /** Tolerated clock difference, seconds. */
  clockSkew: number;
  /** Accepted audiences; empty: `aud` is not checked. */
  audience: readonly string[];
  /** Expected `iss`, when known; checked only when the claims carry one. */
  issuer: string | undefined;
}

const invalid = (realm: string, diagnostic: string) => new GatewayError('ERR_TOKEN_INVALID', { realm, diagnostic });

// Largest time a JavaScript Date holds (ECMA-262: 8.64e15 ms), in seconds. A time claim beyond it
// cannot be a real token's, and would make every later `new Date(seconds * 1000)` throw.
const MAX_SECONDS = 8.64e12;

/** Throws the 401 when `exp`, `nbf` or `iat` is there but not a number a JavaScript Date can hold. */
export function checkTimeClaims(claims: Claims, realm: string, source: string): void {
  for (const name of ['exp', 'nbf', 'iat'] as const) {
    const value = claims[name];
    if (value === undefined) continue;
    if (typeof value !== 'number') throw invalid(realm, `${source}: ${name} is not a number`);
    if (!(Math.abs(value) <= MAX_SECONDS)) throw invalid(realm, `${source}: ${name} is outside the range of a date`);
  }
}

// `token_type` values (RFC 7662 2.2, RFC 8693 3) saying the token is not an access token, lower case.
const NOT_ACCESS_TOKEN_TYPES = new Set([
  'refresh_token',
  'id_token',
  'urn:ietf:params:oauth:token-type:refresh_token',
  'urn:ietf:params:oauth:token-type:id_token',
]);
// Keycloak's `typ` claim of a refresh, offline or ID token (its access tokens say `Bearer`), lower case.
const NOT_ACCESS_TOKEN_TYP = new Set(['refresh', 'offline', 'id', 'logout']);

/**
 * Throws the 401 when an introspection response says the token is not an access token (a server
 * that introspects refresh and ID tokens too answers `active: true` for them).
 */
export function checkAccessTokenType(claims: Claims, realm: string, source: string): void {
  const tokenType = claims['token_type'];
  if (typeof tokenType === 'string' && NOT_ACCESS_TOKEN_TYPES.has(tokenType.toLowerCase())) {
    throw invalid(
      realm,
      `${source}: not an access token (token_type ${tokenType.toLowerCase().replace(/^urn:ietf:params:oauth:token-type:/, '')})`,
    );
  }
  const typ = claims['typ'];
  if (typeof typ === 'string' && NOT_ACCESS_TOKEN_TYP.has(typ.toLowerCase())) {
    throw invalid(realm, `${source}: not an access token (typ ${typ.toLowerCase()})`);
  }
}

/** Whether a token whose `exp` is `exp` has expired at `now` (with the skew). */
export function isExpired(exp: unknown, now: number, clockSkew: number): boolean {
  return typeof exp === 'number' && exp + clockSkew <= now;
}

/** Throws the 401 to answer with when time, audience or issuer claims make the token unusable. */
export function checkClaims(claims: Claims, checks: ClaimChecks, source: string): void {
  const { realm, now, clockSkew } = checks;
  checkTimeClaims(claims, realm, source);
  if (isExpired(claims['exp'], now, clockSkew)) {
    throw new GatewayError('ERR_TOKEN_EXPIRED', { realm, diagnostic: `${source}: the token has expired (exp)` });
  }
  const nbf = claims['nbf'];
  if (typeof nbf === 'number' && nbf - clockSkew > now) throw invalid(realm, `${source}: the token is not valid yet (nbf)`);
  const iat = claims['iat'];
  if (typeof iat === 'number' && iat - clockSkew > now) throw invalid(realm, `${source}: the token was issued in the future (iat)`);
  if (checks.audience.length > 0) {
    const aud = claims['aud'];
    const values = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
    if (!values.some((value) => checks.audience.includes(value as string))) {
      throw invalid(realm, `${source}: the token is not meant for this audience (aud)`);
    }
  }
  const iss = claims['iss'];
  if (checks.issuer !== undefined && iss !== undefined && iss !== checks.issuer) {
    throw invalid(realm, `${source}: the token was issued by another issuer (iss)`);
  }
}
