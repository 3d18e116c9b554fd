/**
 * The options of `createTokenPolicy`, as TypeScript writes them, each with its comment for the API
 * reference. Their shape and rules are the schema's (`policy-schema.ts`): it checks them at
 * creation (for plain-JavaScript callers too) and the configuration file's token policy is built
 * from it; `policy-schema.ts` also fails the build when these types and the schema part.
 *
 * @module
 */
import type { SharedTokenResults } from '../cluster/shared-token-results.js';
import type { DpopReplayStore } from './binding/replay.js';
import type { ClientAuthMethod, ClientPrivateKey } from './client-auth.js';

/**
 * Authorization server metadata given explicitly instead of discovered (RFC 8414 names). Only the
 * endpoints the policy's switches use are needed.
 */
export interface AuthorizationServerMetadata {
  /** Issuer identifier (checked against `iss`). */
  issuer: string;
  /** RFC 7662 endpoint, needed with `introspection`. */
  introspection_endpoint?: string;
  /** JWKS, needed with `jwtValidation`. */
  jwks_uri?: string;
  /** OpenID Connect UserInfo endpoint, needed with `userInfo`. */
  userinfo_endpoint?: string;
  /** Token endpoint, needed with `clientAuthMethod: 'bearer'`. */
  token_endpoint?: string;
  /** Other metadata, passed to openid-client as is. */
  [name: string]: unknown;
}

/** The invalid-token throttle of a token policy (its `invalidTokenThrottle` option and configuration key). */
export interface InvalidTokenThrottleOptions {
  /** Refused tokens within the window that start the throttle. Default 20. */
  maxRefusals?: number;
  /** The window, seconds, from the address's first refusal. Default 10. */
  windowSeconds?: number;
  /** Most addresses remembered. Default 10000. */
  maxAddresses?: number;
}

/**
 * Signed introspection answers (RFC 9701): the members of the token policy's
 * `signedIntrospection` option (and configuration key) when it is an object.
 */
export interface SignedIntrospectionOptions {
  /**
   * JWS algorithms the signed answer may be signed with; asymmetric only (never `none` or HMAC).
   * Default: the authorization server's `introspection_signing_alg_values_supported` (its
   * asymmetric members), else the asymmetric ones of {@link TokenPolicyOptions.jwtAlgorithms}'s default.
   */
  algorithms?: string[];
  /** Oldest signed answer accepted, seconds since its `iat` (the clock skew allowed on top). Default 300. */
  maxAgeSeconds?: number;
}

/** Options of {@link createTokenPolicy}. */
export interface TokenPolicyOptions {
  /** Policy name: the realm of the `WWW-Authenticate` challenges. */
  name: string;
  /**
   * Issuer identifier; its metadata is discovered at first use: OpenID Connect discovery
   * (`<issuer>/.well-known/openid-configuration`), then RFC 8414 metadata
   * (`/.well-known/oauth-authorization-server`) when that fails or lacks an endpoint the policy
   * needs. Give this or {@link TokenPolicyOptions.metadata}.
   */
  issuer?: string | URL;
  /** Explicit authorization server metadata, instead of discovery. */
  metadata?: AuthorizationServerMetadata;
  /**
   * Introspection endpoint, merged over the discovered (or given) metadata: for a server whose
   * metadata lacks it (it is optional) or that serves it where discovery does not look. If
   * discovery fails and the explicit endpoints cover what the switches need, they are used alone.
   */
  introspectionEndpoint?: string | URL;
  /** JWKS URI, merged over the metadata (see {@link TokenPolicyOptions.introspectionEndpoint}). */
  jwksUri?: string | URL;
  /** UserInfo endpoint, merged over the metadata (see {@link TokenPolicyOptions.introspectionEndpoint}). */
  userinfoEndpoint?: string | URL;
  /** Token endpoint (for `clientAuthMethod: 'bearer'`), merged over the metadata. */
  tokenEndpoint?: string | URL;
  /** The gateway's client id at the authorization server. */
  clientId: string;
  /** The gateway's client secret (`client_secret_basic`, `client_secret_post`, and `bearer` with either). */
  clientSecret?: string;
  /**
   * How the gateway authenticates its introspection calls (RFC 7662 section 2.1). Default
   * `client_secret_basic`, which form-urlencodes the id and secret before Base64 (RFC 6749
   * 2.3.1): a server that does not decode them refuses an id or secret with characters other than
   * letters and digits; use `client_secret_post` with it. `bearer`: a bearer token the gateway
   * obtains from the same server by the client_credentials grant (see {@link TokenPolicyOptions.bearer}).
   */
  clientAuthMethod?: ClientAuthMethod;
  /** Private key of `private_key_jwt`. */
  privateKey?: ClientPrivateKey;
  /**
   * With `clientAuthMethod: 'bearer'`: the scope the gateway asks for its token (servers gate
   * introspection behind one, such as `introspection`; default none), and how it authenticates at
   * the token endpoint (default `client_secret_basic`). The token is kept until shortly before it
   * expires and refreshed before that, one request at a time.
   */
  bearer?: {
    /** Scope asked for. Default: none (the server's default scopes). */
    scope?: string;
    /** Authentication at the token endpoint. Default `client_secret_basic`. */
    clientAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
  };
  /** Validate by RFC 7662 introspection. Default `true`. */
  introspection?: boolean;
  /** Validate the token as a JWT signed by a key of the issuer's JWKS. Default `false`. */
  jwtValidation?: boolean;
  /** Call the UserInfo endpoint with the token. Default `false`. */
  userInfo?: boolean;
  /**
   * JWS algorithms accepted by JWT validation. Default: the asymmetric ones
   * (`RS256`…`RS512`, `PS256`…`PS512`, `ES256`…`ES512`, `EdDSA`, `Ed25519`); never `none` or HMAC.
   */
  jwtAlgorithms?: string[];
  /**
   * Accepted audiences (`aud` must contain one). Required with `jwtValidation` (a JWT of the issuer
   * meant for another client or API, an ID token for example, would pass otherwise) unless
   * {@link TokenPolicyOptions.anyAudience} is `true`. Without JWT validation: `aud` is not checked
   * when unset.
   */
  audience?: string | string[];
  /**
   * `true` to run JWT validation without an `audience`, accepting a JWT of the issuer whatever its
   * `aud`: only for an issuer that signs nothing but access tokens for this gateway (better, also
   * set {@link TokenPolicyOptions.jwtTypes}). Cannot be given with `audience`. Default `false`:
   * `jwtValidation` without `audience` is a `TypeError` at creation.
   */
  anyAudience?: boolean;
  /**
   * JWT `typ` header values accepted by JWT validation, for example `['at+jwt']` (RFC 9068 access
   * tokens), which refuses ID tokens (`JWT`) and tokens without `typ`. Compared case-insensitively,
   * with or without the `application/` prefix (RFC 7515 section 4.1.9). Default: `typ` is not checked.
   */
  jwtTypes?: string[];
  /**
   * Largest body read from the authorization server (discovery, introspection, UserInfo, token),
   * in bytes. A larger answer is non-conforming: 503 `ERR_AUTHORIZATION_SERVER_UNAVAILABLE`, never
   * cached, and the rest of it is not read. Default 262144 (256 KiB).
   */
  maxResponseSize?: number;
  /** Tolerated clock difference for `exp`/`nbf`/`iat`, seconds. Default 5. */
  clockSkew?: number;
  /**
   * Timeout of every call to the authorization server, milliseconds; also the longest a
   * validation waits for one of the {@link TokenPolicyOptions.maxConcurrentCalls} slots. Default 5000.
   */
  timeoutMs?: number;
  /**
   * Allow `http://` endpoints. Default: only when the issuer is a loopback address (127.0.0.0/8,
   * `::1`, `localhost`), for local development and tests.
   */
  allowInsecureRequests?: boolean;
  /**
   * Valid-result cache; `false` disables it. An entry is fresh for min(`ttlSeconds`, exp − now);
   * when the cache is full (`maxEntries`, or `maxBytes` of estimated heap) the least recently
   * used result is evicted.
   */
  cache?:
    | false
    | {
        /** Longest time a valid result is reused, in seconds (capped by the token's `exp`). Default 300. */
        ttlSeconds?: number;
        /** Most results kept (least recently used evicted first). Default 10000. */
        maxEntries?: number;
        /** Most estimated bytes of results kept (least recently used evicted first). Default 33554432 (32 MiB). */
        maxBytes?: number;
      };
  /**
   * Refusal cache: a token the authorization server refused (inactive, expired, wrong audience,
   * another issuer, not an access token) is answered the same 401 for `ttlSeconds` without a
   * call. Outages (503) are never remembered. `false` disables it.
   */
  negativeCache?:
    | false
    | {
        /** How long a refusal is remembered, seconds. Default 30. */
        ttlSeconds?: number;
        /** Most refusals kept (least recently used forgotten first). Default 10000. */
        maxEntries?: number;
      };
  /**
   * Most calls in flight at once to the authorization server (introspection, UserInfo) for this
   * policy. Past it a validation waits for a free slot, up to `timeoutMs`, then answers 503.
   * Default 64.
   */
  maxConcurrentCalls?: number;
  /**
   * Throttle of invalid tokens per client address: after `maxRefusals` tokens refused by the
   * authorization server within `windowSeconds` from one address, tokens from that address that
   * the policy does not know yet (neither cached valid nor cached refused) are answered 429
   * `ERR_TOKEN_THROTTLED` with `Retry-After`, without calling the server, until the window ends.
   * Tokens already known valid keep working. The address is what `introspect` gives (by default
   * the connection's peer: behind a proxy, set `introspect`'s `clientAddress`). `false` disables it.
   */
  invalidTokenThrottle?: false | InvalidTokenThrottleOptions;
  /**
   * Stale on error, seconds; `0` (the default) is off. When the authorization server cannot be
   * used (503), a token that was valid at its last check, has not expired, and was checked within
   * that many seconds is served from that last result; the validation says so (`stale`), and so
   * do the request's diagnostics and record.
   */
  staleIfErrorSeconds?: number;
  /**
   * Certificate-bound tokens (RFC 8705). `enforce` (the default): a token whose `cnf` (in its
   * introspection answer or its JWT claims) holds `x5t#S256` is accepted only from a request that
   * came with that client certificate (the SHA-256 of its DER, base64url): the gateway's TLS
   * listener asks clients for one (`serveGateway`'s `tls.clientCa`), or a TLS-terminating proxy
   * sends it (`createGateway`'s `clientCertificateHeader`); otherwise 401 `invalid_token`.
   * `ignore`: such a token is accepted as a bearer token. See docs/sender-constrained-tokens.md.
   */
  certificateBoundTokens?: 'enforce' | 'ignore';
  /**
   * Key rotation: least time between two fetches of the issuer's JWKS caused by JWTs signed with a
   * key (`kid`) the fetched set does not hold, in seconds. The first such JWT after
   * the cool-down makes one fetch (concurrent ones share it): a key the authorization server has
   * just added is then accepted. Meanwhile such JWTs are refused (401) without a fetch, so that
   * made-up `kid`s cannot make the gateway hammer the server, and their refusal is remembered
   * (`negativeCache`) only until the cool-down ends. A failed fetch counts too. Default 30.
   */
  jwksCooldownSeconds?: number;
  /**
   * JWT response for token introspection (RFC 9701). `true` (or an object that sets it, see
   * {@link SignedIntrospectionOptions}): introspection asks `Accept: application/token-introspection+jwt`
   * and accepts only an answer of that type, a JWS verified with a key of the issuer's JWKS
   * (`jwks_uri`, the same key set and cool-down as JWT validation), of `typ`
   * `token-introspection+jwt`, an allowed algorithm, `iss` the issuer, `aud` the policy's
   * `clientId`, an `iat` neither in the future nor older than `maxAgeSeconds` (each with
   * `clockSkew`), whose `token_introspection` object is then the introspection answer. Anything
   * else (plain JSON, another key, another `typ`, `iss` or `aud`...) means the authorization
   * server cannot be trusted now: 503 `ERR_AUTHORIZATION_SERVER_UNAVAILABLE`, never a valid
   * token, never cached. Unused with `introspection` off. Default `false`.
   */
  signedIntrospection?: boolean | SignedIntrospectionOptions;
  /**
   * Token results shared between gateway instances; see `createGateway({ redis })`. A second
   * cache level behind the policy's own: a token validated by one instance is not validated again
   * by the others (valid results and refusals, for the same lifetimes as here), and concurrent
   * validations of one token across instances make one call to the authorization server. A local
   * hit never asks Redis. When Redis is down or slow, the policy goes on with its own cache alone.
   * Results are shared between policies of the same name and the same validation settings.
   */
  shared?: SharedTokenResults;
  /**
   * DPoP (RFC 9449), sender-constrained tokens: `off` (the default) accepts Bearer tokens only;
   * `allowed` also accepts `Authorization: DPoP <token>` with a `DPoP` proof, and Bearer for
   * tokens that are not bound to a key; `required` accepts DPoP only. Every proof is checked as
   * RFC 9449 sections 4.3 and 7.1 ask (see `docs/sender-constrained-tokens.md`); a token bound to a
   * key (`cnf.jkt`) passes only with a proof signed by that key, never as Bearer (unless
   * {@link TokenPolicyOptions.certificateBoundTokens} is `ignore`). Needs
   * {@link TokenPolicyOptions.publicBaseUrl}.
   */
  dpop?: 'off' | 'allowed' | 'required';
  /** JWS algorithms a DPoP proof may be signed with (asymmetric only). Default `['ES256', 'PS256', 'EdDSA']`. */
  dpopSigningAlgs?: string[];
  /** Oldest DPoP proof accepted, seconds since its `iat` (also how long its `jti` is remembered). Default 300. */
  dpopProofMaxAgeSeconds?: number;
  /**
   * Most proofs of one key (one client) remembered within their lifetime; past it that key's proofs
   * are refused with 429 until some expire, and every other key's still pass. Default 20000 (a tenth
   * of what a process keeps).
   */
  dpopMaxProofsPerKey?: number;
  /**
   * `true`: the gateway issues DPoP nonces (RFC 9449 section 9): a proof without a current one is
   * refused with `error="use_dpop_nonce"` and a `DPoP-Nonce` header. Default `false`.
   */
  dpopNonce?: boolean;
  /**
   * The origin (and path prefix, if any) clients call the gateway at, such as
   * `https://api.example.org`: a DPoP proof's `htu` is checked against it and the request's path,
   * never against the request's `Host`. Needed with {@link TokenPolicyOptions.dpop}; the gateway
   * gives its own (`publicBaseUrl`).
   */
  publicBaseUrl?: string | URL;
  /**
   * Where the `jti`s of DPoP proofs are remembered, for the proof's lifetime: default this
   * process's memory; the gateway gives one on its Redis connection when it has one, so that a
   * proof accepted by one instance is refused by every other.
   */
  dpopReplay?: DpopReplayStore;
}
