/**
 * The token-result cache of one token policy: bounded, keyed by a hash of the token (never the
 * token), entries living at most until the token expires, and single-flight so that concurrent
 * requests with the same uncached token share one validation.
 *
 * @module
 */
import { hash } from 'node:crypto';
import NodeCache from 'node-cache';
import { logger } from '../log.js';

const log = logger('token');

/** Settings of a {@link TokenCache}. */
export interface TokenCacheSettings {
  /** Longest life of an entry, seconds. */
  ttl: number;
  /** Most entries kept; when full, new results are not cached (until entries expire). */
  maxEntries: number;
}

/** What the cache stores for a valid token. */
export interface CacheableResult {
  /** `exp` of the token, seconds since the epoch, when it has one. */
  exp: number | undefined;
}

/**
 * One policy's cache. `results` holds valid results only (failures are never cached); `expiries`
 * remembers, for tokens that were valid, when they expire, so that a token the authorization
 * server later calls inactive can be reported as expired rather than just invalid (introspection
 * does not say why a token is inactive). Neither holds a token.
 */
export class TokenCache<T extends CacheableResult> {
  private readonly results: NodeCache;
  private readonly expiries: NodeCache;
  private readonly inflight = new Map<string, Promise<T>>();

  constructor(
    private readonly namespace: string,
    private readonly settings: TokenCacheSettings | undefined,
  ) {
    const options = { stdTTL: 0, checkperiod: 60, useClones: false, maxKeys: settings?.maxEntries ?? -1 };
    this.results = new NodeCache(options);
    this.expiries = new NodeCache(options);
  }

  /**
   * The cache key of a token: the policy name and a SHA-256 of the token. Computed once per
   * request, with the one-shot `crypto.hash` (a third of the cost of a `createHash` object).
   */
  key(token: string): string {
    return `${this.namespace}:${hash('sha256', token, 'base64url')}`;
  }

  /** A cached valid result, if any. */
  get(key: string): T | undefined {
    return this.settings === undefined ? undefined : this.results.get<T>(key);
  }

  /** Forgets one result (for example when a hit turned out to be expired). */
  delete(key: string): void {
    this.results.del(key);
  }

  /** When the token of `key` expires, if it was once valid (and is still remembered). */
  knownExpiry(key: string): number | undefined {
    return this.settings === undefined ? undefined : this.expiries.get<number>(key);
  }

  /** Stores a valid result for min(ttl, exp - now) seconds. */
  set(key: string, value: T, nowSeconds: number): void {
    if (this.settings === undefined) return;
    const untilExp = value.exp === undefined ? Infinity : value.exp - nowSeconds;
    const lifetime = Math.min(this.settings.ttl, untilExp);
    try {
      if (lifetime > 0) this.results.set(key, value, lifetime);
      // Remembered for one TTL past expiry: long enough to explain the next "inactive".
      if (value.exp !== undefined) this.expiries.set(key, value.exp, Math.max(untilExp, 0) + this.settings.ttl);
    } catch {
      // ECACHEFULL: the bound is reached; the result is simply not cached.
      log('%s cache full (%d entries), result not cached', this.namespace, this.settings.maxEntries);
    }
  }

  /**
   * Runs `compute` for `key` unless a computation for the same key is already running, in which
   * case its promise is shared.
   */
  singleFlight(key: string, compute: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const promise = compute().finally(() => this.inflight.delete(key));
    this.inflight.set(key, promise);
    return promise;
  }

  /** Number of cached results. */
  get size(): number {
    return this.results.keys().length;
  }

  /** Drops every cached result and expiry. Validations already running finish normally. */
  clear(): void {
    this.results.flushAll();
    this.expiries.flushAll();
  }

  /** Stops the caches' timers. */
  close(): void {
    this.results.close();
    this.expiries.close();
  }
}
