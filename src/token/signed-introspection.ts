/**
 * JWT response for token introspection (RFC 9701): with the token policy's `signedIntrospection`
 * on, introspection asks for `application/token-introspection+jwt` and accepts nothing else than
 * a JWS of the authorization server, verified with `jose` against the issuer's JWKS (the policy's
 * own key set, with its cache and its cool-down for unknown keys). The answer's
 * `token_introspection` object is then handed to `openid-client` as the plain introspection
 * answer, which it checks as any other.
 *
 * It sits in the introspection call's `fetch`: `openid-client` still builds the request and
 * authenticates the gateway (every client authentication of the policy), and reads the answer;
 * between the two, the signed answer is verified, or the call fails with the 503 that says why.
 * (`openid-client` alone would take an unsigned JSON answer as well, verify the signature only
 * with its own key set, and allow one algorithm.)
 *
 * @module
 */
import { errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { KeySetUnavailableError, classifyJwtError } from './classify.js';
import { DEFAULT_JWT_ALGORITHMS } from './policy-schema.js';

const log = logger('token');

/** The media type of a signed introspection answer (RFC 9701 section 4), asked in `Accept` and required in `Content-Type`. */
export const INTROSPECTION_JWT_MEDIA_TYPE = 'application/token-introspection+jwt';

/** The `typ` of its JWS header (RFC 9701 section 5); `application/token-introspection+jwt` is the same (RFC 7515 4.1.9). */
const INTROSPECTION_JWT_TYPE = 'token-introspection+jwt';

/** What a signed answer is verified against. */
export interface SignedIntrospectionCheck {
  /** Realm of the errors (the policy's name). */
  readonly realm: string;
  /** The introspection endpoint (`href`): only POSTs to it are signed introspections. */
  readonly endpoint: string;
  /** The issuer identifier: the answer's `iss`. */
  readonly issuer: string;
  /** The gateway's client id: the answer's `aud`. */
  readonly clientId: string;
  /** The JWS algorithms allowed (asymmetric). */
  readonly algorithms: readonly string[];
  /** Oldest answer accepted, seconds since its `iat`. */
  readonly maxAgeSeconds: number;
  /** Tolerated clock difference, seconds. */
  readonly clockSkew: number;
  /** The issuer's keys (the policy's key getter over its JWKS), asked for when an answer is verified. */
  readonly keys: () => JWTVerifyGetKey;
}

/** A `fetch` as openid-client calls its `customFetch`. */
type Fetch = (url: string, options: RequestInit) => Promise<Response>;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The 503 of an answer that is not a valid signed one: the server cannot be trusted now. */
function refused(realm: string, why: string, cause?: unknown): GatewayError {
  log('policy %s: signed introspection answer refused: %s', realm, why);
  return new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
    realm,
    diagnostic: `introspection: signed answer refused (RFC 9701): ${why}`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * The algorithms a signed answer may use: those given, else those of the server's
 * `introspection_signing_alg_values_supported` the gateway accepts at all (the asymmetric ones),
 * else every asymmetric one. Throws the 503 when the server lists none of those.
 */
export function introspectionAlgorithms(given: readonly string[] | undefined, supported: unknown, realm: string): string[] {
  if (given !== undefined) return [...given];
  if (!Array.isArray(supported)) return [...DEFAULT_JWT_ALGORITHMS];
  const usable = DEFAULT_JWT_ALGORITHMS.filter((algorithm) => supported.includes(algorithm));
  if (usable.length === 0)
    throw refused(
      realm,
      "the server's introspection_signing_alg_values_supported names no asymmetric algorithm (give signedIntrospection.algorithms)",
    );
  return usable;
}

/** Why `jose` refused the answer, in words (never a claim's value: the answer may be anyone's). */
function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "no key of the issuer's JWKS matches its header (kid, alg)";
  if (err instanceof joseErrors.JWKSMultipleMatchingKeys) return "several keys of the issuer's JWKS match its header";
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "its signature does not verify with the issuer's key";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'its alg is not one of the allowed algorithms';
  if (err instanceof joseErrors.JWTExpired) {
    return err.claim === 'iat' ? 'it is older than signedIntrospection.maxAgeSeconds (iat)' : 'it has expired (exp)';
  }
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'typ') return `its typ is not ${INTROSPECTION_JWT_TYPE}`;
    if (err.reason === 'missing') return `it has no ${err.claim}`;
    if (err.claim === 'iss') return 'its iss is not the issuer';
    if (err.claim === 'aud') return "its aud is not the gateway's client id";
    if (err.claim === 'iat') return 'its iat is in the future';
    return `its ${err.claim} does not pass (${err.reason})`;
  }
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return 'it is not a valid JWS';
  if (err instanceof joseErrors.JOSEError) return `jose: ${err.code}`;
  return `unexpected failure (${err instanceof Error ? err.name : typeof err})`;
}

/**
 * The introspection answer a signed one holds: its JWS verified (key of the issuer's JWKS,
 * allowed `alg`, `typ`, `iss`, `aud`, `iat` neither future nor too old), its
 * `token_introspection` an object with a boolean `active`. Throws the 503 otherwise; a JWKS that
 * cannot be had is the JWKS's 503 (`jwks: ...`).
 */
export async function verifySignedIntrospection(jws: string, check: SignedIntrospectionCheck): Promise<Record<string, unknown>> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(jws, check.keys(), {
      algorithms: [...check.algorithms],
      typ: INTROSPECTION_JWT_TYPE,
      issuer: check.issuer,
      audience: check.clientId,
      clockTolerance: check.clockSkew,
      // Makes `iat` required, and refuses one in the future or older than the bound.
      maxTokenAge: check.maxAgeSeconds,
    }));
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    // The key set could not be fetched or used: said as the JWKS's failure.
    if (err instanceof KeySetUnavailableError) throw classifyJwtError(err, check.realm);
    throw refused(check.realm, reasonOf(err), err);
  }
  const answer = payload['token_introspection'];
  if (!isObject(answer)) throw refused(check.realm, 'its token_introspection is missing or not an object');
  if (typeof answer['active'] !== 'boolean') throw refused(check.realm, 'its token_introspection has no boolean active');
  return answer;
}

/** Whether a request of openid-client is an introspection (a POST to the endpoint). */
function isIntrospection(url: string, options: RequestInit, endpoint: string): boolean {
  if ((options.method ?? 'GET').toUpperCase() !== 'POST') return false;
  try {
    return new URL(url).href === endpoint;
  } catch {
    return false;
  }
}

/** The media type of a `Content-Type`, without its parameters, in lower case. */
function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * A `fetch` for the policy's introspection calls: asks for the signed answer (`Accept`), and
 * hands openid-client the `token_introspection` of a verified one as a plain JSON answer. An
 * answer other than 200 is handed on as it is (openid-client reads the error: never a valid
 * token); a 200 that is not a valid signed answer fails the call with the 503.
 */
export function signedIntrospectionFetch(base: Fetch, check: SignedIntrospectionCheck): Fetch {
  return async (url, options) => {
    if (!isIntrospection(url, options, check.endpoint)) return base(url, options);
    const headers = new Headers(options.headers);
    headers.set('accept', INTROSPECTION_JWT_MEDIA_TYPE);
    const response = await base(url, { ...options, headers });
    if (response.status !== 200) return response;
    const type = mediaType(response.headers.get('content-type'));
    if (type !== INTROSPECTION_JWT_MEDIA_TYPE) {
      await response.body?.cancel().catch(() => undefined);
      throw refused(check.realm, `the answer is not a signed JWT (Content-Type ${type === '' ? 'missing' : type})`);
    }
    const answer = await verifySignedIntrospection((await response.text()).trim(), check);
    return new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json' } });
  };
}
