/**
 * Token policies: which authorization server validates a token and how (spec 2.1). A policy is an
 * object the app creates once and passes to every route that uses it; it owns its discovery state,
 * its JWKS and its token cache.
 *
 * @module
 */
import { isIP } from 'node:net';
import { createRemoteJWKSet, jwtVerify, type CryptoKey, type JWTVerifyGetKey } from 'jose';
import * as client from 'openid-client';
import type { Configuration, ServerMetadata } from 'openid-client';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { TokenCache } from './cache.js';
import { boundedFetch } from './bounded-fetch.js';
import { checkAccessTokenType, checkClaims, checkTimeClaims, isExpired } from './checks.js';
import { classifyClientError, classifyJwtError, KeySetUnavailableError } from './classify.js';
import { toTokenInfo, type Claims } from './normalize.js';
import { shareTokenData } from './shared.js';
import type { TokenInfo } from '../context.js';

const log = logger('token');

/** How the gateway authenticates to the authorization server (introspection endpoint). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';

/** A private key for `private_key_jwt`, optionally with the `kid` to put in the assertion header. */
export type ClientPrivateKey =
  | CryptoKey
  | {
      /** The private signing key (WebCrypto `CryptoKey`), for example from `jose`'s `importPKCS8`. */
      key: CryptoKey;
      /** `kid` of the client assertion's JWS header, so the server picks the matching registered key. */
      kid?: string;
    };

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
  /** Other metadata, passed to openid-client as is. */
  [name: string]: unknown;
}

/** Options of {@link createTokenPolicy}. */
export interface TokenPolicyOptions {
  /** Policy name: the realm of the `WWW-Authenticate` challenges and the cache namespace. */
  name: string;
  /**
   * Issuer identifier; its metadata is discovered (OpenID Connect discovery, then the
   * openid-client default) at first use. Give this or {@link TokenPolicyOptions.metadata}.
   */
  issuer?: string | URL;
  /** Explicit authorization server metadata, instead of discovery. */
  metadata?: AuthorizationServerMetadata;
  /** The gateway's client id at the authorization server. */
  clientId: string;
  /** The gateway's client secret (`client_secret_basic`, `client_secret_post`). */
  clientSecret?: string;
  /** Client authentication method. Default `client_secret_basic`. */
  clientAuthMethod?: ClientAuthMethod;
  /** Private key of `private_key_jwt`. */
  privateKey?: ClientPrivateKey;
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
   * Largest body read from the authorization server (discovery, introspection, UserInfo), in bytes.
   * A larger answer is non-conforming: 503 `ERR_AUTHORIZATION_SERVER_UNAVAILABLE`, never cached, and
   * the rest of it is not read. Default 262144 (256 KiB).
   */
  maxResponseSize?: number;
  /** Tolerated clock difference for `exp`/`nbf`/`iat`, seconds. Default 5. */
  clockSkew?: number;
  /** Timeout of every call to the authorization server, milliseconds. Default 5000. */
  timeoutMs?: number;
  /**
   * Allow `http://` endpoints. Default: only when the issuer is a loopback address (127.0.0.0/8,
   * `::1`, `localhost`), for local development and tests.
   */
  allowInsecureRequests?: boolean;
  /**
   * Token-result cache: `ttlSeconds` (default 300) and `maxEntries` (default 10000); `false`
   * disables it. An entry never outlives the token's `exp`.
   */
  cache?:
    | false
    | {
        /** Longest time a valid result is reused, in seconds (capped by the token's `exp`). Default 300. */
        ttlSeconds?: number;
        /** Most results kept; when full, new results are not cached until entries expire. Default 10000. */
        maxEntries?: number;
      };
}

/**
 * The outcome of a successful validation. `info` and the claims are deeply frozen: they are the
 * policy's cached result, shared by every request with the same token (copy them to change them).
 */
export interface TokenValidation {
  /** Normalized token information. */
  info: TokenInfo;
  /** Introspection response, when introspection is on. */
  introspection?: Record<string, unknown>;
  /** JWT claims, when JWT validation is on. */
  jwt?: Record<string, unknown>;
  /** UserInfo response, when UserInfo is on. */
  userInfo?: Record<string, unknown>;
  /** Whether the result came from the cache. */
  cached: boolean;
}

interface CachedValidation {
  exp: number | undefined;
  info: TokenInfo;
  introspection?: Claims;
  jwt?: Claims;
  userInfo?: Claims;
}

const DEFAULT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

function optionalBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean`);
  return value;
}

/**
 * A token policy. Create it with {@link createTokenPolicy} (or `new TokenPolicy(options)`), once,
 * and pass it to `requireToken` and `introspect` on every route it protects.
 */
export class TokenPolicy {
  /** The policy name (the realm). */
  readonly name: string;
  private readonly options: Readonly<TokenPolicyOptions>;
  private readonly introspection: boolean;
  private readonly jwtValidation: boolean;
  private readonly userInfo: boolean;
  private readonly algorithms: string[];
  private readonly audience: string[];
  private readonly jwtTypes: ReadonlySet<string> | undefined;
  private readonly fetch: ReturnType<typeof boundedFetch>;
  private readonly clockSkew: number;
  private readonly timeout: number;
  private readonly insecure: boolean;
  private readonly cache: TokenCache<CachedValidation>;
  private configuration: Promise<Configuration> | undefined;
  private jwks: JWTVerifyGetKey | undefined;

  constructor(options: TokenPolicyOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
    const { name, issuer, metadata, clientId, clientSecret, privateKey } = options;
    if (typeof name !== 'string' || name === '') throw new TypeError('options.name must be a non-empty string');
    if (typeof clientId !== 'string' || clientId === '') throw new TypeError('options.clientId must be a non-empty string');
    if ((issuer === undefined) === (metadata === undefined)) throw new TypeError('give exactly one of options.issuer and options.metadata');
    let issuerUrl: URL;
    try {
      issuerUrl = new URL(issuer !== undefined ? String(issuer) : String(metadata?.issuer));
    } catch {
      throw new TypeError(issuer !== undefined ? 'options.issuer must be a URL' : 'options.metadata.issuer must be a URL');
    }
    const method = options.clientAuthMethod ?? 'client_secret_basic';
    if (!['client_secret_basic', 'client_secret_post', 'private_key_jwt'].includes(method)) {
      throw new TypeError("options.clientAuthMethod must be 'client_secret_basic', 'client_secret_post' or 'private_key_jwt'");
    }
    if (method !== 'private_key_jwt' && (typeof clientSecret !== 'string' || clientSecret === '')) {
      throw new TypeError(`options.clientSecret is required with ${method}`);
    }
    if (method === 'private_key_jwt' && (typeof privateKey !== 'object' || privateKey === null)) {
      throw new TypeError('options.privateKey is required with private_key_jwt');
    }
    this.introspection = optionalBoolean(options.introspection, 'options.introspection', true);
    this.jwtValidation = optionalBoolean(options.jwtValidation, 'options.jwtValidation', false);
    this.userInfo = optionalBoolean(options.userInfo, 'options.userInfo', false);
    if (!this.introspection && !this.jwtValidation && !this.userInfo) {
      throw new TypeError('at least one of options.introspection, options.jwtValidation, options.userInfo must be on');
    }
    const algorithms = options.jwtAlgorithms ?? DEFAULT_ALGORITHMS;
    if (!Array.isArray(algorithms) || algorithms.length === 0 || algorithms.some((a) => typeof a !== 'string' || a === 'none' || /^HS/i.test(a))) {
      throw new TypeError('options.jwtAlgorithms must be a non-empty array of asymmetric JWS algorithms');
    }
    const audience = options.audience === undefined ? [] : typeof options.audience === 'string' ? [options.audience] : options.audience;
    if (!Array.isArray(audience) || audience.some((a) => typeof a !== 'string' || a === '')) {
      throw new TypeError('options.audience must be a string or an array of strings');
    }
    const anyAudience = optionalBoolean(options.anyAudience, 'options.anyAudience', false);
    if (anyAudience && audience.length > 0) throw new TypeError('options.anyAudience: true cannot be given with options.audience');
    if (this.jwtValidation && audience.length === 0 && !anyAudience) {
      throw new TypeError('options.jwtValidation needs options.audience (or options.anyAudience: true to accept a JWT of the issuer meant for any audience)');
    }
    const jwtTypes = options.jwtTypes;
    if (jwtTypes !== undefined && (!Array.isArray(jwtTypes) || jwtTypes.length === 0 || jwtTypes.some((t) => typeof t !== 'string' || normalizeTyp(t) === ''))) {
      throw new TypeError("options.jwtTypes must be a non-empty array of JWT typ values, such as ['at+jwt']");
    }
    const maxResponseSize = options.maxResponseSize ?? 256 * 1024;
    if (!Number.isSafeInteger(maxResponseSize) || maxResponseSize <= 0) throw new TypeError('options.maxResponseSize must be a positive integer');
    const insecure = optionalBoolean(options.allowInsecureRequests, 'options.allowInsecureRequests', isLoopback(issuerUrl.hostname));
    if (issuerUrl.protocol === 'http:' && !insecure) {
      throw new TypeError('options.issuer uses http:// on a non-loopback host: set options.allowInsecureRequests to allow it');
    }
    if (options.cache !== undefined && options.cache !== false && (typeof options.cache !== 'object' || options.cache === null)) {
      throw new TypeError('options.cache must be false or an object');
    }
    const cacheSettings =
      options.cache === false
        ? undefined
        : { ttl: positive(options.cache?.ttlSeconds, 'options.cache.ttlSeconds', 300), maxEntries: Math.floor(positive(options.cache?.maxEntries, 'options.cache.maxEntries', 10_000)) };

    this.name = name;
    this.options = { ...options };
    this.algorithms = [...algorithms];
    this.audience = [...audience];
    this.jwtTypes = jwtTypes === undefined ? undefined : new Set(jwtTypes.map(normalizeTyp));
    this.fetch = boundedFetch(maxResponseSize);
    this.clockSkew = options.clockSkew === undefined ? 5 : clockSkewOf(options.clockSkew);
    // openid-client counts in seconds; our options, like the configuration file, in milliseconds.
    this.timeout = positive(options.timeoutMs, 'options.timeoutMs', 5000) / 1000;
    this.insecure = insecure;
    this.cache = new TokenCache<CachedValidation>(name, cacheSettings);
  }

  /** Which validations the policy performs (spec 2.1 switches). */
  get switches(): {
    /** Validates by RFC 7662 introspection (option `introspection`, default `true`). */
    introspection: boolean;
    /** Validates the token as a JWT against the issuer's JWKS (option `jwtValidation`, default `false`). */
    jwtValidation: boolean;
    /** Calls the UserInfo endpoint with the token (option `userInfo`, default `false`). */
    userInfo: boolean;
  } {
    return { introspection: this.introspection, jwtValidation: this.jwtValidation, userInfo: this.userInfo };
  }

  /** Number of token results currently cached. */
  get cacheSize(): number {
    return this.cache.size;
  }

  /**
   * Forgets every cached token result (the ResetAllCaches runtime tool). With `discovery: true`
   * also forgets the discovered metadata and JWKS, which are then fetched again at next use.
   */
  clearCache(options: { discovery?: boolean } = {}): void {
    this.cache.clear();
    if (options.discovery === true) {
      this.configuration = undefined;
      this.jwks = undefined;
    }
    log('policy %s: cache cleared', this.name);
  }

  /** Stops the cache timers (they do not keep the process alive anyway). */
  close(): void {
    this.cache.close();
  }

  /**
   * Validates a token with the policy's switches. Resolves with the normalized information, or
   * rejects with the {@link GatewayError} to answer with: `ERR_TOKEN_INVALID` / `ERR_TOKEN_EXPIRED`
   * (401), or `ERR_AUTHORIZATION_SERVER_UNAVAILABLE` (503) when the authorization server could not
   * be used. Valid results are cached; concurrent validations of one token share one call.
   */
  async validate(token: string): Promise<TokenValidation> {
    const key = this.cache.key(token);
    const hit = this.cachedResult(key);
    if (hit !== undefined) return hit;
    const fresh = await this.cache.singleFlight(key, async () => {
      try {
        const value = await this.validateUncached(token);
        this.cache.set(key, value, Math.floor(Date.now() / 1000));
        return value;
      } catch (err) {
        const known = this.cache.knownExpiry(key);
        if (err instanceof GatewayError && err.code === 'ERR_TOKEN_INVALID' && isExpired(known, Math.floor(Date.now() / 1000), this.clockSkew)) {
          // Introspection only says "inactive"; we know this token and when it expired.
          throw new GatewayError('ERR_TOKEN_EXPIRED', { realm: this.name, diagnostic: `${err.diagnostic ?? 'invalid'}; the token expired at ${known}` });
        }
        throw err;
      }
    });
    return result(fresh, false);
  }

  /**
   * The cached result for `token`, answered synchronously (no call, no promise): `undefined` when
   * the token has no cached valid result. Throws `ERR_TOKEN_EXPIRED` (and forgets the result) when
   * the cached token has expired since. `introspect` tries it before {@link TokenPolicy.validate},
   * so that a cache hit costs no asynchronous round.
   */
  validateFromCache(token: string): TokenValidation | undefined {
    return this.cachedResult(this.cache.key(token));
  }

  private cachedResult(key: string): TokenValidation | undefined {
    const hit = this.cache.get(key);
    if (hit === undefined) return undefined;
    if (isExpired(hit.exp, Math.floor(Date.now() / 1000), this.clockSkew)) {
      this.cache.delete(key);
      throw new GatewayError('ERR_TOKEN_EXPIRED', { realm: this.name, diagnostic: 'cached token has expired (exp)' });
    }
    return result(hit, true);
  }

  private async validateUncached(token: string): Promise<CachedValidation> {
    const config = await this.discover();
    const issuer = config.serverMetadata().issuer;
    const checks = { realm: this.name, clockSkew: this.clockSkew, audience: this.audience, issuer };
    const value: CachedValidation = { exp: undefined, info: toTokenInfo({}) };

    if (this.jwtValidation) {
      const keys = this.keySet(config);
      try {
        const { payload, protectedHeader } = await jwtVerify(token, keys, {
          algorithms: this.algorithms,
          issuer,
          ...(this.audience.length > 0 ? { audience: this.audience } : {}),
          clockTolerance: this.clockSkew,
          // A token that never expires is not one the gateway accepts.
          requiredClaims: ['exp'],
        });
        if (this.jwtTypes !== undefined && !this.jwtTypes.has(typeof protectedHeader.typ === 'string' ? normalizeTyp(protectedHeader.typ) : '')) {
          throw new GatewayError('ERR_TOKEN_INVALID', { realm: this.name, diagnostic: 'jwt: typ is not one of options.jwtTypes' });
        }
        value.jwt = { ...payload };
      } catch (err) {
        throw classifyJwtError(err, this.name);
      }
      checkTimeClaims(value.jwt, this.name, 'jwt');
    }

    if (this.introspection) {
      let response: Claims;
      try {
        response = { ...(await client.tokenIntrospection(config, token, { token_type_hint: 'access_token' })) };
      } catch (err) {
        throw classifyClientError(err, this.name, 'introspection');
      }
      if (response['active'] !== true) throw new GatewayError('ERR_TOKEN_INVALID', { realm: this.name, diagnostic: 'introspection: active is false' });
      checkAccessTokenType(response, this.name, 'introspection');
      checkClaims(response, { ...checks, now: Math.floor(Date.now() / 1000) }, 'introspection');
      value.introspection = response;
    }

    if (this.userInfo) {
      const subject = value.introspection?.['sub'] ?? value.jwt?.['sub'];
      try {
        const response = await client.fetchUserInfo(config, token, typeof subject === 'string' ? subject : client.skipSubjectCheck);
        value.userInfo = { ...response };
      } catch (err) {
        throw classifyClientError(err, this.name, 'userinfo');
      }
      // Its times, if any, end up in the token information too.
      checkTimeClaims(value.userInfo, this.name, 'userinfo');
    }

    value.info = toTokenInfo(value);
    value.exp = value.info.expiresAt;
    // Frozen once here, then shared by every request with this token (no copy per request).
    return shareTokenData(value);
  }

  /** The openid-client configuration: discovered once, shared, retried after a failure. */
  private discover(): Promise<Configuration> {
    if (this.configuration === undefined) {
      const attempt = this.createConfiguration();
      this.configuration = attempt;
      attempt.catch(() => {
        // Forget the failure so that the next request tries again.
        if (this.configuration === attempt) this.configuration = undefined;
      });
    }
    return this.configuration;
  }

  private async createConfiguration(): Promise<Configuration> {
    const { options } = this;
    const auth = clientAuth(options);
    const clientMetadata = options.clientSecret !== undefined ? { client_secret: options.clientSecret } : {};
    if (options.metadata !== undefined) {
      const config = new client.Configuration(options.metadata as ServerMetadata, options.clientId, clientMetadata, auth);
      config[client.customFetch] = this.fetch;
      if (this.insecure) client.allowInsecureRequests(config);
      config.timeout = this.timeout;
      return config;
    }
    try {
      const config = await client.discovery(new URL(String(options.issuer)), options.clientId, clientMetadata, auth, {
        timeout: this.timeout,
        // Also the configuration's fetch afterwards (introspection, UserInfo).
        [client.customFetch]: this.fetch,
        ...(this.insecure ? { execute: [client.allowInsecureRequests] } : {}),
      });
      log('policy %s: discovered %s', this.name, config.serverMetadata().issuer);
      return config;
    } catch (err) {
      const error = classifyClientError(err, this.name, 'discovery');
      log('policy %s: discovery failed: %s', this.name, error.diagnostic);
      throw error;
    }
  }

  /** The policy's key getter over the issuer's JWKS (one `createRemoteJWKSet` per policy). */
  private keySet(config: Configuration): JWTVerifyGetKey {
    if (this.jwks === undefined) {
      const uri = config.serverMetadata().jwks_uri;
      if (uri === undefined) {
        throw new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm: this.name, diagnostic: 'jwks: the issuer publishes no jwks_uri' });
      }
      const remote = createRemoteJWKSet(new URL(uri), { timeoutDuration: Math.round(this.timeout * 1000) });
      this.jwks = async (header, token) => {
        try {
          return await remote(header, token);
        } catch (err) {
          // "No key for this token" is the token's fault; anything else is the key source's.
          if (err instanceof Error && 'code' in err && (err.code === 'ERR_JWKS_NO_MATCHING_KEY' || err.code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS')) throw err;
          throw new KeySetUnavailableError(err);
        }
      };
    }
    return this.jwks;
  }
}

/** A `typ` as RFC 7515 section 4.1.9 compares it: case-insensitive, `application/` implied. */
function normalizeTyp(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

function clockSkewOf(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new TypeError('options.clockSkew must be a non-negative number');
  return value;
}

function clientAuth(options: TokenPolicyOptions): client.ClientAuth {
  switch (options.clientAuthMethod ?? 'client_secret_basic') {
    case 'client_secret_post':
      return client.ClientSecretPost(options.clientSecret);
    case 'private_key_jwt':
      return client.PrivateKeyJwt(options.privateKey as ClientPrivateKey);
    default:
      return client.ClientSecretBasic(options.clientSecret);
  }
}

/**
 * The outcome handed to a request: the cached data itself, which {@link shareTokenData} froze, so
 * that a middleware changing it cannot alter the cache (nor what other requests see), at no
 * per-request copy.
 */
function result(value: CachedValidation, cached: boolean): TokenValidation {
  const out: TokenValidation = { info: value.info, cached };
  if (value.introspection !== undefined) out.introspection = value.introspection;
  if (value.jwt !== undefined) out.jwt = value.jwt;
  if (value.userInfo !== undefined) out.userInfo = value.userInfo;
  return out;
}

/**
 * Creates a {@link TokenPolicy}.
 *
 * @example
 * ```ts
 * import { createTokenPolicy } from 'express-access-gateway';
 *
 * const idp = createTokenPolicy({
 *   name: 'my-idp',
 *   issuer: 'https://idp.example.com',
 *   clientId: 'gateway',
 *   clientSecret: 'gateway-secret',
 *   audience: 'petstore-api',
 * });
 * ```
 */
export function createTokenPolicy(options: TokenPolicyOptions): TokenPolicy {
  return new TokenPolicy(options);
}
