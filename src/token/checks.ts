/**
 * Checks of an introspection response (RFC 7662 section 2.2) beyond `active`: times, audience,
 * issuer. Pure functions over claims and a clock.
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

/** Whether a token whose `exp` is `exp` has expired at `now` (with the skew). */
export function isExpired(exp: unknown, now: number, clockSkew: number): boolean {
  return typeof exp === 'number' && exp + clockSkew <= now;
}

/** Throws the 401 to answer with when time, audience or issuer claims make the token unusable. */
export function checkClaims(claims: Claims, checks: ClaimChecks, source: string): void {
  const { realm, now, clockSkew } = checks;
  for (const name of ['exp', 'nbf', 'iat'] as const) {
    if (claims[name] !== undefined && typeof claims[name] !== 'number') throw invalid(realm, `${source}: ${name} is not a number`);
  }
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
