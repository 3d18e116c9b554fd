/**
 * Token policies (docs/token-policies.md): which authorization server validates a token and how.
 * A policy is an object the app creates once and passes to every route that uses it; it owns its
 * discovery state, its JWKS, its token caches and the bounds that protect its authorization server.
 *
 * @module
 */
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { errors as joseErrors, jwtVerify } from 'jose';
import * as client from 'openid-client';
import type { Configuration } from 'openid-client';
import { SharedTokenResults, type SharedLookup, type SharedTicket } from '../cluster/shared-token-results.js';
import { GatewayError, type DpopChallenge } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks } from '../options.js';
import { boundedFetch } from './bounded-fetch.js';
import { TokenCache, type Refusal } from './cache.js';
import { checkAccessTokenType, checkClaims, checkTimeClaims, isExpired } from './checks.js';
import { classifyClientError, classifyJwtError, refusedClientAuthentication } from './classify.js';
import { createPolicyKeySet, type PolicyKeySet } from './key-set.js';
import { CallLimiter } from './limiter.js';
import type { TokenPolicyOptions } from './policy-options.js';
import { resolvePolicyClient, type PolicyClient } from './policy-client.js';
import { normalizeTyp, tokenPolicySettings, type TokenPolicySettings } from './policy-settings.js';
import { toTokenInfo, type Claims } from './normalize.js';
import { shareTokenData } from './validated-data.js';
import { InvalidTokenThrottle } from './throttle.js';
import { checkFailure, probeIntrospection, type TokenPolicyCheck } from './policy-check.js';
import type { BindingRefusalReason, TokenBinding, TokenContext, TokenInfo } from '../context.js';
import { boundBearerRefusal, boundKey, DpopGuard, dpopRefusalReason } from './binding/dpop.js';

export type { ClientAuthMethod, ClientPrivateKey, CredentialsAuthMethod } from './client-auth.js';
export type { ForgetSelector } from './cache.js';
export type { TokenPolicyCheck } from './policy-check.js';

const log = logger('token');

/**
 * The outcome of a successful validation. `info` and the claims are deeply frozen: they are the
 * policy's cached result, shared by every request with the same token (copy them to change them).
 */
export interface TokenValidation {
  /** Normalized information. */
  info: TokenInfo;
  /** Introspection response, when introspection is on. */
  introspection?: Record<string, unknown>;
  /** JWT claims, when JWT validation is on. */
  jwt?: Record<string, unknown>;
  /** UserInfo response, when UserInfo is on. */
  userInfo?: Record<string, unknown>;
  /** Whether the result came from the cache (this instance's or the one shared between instances). */
  cached: boolean;
  /** Set when the result came from the cache shared between gateway instances (option `shared`). */
  shared?: boolean;
  /**
   * Set when the result is a stale one served because the authorization server could not be used
   * (option `staleIfErrorSeconds`): when it was last checked, and why it could not be checked now.
   */
  stale?: {
    /** Epoch milliseconds of the last successful check. */
    checkedAt: number;
    /** The diagnostic of the failure (for example `introspection: unreachable (ECONNREFUSED)`). */
    cause: string;
  };
}

interface CachedValidation {
  exp: number | undefined;
  info: TokenInfo;
  introspection?: Claims;
  jwt?: Claims;
  userInfo?: Claims;
}

/** What one validation flight yields: the result, and whether it is a stale or a shared one. */
interface Flight {
  value: CachedValidation;
  stale?: TokenValidation['stale'];
  shared?: boolean;
}

/** Where the answer of a token validation came from (label `source` of `gateway_token_validations_total`).  @internal */
export type TokenValidationSource = 'local_cache' | 'shared_cache' | 'negative_cache' | 'introspection' | 'jwt' | 'userinfo';
/** How a token validation ended (label `result`).  @internal */
export type TokenValidationResult = 'valid' | 'invalid' | 'unavailable';
/** An endpoint of the authorization server (label `endpoint`).  @internal */
export type AuthorizationServerEndpoint = 'introspection' | 'userinfo' | 'jwks' | 'discovery';

/** What a gateway watches of a policy: each validation, and each call to the authorization server.  @internal */
export interface TokenPolicyObserver {
  /** One validation answered (a throttled one, answered 429 without looking, is not one). */
  validated(source: TokenValidationSource, result: TokenValidationResult): void;
  /** Runs one call to the authorization server (timed, traced). */
  call<T>(endpoint: AuthorizationServerEndpoint, run: () => Promise<T>): Promise<T>;
  /** A sender-constrained token refused on a request, by the kind of its binding and why. */
  bindingRefused?(kind: TokenBinding['kind'], reason: BindingRefusalReason): void;
}

/** What a validation saw on its way, for its refusal: the server's claims, the step, an unknown signing key. */
interface Seen {
  claims?: Claims;
  step?: TokenValidationSource;
  /** Set when the JWT's key is not in the JWKS: when the cool-down lets the JWKS be fetched again (epoch ms). */
  keyUnknownUntil?: number;
}

/** The step of a validation that failed, on its error (shared by the requests that waited for the same flight). */
const failedSources = new WeakMap<object, TokenValidationSource>();

/**
 * A token policy. Create it with {@link createTokenPolicy} (or `new TokenPolicy(options)`), once,
 * and pass it to `requireToken` and `introspect` on every route it protects.
 */
export class TokenPolicy {
  /** The policy name (the realm). */
  readonly name: string;
  private readonly options: Readonly<TokenPolicyOptions>;
  private readonly settings: TokenPolicySettings;
  // Copies of the settings' lists: jose's verify options take mutable arrays.
  private readonly algorithms: string[];
  private readonly audience: string[];
  private readonly fetch: ReturnType<typeof boundedFetch>;
  /** What `introspect` does with certificate-bound tokens (option `certificateBoundTokens`). */
  readonly certificateBoundTokens: 'enforce' | 'ignore';
  private readonly cache: TokenCache<CachedValidation>;
  private readonly limiter: CallLimiter | undefined;
  private readonly throttle: InvalidTokenThrottle | undefined;
  private readonly throttleText: string;
  private readonly inflight = new Map<string, Promise<Flight>>();
  private readonly shared: SharedTokenResults | undefined;
  /** The policy's part of the shared keys: its name and a fingerprint of its validation settings. */
  private readonly sharedScope: string;
  private readonly validTtlMs: number | undefined;
  private readonly refusalTtlMs: number | undefined;
  /** Shared deletions of `forget` under way: shared lookups wait for them. */
  private sharedForget: Promise<unknown> | undefined;
  private resolved: Promise<PolicyClient> | undefined;
  /** The issuer's JWKS, made at its first use (after discovery). */
  private keys: PolicyKeySet | undefined;
  private observer: TokenPolicyObserver | undefined;
  /** The DPoP checks, when `dpop` is on. */
  private readonly dpopGuard: DpopGuard | undefined;

  constructor(options: TokenPolicyOptions) {
    const settings = tokenPolicySettings(options);
    const { name, cache, negativeCache, throttle } = settings;
    this.name = name;
    this.options = { ...options, clientId: settings.clientId };
    this.settings = settings;
    this.algorithms = [...settings.algorithms];
    this.audience = [...settings.audience];
    this.fetch = boundedFetch(settings.maxResponseSize);
    this.certificateBoundTokens = settings.certificateBoundTokens;
    this.cache = new TokenCache<CachedValidation>(
      cache === undefined
        ? undefined
        : {
            ttl: cache.ttlSeconds,
            maxEntries: cache.maxEntries,
            maxBytes: cache.maxBytes,
            staleIfError: settings.staleIfErrorSeconds,
          },
      negativeCache === undefined ? undefined : { ttl: negativeCache.ttlSeconds, maxEntries: negativeCache.maxEntries },
    );
    // Only validations that call the server per token need a slot.
    this.limiter = settings.introspection || settings.userInfo ? new CallLimiter(settings.maxConcurrentCalls) : undefined;
    this.throttle = throttle === undefined ? undefined : new InvalidTokenThrottle(throttle);
    this.throttleText = throttle === undefined ? '' : `${throttle.maxRefusals} tokens refused within ${throttle.windowSeconds} s`;
    this.validTtlMs = cache === undefined ? undefined : cache.ttlSeconds * 1000;
    this.refusalTtlMs = negativeCache === undefined ? undefined : negativeCache.ttlSeconds * 1000;
    // Nothing to share without a cache.
    this.shared = this.validTtlMs === undefined && this.refusalTtlMs === undefined ? undefined : settings.shared;
    this.sharedScope = `${encodeURIComponent(name)}:${this.fingerprint()}`;
    this.dpopGuard =
      settings.dpop === undefined ? undefined : new DpopGuard(settings.dpop, name, settings.clockSkew, options.clientSecret ?? undefined);
  }

  /** DPoP (RFC 9449): `off`, `allowed` or `required` (option `dpop`). */
  get dpop(): 'off' | 'allowed' | 'required' {
    return this.dpopGuard === undefined ? 'off' : this.dpopGuard.acceptsBearer ? 'allowed' : 'required';
  }

  /** Tolerated clock difference, in seconds, for the token's times (option `clockSkew`, default 5). */
  get clockTolerance(): number {
    return this.settings.clockSkew;
  }

  /**
   * The DPoP challenge an error of this policy's token carries on `req` (RFC 9449 section 7.1):
   * `undefined` when the policy has DPoP off. For a refusal raised after validation (step-up
   * authentication) that must be challenged as the policy's own refusals are.  @internal
   */
  dpopChallenge(req: IncomingMessage): DpopChallenge | undefined {
    const scheme = (req as { gateway?: { token?: TokenContext } }).gateway?.token?.scheme;
    return this.dpopGuard?.challenge(scheme, false);
  }

  /** The JWS algorithms a DPoP proof may be signed with (option `dpopSigningAlgs`); `undefined` with `dpop` off. */
  get dpopSigningAlgs(): readonly string[] | undefined {
    return this.dpopGuard?.algorithms;
  }

  /**
   * Checks how a validated token is bound against the request (the one call of sender-constrained
   * tokens): a DPoP-bound token (`cnf.jkt`) passes only under the DPoP scheme with a valid proof
   * of its key, which sets `token.binding`; sent as Bearer, it is refused, unless the policy's
   * `certificateBoundTokens` is `ignore` (then it is a bearer token, its binding noted `ignored`,
   * where the policy accepts Bearer tokens). Returns `undefined` when nothing is left to check,
   * else the promise of the proof's checks; throws or rejects with the refusal (DPoP challenge
   * attached).  @internal
   */
  checkBinding(req: IncomingMessage, token: TokenContext, validation: TokenValidation): Promise<void> | undefined {
    try {
      const guard = this.dpopGuard;
      if (token.scheme !== 'DPoP' && (guard === undefined || guard.acceptsBearer)) {
        // A Bearer token the policy accepts as such, unless it is bound to a key (RFC 9449 section 7.2).
        const jkt = boundKey(validation, this.name);
        if (jkt === undefined) return undefined;
        if (this.certificateBoundTokens === 'enforce') throw boundBearerRefusal(this.name, guard === undefined);
        token.binding = { kind: 'jkt', thumbprint: jkt, result: 'ignored' };
        return undefined;
      }
      if (guard === undefined) throw boundBearerRefusal(this.name, true);
      const pending = guard.check(req, token, validation);
      return pending === undefined
        ? undefined
        : pending.catch((err: unknown) => Promise.reject(this.bindingFailure(req, token, validation, err)));
    } catch (err) {
      throw this.bindingFailure(req, token, validation, err);
    }
  }

  /** A refusal of the binding checks: noted on the token (for the record), counted, with the policy's challenge. */
  private bindingFailure(req: IncomingMessage, token: TokenContext, validation: TokenValidation, err: unknown): unknown {
    const reason = dpopRefusalReason(err);
    if (reason !== undefined) {
      let thumbprint = '';
      try {
        thumbprint = boundKey(validation, this.name) ?? '';
      } catch {
        // A malformed cnf: refused for that, no thumbprint to tell.
      }
      token.binding = { kind: 'jkt', thumbprint, result: 'refused', reason };
      this.observer?.bindingRefused?.('jkt', reason);
    }
    return this.withChallenge(req, err);
  }

  /**
   * The error to answer with for a request of this policy: with DPoP on, a token error carries the
   * DPoP challenge (`algs`; the error told in it when the request used DPoP or Bearer is refused;
   * `DPoP-Nonce` for a missing nonce).  @internal
   */
  withChallenge(req: IncomingMessage, err: unknown): unknown {
    const guard = this.dpopGuard;
    if (guard === undefined || !(err instanceof GatewayError) || err.definition.challenge === undefined || err.dpop !== undefined)
      return err;
    const scheme = (req as { gateway?: { token?: TokenContext } }).gateway?.token?.scheme;
    return new GatewayError(err.code, {
      params: err.params,
      ...(err.realm === undefined ? {} : { realm: err.realm }),
      ...(err.diagnostic === undefined ? {} : { diagnostic: err.diagnostic }),
      ...(err.retryAfter === undefined ? {} : { retryAfter: err.retryAfter }),
      cause: err.cause ?? err,
      dpop: guard.challenge(scheme, err.code === 'ERR_DPOP_NONCE_REQUIRED'),
    });
  }

  /**
   * What decides whether this policy accepts a token, hashed: two policies share results only
   * when they would validate alike (instances running different configurations never take each
   * other's results).
   */
  private fingerprint(): string {
    const { options } = this;
    const settings = {
      issuer: this.settings.issuerUrl.href,
      metadataIssuer: options.metadata?.issuer,
      explicit: this.settings.explicit,
      clientId: options.clientId,
      switches: [this.settings.introspection, this.settings.jwtValidation, this.settings.userInfo],
      algorithms: this.algorithms,
      audience: this.audience,
      jwtTypes: this.settings.jwtTypes === undefined ? undefined : [...this.settings.jwtTypes],
      clockSkew: this.settings.clockSkew,
      signedIntrospection: this.settings.signedIntrospection,
    };
    return hash('sha256', JSON.stringify(settings), 'base64url').slice(0, 16);
  }

  /** Which validations the policy performs: introspection, JWT validation, UserInfo. */
  get switches(): {
    /** Validates by RFC 7662 introspection (option `introspection`, default `true`). */
    introspection: boolean;
    /** Validates the token as a JWT against the issuer's JWKS (option `jwtValidation`, default `false`). */
    jwtValidation: boolean;
    /** Calls the UserInfo endpoint with the token (option `userInfo`, default `false`). */
    userInfo: boolean;
  } {
    return { introspection: this.settings.introspection, jwtValidation: this.settings.jwtValidation, userInfo: this.settings.userInfo };
  }

  /** Number of valid token results currently cached. */
  get cacheSize(): number {
    return this.cache.size;
  }

  /** Valid results and refusals cached now, and the estimated bytes of the valid ones.  @internal */
  get cacheSizes(): { valid: number; negative: number; bytes: number } {
    return { valid: this.cache.size, negative: this.cache.refusalCount, bytes: this.cache.bytes };
  }

  /** Sets (or removes) the observer of validations and authorization server calls.  @internal */
  observe(observer: TokenPolicyObserver | undefined): void {
    this.observer = observer;
  }

  /** Counts a sender-constrained token refused on a request (`gateway_token_binding_refusals_total`).  @internal */
  bindingRefused(kind: TokenBinding['kind'], reason: BindingRefusalReason): void {
    this.observer?.bindingRefused?.(kind, reason);
  }

  /** Where an uncached validation's answer comes from when it succeeds: the step that decides. */
  private get serverSource(): TokenValidationSource {
    return this.settings.introspection ? 'introspection' : this.settings.jwtValidation ? 'jwt' : 'userinfo';
  }

  /** A call to the authorization server, through the observer when there is one. */
  private call<T>(endpoint: AuthorizationServerEndpoint, run: () => Promise<T>): Promise<T> {
    return this.observer === undefined ? run() : this.observer.call(endpoint, run);
  }

  /** Counts a validation that failed (its step, or the cache, said so on the error). */
  private countFailure(err: unknown): void {
    const observer = this.observer;
    if (observer === undefined || !(err instanceof GatewayError)) return;
    const result: TokenValidationResult | undefined =
      err.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE'
        ? 'unavailable'
        : err.code === 'ERR_TOKEN_INVALID' || err.code === 'ERR_TOKEN_EXPIRED'
          ? 'invalid'
          : undefined;
    if (result !== undefined) observer.validated(failedSources.get(err) ?? this.serverSource, result);
  }

  /**
   * Forgets every cached token result, valid and refused (the ResetAllCaches runtime tool).
   * Validations already running do not cache theirs. With `discovery: true` also forgets the
   * discovered metadata, the JWKS and the gateway's own bearer token, fetched again at next use.
   * With `shared`, the shared results stay: the cluster's reset (`GatewayCluster.resetAll`)
   * forgets them, for every instance at once.
   */
  clearCache(options: { discovery?: boolean } = {}): void {
    this.cache.clear();
    if (options.discovery === true) {
      this.resolved = undefined;
      this.keys = undefined;
    }
    log('policy %s: cache cleared', this.name);
  }

  /**
   * Forgets the cached results, valid and refused, of the tokens whose normalized information has
   * the selector's `subject` and/or `clientId` (both must match when both are given), for an
   * incident, without flushing everyone: their next request is validated again. Returns how many
   * results were dropped. A refusal is forgotten only when the server's answer named the token's
   * subject or client (an inactive token's answer names nobody). With `shared`, the shared results
   * of those tokens are deleted too (in the background; this policy's lookups wait for it); other
   * instances keep their own cached copies until they forget them too or their lifetime ends.
   *
   * @throws TypeError when the selector names neither a subject nor a client id.
   */
  forget(selector: {
    /** `sub` of the token (its normalized `subject`). */
    subject?: string;
    /** Client id of the token (its normalized `clientId`: `azp`, else `client_id`). */
    clientId?: string;
  }): number {
    const check = optionChecks('TokenPolicy.forget');
    check.object(selector, '');
    const subject = selector.subject === undefined ? undefined : check.string(selector.subject, 'subject');
    const clientId = selector.clientId === undefined ? undefined : check.string(selector.clientId, 'clientId');
    if (subject === undefined && clientId === undefined) check.fail('', 'must name a subject or a clientId');
    const forgotten = { ...(subject === undefined ? {} : { subject }), ...(clientId === undefined ? {} : { clientId }) };
    const dropped = this.cache.forget(forgotten);
    log('policy %s: forgot %d cached results', this.name, dropped);
    if (this.shared !== undefined) {
      const deletion = Promise.all([this.sharedForget, this.shared.forget(this.sharedScope, forgotten)]);
      this.sharedForget = deletion;
      void deletion.finally(() => {
        if (this.sharedForget === deletion) this.sharedForget = undefined;
      });
    }
    return dropped;
  }

  /**
   * Checks that the authorization server can be used as configured: runs discovery (unless the
   * metadata is given) and, with introspection on, introspects a made-up token, which proves the
   * gateway's client authentication (`invalid_client`/401 means a wrong client id or secret;
   * `active: false` means it authenticated). Resolves with `{ ok: true }` or `{ ok: false, cause }`;
   * never rejects for a problem of the server, and the cause never holds a token or a secret. The
   * calls are the policy's own (metrics, traces, the gateway logger's watch see them).
   */
  async check(): Promise<TokenPolicyCheck> {
    try {
      const { config, bearer } = await this.discover();
      if (this.settings.introspection) {
        try {
          await this.call('introspection', () => probeIntrospection(config));
        } catch (err) {
          if (bearer !== undefined && refusedClientAuthentication(err, 'introspection')) bearer.forget();
          throw err;
        }
      }
      return { ok: true };
    } catch (err) {
      return checkFailure(err, this.name);
    }
  }

  /** Drops the policy's cached results (a policy retired by a configuration reload). */
  close(): void {
    this.cache.clear();
    this.throttle?.clear();
  }

  /**
   * Validates a token with the policy's switches. Resolves with the normalized information, or
   * rejects with the {@link GatewayError} to answer with: `ERR_TOKEN_INVALID` / `ERR_TOKEN_EXPIRED`
   * (401, remembered for `negativeCache.ttlSeconds`), `ERR_TOKEN_THROTTLED` (429, see
   * `invalidTokenThrottle`), or `ERR_AUTHORIZATION_SERVER_UNAVAILABLE` (503) when the
   * authorization server could not be used. Valid results are cached; concurrent validations of
   * one token share one call; at most `maxConcurrentCalls` calls are in flight.
   *
   * @param request - who sent the token (its address, for the throttle of invalid tokens).
   */
  async validate(
    token: string,
    request: {
      /** The client's address (an IP address, or any stable identifier of the caller), for the throttle of invalid tokens. */
      clientAddress?: string;
    } = {},
  ): Promise<TokenValidation> {
    const key = this.cache.key(token);
    const hit = this.cachedResult(key);
    if (hit !== undefined) return hit;
    const address = request.clientAddress;
    if (this.throttle?.throttled(address)) {
      // A token another instance knows is not unknown: only the shared cache is asked.
      const known = this.shared === undefined ? undefined : await this.knownShared(key);
      if (known !== undefined) {
        this.observer?.validated('shared_cache', 'valid');
        return known;
      }
      throw this.throttled(address!);
    }
    let flight = this.inflight.get(key);
    if (flight === undefined) {
      flight = this.fly(key, token, address).finally(() => this.inflight.delete(key));
      this.inflight.set(key, flight);
    }
    let answer: Flight;
    try {
      answer = await flight;
    } catch (err) {
      this.countFailure(err);
      throw err;
    }
    const { value, stale, shared } = answer;
    // A stale result is served because the server could not be used: counted as such.
    this.observer?.validated(shared === true ? 'shared_cache' : this.serverSource, stale === undefined ? 'valid' : 'unavailable');
    const out = result(value, shared === true);
    if (shared === true) out.shared = true;
    if (stale !== undefined) out.stale = stale;
    return out;
  }

  /**
   * The cached answer for `token`, given synchronously (no call, no promise): the valid result,
   * or `undefined` when there is none. Throws the remembered refusal when the token was refused
   * lately, and `ERR_TOKEN_EXPIRED` (forgetting the result) when a cached token has expired since.
   * `introspect` tries it before {@link TokenPolicy.validate}, so that a cache hit costs no
   * asynchronous round.
   */
  validateFromCache(token: string): TokenValidation | undefined {
    return this.cachedResult(this.cache.key(token));
  }

  private cachedResult(key: string): TokenValidation | undefined {
    const now = Date.now();
    const hit = this.cache.fresh(key, now);
    if (hit !== undefined) {
      if (isExpired(hit.exp, Math.floor(now / 1000), this.settings.clockSkew)) {
        this.cache.delete(key);
        this.observer?.validated('local_cache', 'invalid');
        throw new GatewayError('ERR_TOKEN_EXPIRED', { realm: this.name, diagnostic: 'cached token has expired (exp)' });
      }
      this.observer?.validated('local_cache', 'valid');
      return result(hit, true);
    }
    const refusal = this.cache.refusal(key);
    if (refusal !== undefined) {
      this.observer?.validated('negative_cache', 'invalid');
      throw new GatewayError(refusal.code, { realm: this.name, diagnostic: `${refusal.diagnostic} (remembered)` });
    }
    return undefined;
  }

  private throttled(address: string): GatewayError {
    return new GatewayError('ERR_TOKEN_THROTTLED', {
      realm: this.name,
      ...(this.throttle === undefined ? {} : { retryAfter: this.throttle.retryAfterSeconds(address) }),
      diagnostic: `${this.throttleText} from ${address}: its unknown tokens are refused without calling the authorization server`,
    });
  }

  /**
   * One validation of an uncached token, shared by the requests that carry it meanwhile: from
   * the shared cache when another instance validated it (or validates it now: then waits for its
   * result), else by the authorization server.
   */
  private async fly(key: string, token: string, address: string | undefined): Promise<Flight> {
    const generation = this.cache.generation;
    let ticket: SharedTicket | undefined;
    if (this.shared !== undefined) {
      if (this.sharedForget !== undefined) await this.sharedForget;
      const found = await this.shared.lookup(this.sharedScope, key, this.validTtlMs === undefined ? undefined : this.settings.timeoutMs);
      if (found.kind !== 'miss') return this.adoptShared(key, found, generation);
      ticket = found.ticket;
    }
    try {
      return await this.flyUncached(key, token, address, generation, ticket);
    } finally {
      if (ticket !== undefined) this.shared!.release(ticket);
    }
  }

  /** The result of a token the shared cache knows, if any (no lock, no wait). */
  private async knownShared(key: string): Promise<TokenValidation | undefined> {
    const generation = this.cache.generation;
    const found = await this.shared!.peek(this.sharedScope, key);
    if (found === undefined) return undefined;
    const out = result(this.adoptShared(key, found, generation).value, true);
    out.shared = true;
    return out;
  }

  /**
   * A result of the shared cache, stored in the local one (under its generation rule, its
   * freshness counted from the original check) and answered; a shared refusal is thrown.
   */
  private adoptShared(key: string, found: Exclude<SharedLookup, { kind: 'miss' }>, generation: number): Flight {
    const now = Date.now();
    if (found.kind === 'refused') {
      const { refusal } = found;
      this.cache.refuse(key, refusal, generation, this.refusalTtlMs === undefined ? 0 : found.refusedAt + this.refusalTtlMs - now);
      throw sharedFailure(
        new GatewayError(refusal.code, { realm: this.name, diagnostic: `${refusal.diagnostic} (remembered by the gateway cluster)` }),
      );
    }
    const value = shareTokenData({ ...found.value } as CachedValidation);
    if (isExpired(value.exp, Math.floor(now / 1000), this.settings.clockSkew)) {
      throw sharedFailure(new GatewayError('ERR_TOKEN_EXPIRED', { realm: this.name, diagnostic: 'shared cached token has expired (exp)' }));
    }
    this.cache.set(key, value, generation, now, found.checkedAt);
    return { value, shared: true };
  }

  /** Writes a result to the shared cache, unless `forget` or `clearCache` ran since the validation started. */
  private share(
    ticket: SharedTicket | undefined,
    token: string,
    generation: number,
    entry: { value: CachedValidation } | { refusal: Refusal },
  ): void {
    if (ticket === undefined || generation !== this.cache.generation) return;
    const at = Date.now();
    const indexTtlMs = Math.max(this.validTtlMs ?? 0, this.refusalTtlMs ?? 0);
    if ('refusal' in entry) {
      if (this.refusalTtlMs !== undefined)
        this.shared!.storeRefusal(ticket, entry.refusal, { at, ttlMs: this.refusalTtlMs, indexTtlMs, token });
      return;
    }
    if (this.validTtlMs === undefined) return;
    const exp = entry.value.exp;
    const ttlMs = Math.min(this.validTtlMs, exp === undefined ? Infinity : exp * 1000 - at);
    this.shared!.storeValid(ticket, entry.value, { at, ttlMs, indexTtlMs, token });
  }

  /** A validation by the authorization server (and the local cache's, and the shared one's, record of it). */
  private async flyUncached(
    key: string,
    token: string,
    address: string | undefined,
    generation: number,
    ticket: SharedTicket | undefined,
  ): Promise<Flight> {
    const seen: Seen = {};
    let slot = false;
    try {
      if (this.limiter !== undefined) {
        const waiting = this.limiter.acquire(this.settings.timeoutMs, () => this.saturated());
        slot = waiting === undefined;
        if (waiting !== undefined) {
          await waiting;
          slot = true;
          // Refusals counted while this one waited may have started the throttle.
          if (this.throttle?.throttled(address)) throw this.throttled(address!);
        }
      }
      const value = await this.validateUncached(token, seen);
      this.cache.set(key, value, generation, Date.now());
      this.share(ticket, token, generation, { value });
      return { value };
    } catch (err) {
      const error = err instanceof GatewayError ? err : undefined;
      if (error !== undefined && seen.step !== undefined && !failedSources.has(error)) failedSources.set(error, seen.step);
      if (error?.code === 'ERR_TOKEN_INVALID' || error?.code === 'ERR_TOKEN_EXPIRED') {
        const { answer, refusal } = this.refused(key, error, seen, generation, address);
        // A key unknown now may be published by the next fetch: this instance's own key set says so, not the cluster's.
        if (seen.keyUnknownUntil === undefined) this.share(ticket, token, generation, { refusal });
        if (answer !== error && seen.step !== undefined) failedSources.set(answer, seen.step);
        throw answer;
      }
      if (error?.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE') {
        const stale = this.staleResult(key, error);
        if (stale !== undefined) return stale;
      }
      throw err;
    } finally {
      if (slot) this.limiter!.release();
    }
  }

  private saturated(): GatewayError {
    return new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
      realm: this.name,
      diagnostic: `${this.settings.introspection ? 'introspection' : 'userinfo'}: ${this.limiter!.max} calls already in flight to the authorization server; no slot freed within ${this.settings.timeoutMs} ms`,
    });
  }

  /** Remembers a refusal, counts it against the sender's address, and gives the error to answer with. */
  private refused(
    key: string,
    error: GatewayError,
    seen: Seen,
    generation: number,
    address: string | undefined,
  ): { answer: GatewayError; refusal: Refusal } {
    const { claims, keyUnknownUntil } = seen;
    let answer = error;
    const known = this.cache.knownExpiry(key);
    if (error.code === 'ERR_TOKEN_INVALID' && isExpired(known, Math.floor(Date.now() / 1000), this.settings.clockSkew)) {
      // Introspection only says "inactive"; we know this token and when it expired.
      answer = new GatewayError('ERR_TOKEN_EXPIRED', {
        realm: this.name,
        diagnostic: `${error.diagnostic ?? 'invalid'}; the token expired at ${known}`,
      });
    }
    const info = claims === undefined ? undefined : toTokenInfo({ introspection: claims });
    const refusal: Refusal = {
      code: answer.code as Refusal['code'],
      diagnostic: answer.diagnostic ?? 'refused',
      ...(info?.subject === undefined ? {} : { subject: info.subject }),
      ...(info?.clientId === undefined ? {} : { clientId: info.clientId }),
    };
    // Signed with a key the JWKS lacks: remembered only until the cool-down lets the JWKS be fetched again.
    this.cache.refuse(
      key,
      refusal,
      generation,
      keyUnknownUntil === undefined ? undefined : Math.min(this.refusalTtlMs ?? 0, keyUnknownUntil - Date.now()),
    );
    this.throttle?.refused(address);
    return { answer, refusal };
  }

  /** The last result of a token, when `staleIfErrorSeconds` lets it serve while the server is down. */
  private staleResult(key: string, error: GatewayError): Flight | undefined {
    if (this.settings.staleIfErrorSeconds === 0) return undefined;
    const entry = this.cache.stale(key);
    const now = Date.now();
    if (entry === undefined || now - entry.checkedAt > this.settings.staleIfErrorSeconds * 1000) return undefined;
    if (isExpired(entry.value.exp, Math.floor(now / 1000), this.settings.clockSkew)) return undefined;
    log('policy %s: served a stale result (%s)', this.name, error.diagnostic);
    return {
      value: entry.value,
      stale: { checkedAt: entry.checkedAt, cause: error.diagnostic ?? 'the authorization server is unavailable' },
    };
  }

  private async validateUncached(token: string, seen: Seen): Promise<CachedValidation> {
    seen.step = this.serverSource;
    const { config, issuer, bearer } = await this.discover();
    const checks = { realm: this.name, clockSkew: this.settings.clockSkew, audience: this.audience, issuer };
    const value: CachedValidation = { exp: undefined, info: toTokenInfo({}) };

    if (this.settings.jwtValidation) {
      seen.step = 'jwt';
      const keys = this.keySet(config);
      try {
        const { payload, protectedHeader } = await jwtVerify(token, keys.getKey, {
          algorithms: this.algorithms,
          issuer,
          ...(this.audience.length > 0 ? { audience: this.audience } : {}),
          clockTolerance: this.settings.clockSkew,
          // A token that never expires is not one the gateway accepts.
          requiredClaims: ['exp'],
        });
        if (
          this.settings.jwtTypes !== undefined &&
          !this.settings.jwtTypes.has(typeof protectedHeader.typ === 'string' ? normalizeTyp(protectedHeader.typ) : '')
        ) {
          throw new GatewayError('ERR_TOKEN_INVALID', { realm: this.name, diagnostic: 'jwt: typ is not one of options.jwtTypes' });
        }
        value.jwt = { ...payload };
      } catch (err) {
        if (err instanceof joseErrors.JWKSNoMatchingKey) seen.keyUnknownUntil = keys.unknownKeyUntil();
        throw classifyJwtError(err, this.name);
      }
      checkTimeClaims(value.jwt, this.name, 'jwt');
    }

    if (this.settings.introspection) {
      seen.step = 'introspection';
      let response: Claims;
      try {
        response = {
          ...(await this.call('introspection', () => client.tokenIntrospection(config, token, { token_type_hint: 'access_token' }))),
        };
      } catch (err) {
        // The server refused the gateway's own token: ask for another next time.
        if (bearer !== undefined && refusedClientAuthentication(err, 'introspection')) bearer.forget();
        throw classifyClientError(err, this.name, 'introspection');
      }
      if (response['active'] !== true)
        throw new GatewayError('ERR_TOKEN_INVALID', { realm: this.name, diagnostic: 'introspection: active is false' });
      seen.claims = response;
      checkAccessTokenType(response, this.name, 'introspection');
      checkClaims(response, { ...checks, now: Math.floor(Date.now() / 1000) }, 'introspection');
      value.introspection = response;
    }

    if (this.settings.userInfo) {
      seen.step = 'userinfo';
      const subject = value.introspection?.['sub'] ?? value.jwt?.['sub'];
      try {
        const response = await this.call('userinfo', () =>
          client.fetchUserInfo(config, token, typeof subject === 'string' ? subject : client.skipSubjectCheck),
        );
        value.userInfo = { ...response };
      } catch (err) {
        throw classifyClientError(err, this.name, 'userinfo');
      }
      // Its times, if any, end up in the token information too.
      checkTimeClaims(value.userInfo, this.name, 'userinfo');
    }

    // `iss` is optional in an introspection answer: the token is then the policy's issuer's.
    value.info = toTokenInfo(value, issuer);
    value.exp = value.info.expiresAt;
    // Frozen once here, then shared by every request with this token (no copy per request).
    return shareTokenData(value);
  }

  /** The metadata and configuration: resolved once, shared, tried again after a failure. */
  private discover(): Promise<PolicyClient> {
    if (this.resolved === undefined) {
      const attempt = resolvePolicyClient({
        settings: this.settings,
        options: this.options,
        fetch: this.fetch,
        discovery: (run) => this.call('discovery', run),
        keys: (config) => this.keySet(config).getKey,
      });
      this.resolved = attempt;
      attempt.catch((err: unknown) => {
        log('policy %s: metadata unavailable: %s', this.name, err instanceof GatewayError ? err.diagnostic : String(err));
        // Forget the failure so that the next request tries again.
        if (this.resolved === attempt) this.resolved = undefined;
      });
    }
    return this.resolved;
  }

  /** The policy's key set over the issuer's JWKS (one per policy until discovery is cleared; see `key-set.ts`). */
  private keySet(config: Configuration): PolicyKeySet {
    if (this.keys === undefined) {
      const uri = config.serverMetadata().jwks_uri;
      if (uri === undefined) {
        throw new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
          realm: this.name,
          diagnostic: 'jwks: the issuer publishes no jwks_uri',
        });
      }
      this.keys = createPolicyKeySet({
        realm: this.name,
        uri: new URL(uri),
        timeoutMs: this.settings.timeoutMs,
        cooldownMs: this.settings.jwksCooldownMs,
        call: (run) => this.call('jwks', run),
      });
    }
    return this.keys;
  }
}

/** A failure answered from the cache shared between instances. */
function sharedFailure(error: GatewayError): GatewayError {
  failedSources.set(error, 'shared_cache');
  return error;
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
 * Creates a {@link TokenPolicy}. Options are checked here: a bad one throws an
 * `InvalidOptionError` (a `TypeError`, code `ERR_INVALID_OPTION`) whose message starts with
 * `createTokenPolicy: options.<path>`.
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
