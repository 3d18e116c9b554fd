/**
 * A token policy's view of its issuer's JWKS: jose's remote key set behind a cool-down of the
 * policy's own. A JWT signed with a key the set lacks makes one fetch of the set when the last
 * fetch (failed ones too) started at least the cool-down ago; concurrent ones share that fetch.
 * jose's own cool-down is never used: it counts only from a successful fetch, so a failing server
 * would be asked again for every unknown `kid`. Likewise, while the set has to be fetched (none
 * yet, or older than jose's 10 minutes) and the last fetch failed within the cool-down, JWTs get
 * that failure again (503) without a fetch.
 *
 * @module
 */
import { createRemoteJWKSet, customFetch, errors as joseErrors, type JWTVerifyGetKey } from 'jose';
import { logger } from '../log.js';
import { KeySetUnavailableError } from './classify.js';

const log = logger('token');

/** What a key set needs of its policy. */
export interface PolicyKeySetOptions {
  /** The policy's name, in log lines. */
  realm: string;
  /** The issuer's `jwks_uri`. */
  uri: URL;
  /** Longest wait for one fetch, ms. */
  timeoutMs: number;
  /** Least time between two fetches for unknown keys (`jwksCooldownSeconds`), ms. */
  cooldownMs: number;
  /** Runs one fetch of the set as a call to the authorization server (timed, traced). */
  call: (run: () => Promise<Response>) => Promise<Response>;
}

/** The key getter of a policy, and what it knows of its last fetch. */
export interface PolicyKeySet {
  /** jose's key getter for `jwtVerify`; a failure of the set itself is a {@link KeySetUnavailableError}. */
  readonly getKey: JWTVerifyGetKey;
  /** Until when (epoch ms) a key the set lacks stays unknown without another fetch. */
  unknownKeyUntil(): number;
}

/** The key set of a policy over `options.uri` (see the module comment). */
export function createPolicyKeySet(options: PolicyKeySetOptions): PolicyKeySet {
  const { realm, cooldownMs } = options;
  /** When the last fetch started (a failed one too): the cool-down counts from it. */
  let fetchedAt = Number.NEGATIVE_INFINITY;
  /** Why the last use of the set failed, until it works again. */
  let failure: { cause: unknown } | undefined;
  const remote = createRemoteJWKSet(options.uri, {
    timeoutDuration: Math.round(options.timeoutMs),
    cooldownDuration: Number.POSITIVE_INFINITY,
    [customFetch]: (...args: Parameters<typeof fetch>) => {
      fetchedAt = Date.now();
      return options.call(() => fetch(...args));
    },
  });
  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (failure !== undefined && !remote.fresh && Date.now() < fetchedAt + cooldownMs) throw new KeySetUnavailableError(failure.cause);
    try {
      try {
        const key = await remote(header, token);
        failure = undefined;
        return key;
      } catch (err) {
        if (!(err instanceof joseErrors.JWKSNoMatchingKey) || Date.now() < fetchedAt + cooldownMs) throw err;
        // A key the set lacks, past the cool-down: the server may have added it (key rotation).
        if (!remote.reloading) log('policy %s: a JWT names a key the JWKS lacks: fetching the JWKS again', realm);
        await remote.reload();
        return await remote(header, token);
      }
    } catch (err) {
      // "No key for this token" is the token's fault; anything else is the key source's.
      if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys) throw err;
      failure = { cause: err };
      throw new KeySetUnavailableError(err);
    }
  };
  return { getKey, unknownKeyUntil: () => fetchedAt + cooldownMs };
}
