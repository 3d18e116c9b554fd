/**
 * The configuration cache (docs/gateway.md, "The configuration cache and ResetAllCaches"): the
 * configuration and what is compiled from it are loaded at first access and kept for a while (two
 * hours by default); a change takes effect only after a reset (ResetAllCaches) or expiry. A
 * configuration that fails at reload never replaces a working one.
 *
 * @module
 */
import { optionChecks } from '../options.js';
import NodeCache from 'node-cache';
import { logger } from '../log.js';
import { ConfigError } from './errors.js';
import { configSourceLabel, loadConfig, type ConfigSource } from './load.js';
import type { ResolvedConfig } from './types.js';

const log = logger('config');
const KEY = 'runtime';

/** Options of {@link ConfigCache}. */
export interface ConfigCacheOptions<T> {
  /** Where the configuration comes from. */
  source: ConfigSource;
  /** Folder that relative paths resolve from, for an object or loader source. */
  baseDir?: string;
  /** Lifetime of a loaded configuration, in seconds. Default `7200` (two hours). */
  ttlSeconds?: number;
  /**
   * Seconds to wait before trying again when a reload at expiry failed (the previous
   * configuration serves meanwhile). Default `60`.
   */
  retrySeconds?: number;
  /**
   * Builds what the gateway runs on from a validated configuration (compiled policies, chains).
   * Throw a {@link ConfigError} to reject the configuration.
   */
  compile: (config: ResolvedConfig) => T | Promise<T>;
  /** Releases what `compile` built, once it is replaced. */
  dispose?: (compiled: T) => void | Promise<void>;
  /**
   * Told when a load at expiry (not asked by {@link ConfigCache.reload}, whose caller gets the
   * error) fails: the previous configuration stays in force and the load is tried again after
   * `retrySeconds`.
   */
  onExpiryReloadFailed?: (error: ConfigError) => void;
}

/** A loaded configuration and what was compiled from it. */
export interface CacheEntry<T> {
  /** The validated configuration. */
  readonly config: ResolvedConfig;
  /** What `compile` returned. */
  readonly compiled: T;
  /** When it was loaded (epoch ms). */
  readonly loadedAt: number;
}

/** The state of a {@link ConfigCache}, for the admin endpoint. */
export interface ConfigCacheState {
  /** Epoch ms of the load in force, if any. */
  loadedAt?: number;
  /** Epoch ms at which the configuration in force expires, if loaded. */
  expiresAt?: number;
  /** The last load failure, when the configuration in force is older than it (or there is none). */
  lastError?: ConfigError;
}

/**
 * A failed load as a {@link ConfigError} naming the configuration `source`: what compiling refuses
 * (a policy file, a token policy) belongs to the configuration as much as what loading refuses.
 */
function asConfigError(err: unknown, source: string): ConfigError {
  if (err instanceof ConfigError) return err.source === undefined ? new ConfigError(err.issues, source, { cause: err.cause }) : err;
  return new ConfigError([{ path: '', message: err instanceof Error ? err.message : String(err) }], source, { cause: err });
}

/**
 * Caches a configuration and what is compiled from it in a `node-cache` entry with a time to live.
 * {@link get} is synchronous while the entry is fresh (the request path does no I/O); at first
 * access and after expiry it loads once for all waiting requests. {@link reload} (ResetAllCaches)
 * loads now and keeps the previous configuration when the new one is invalid.
 */
export class ConfigCache<T> {
  readonly #options: ConfigCacheOptions<T>;
  readonly #cache: NodeCache;
  readonly #ttl: number;
  readonly #retry: number;
  /** The entry in force: also what serves when a reload at expiry fails. */
  #current: CacheEntry<T> | undefined;
  #loading: Promise<CacheEntry<T>> | undefined;
  #lastError: ConfigError | undefined;
  #closed = false;

  constructor(options: ConfigCacheOptions<T>) {
    const check = optionChecks('ConfigCache');
    check.object(options, '');
    if (typeof options.compile !== 'function') check.fail('compile', 'must be a function');
    const ttl = options.ttlSeconds ?? 7200;
    check.positive(ttl, 'ttlSeconds', 0);
    const retry = options.retrySeconds ?? 60;
    check.positive(retry, 'retrySeconds', 0);
    this.#options = options;
    this.#ttl = ttl;
    this.#retry = Math.min(retry, ttl);
    // No clones (the entry holds functions and sockets), no timer (expiry is checked on access).
    this.#cache = new NodeCache({ stdTTL: ttl, useClones: false, checkperiod: 0, deleteOnExpire: true });
  }

  /** The entry in force: synchronously when fresh, else a promise of the (re)loaded one. */
  get(): CacheEntry<T> | Promise<CacheEntry<T>> {
    const entry = this.#cache.get<CacheEntry<T>>(KEY);
    if (entry !== undefined) return entry;
    return this.#loadOnAccess();
  }

  /** State for display: when loaded, when it expires, the last failure. */
  get state(): ConfigCacheState {
    const state: ConfigCacheState = {};
    if (this.#current !== undefined) state.loadedAt = this.#current.loadedAt;
    const expiresAt = this.#cache.getTtl(KEY);
    if (typeof expiresAt === 'number' && expiresAt > 0) state.expiresAt = expiresAt;
    if (this.#lastError !== undefined) state.lastError = this.#lastError;
    return state;
  }

  /**
   * Loads the configuration now (ResetAllCaches). On success the new one is in force and the old
   * one is disposed; on failure the previous one stays in force (with a fresh lifetime) and the
   * returned promise rejects with the {@link ConfigError} that says why.
   */
  async reload(): Promise<CacheEntry<T>> {
    this.#assertOpen();
    // A reset must see the files as they are now: wait for a load already under way, then load again.
    if (this.#loading !== undefined) await this.#loading.catch(() => undefined);
    return this.#load(false);
  }

  /** Drops everything, disposing what was compiled. The next {@link get} fails. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#loading?.catch(() => undefined);
    this.#cache.flushAll();
    this.#cache.close();
    const current = this.#current;
    this.#current = undefined;
    if (current !== undefined) await this.#dispose(current);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('ConfigCache: closed');
  }

  #loadOnAccess(): Promise<CacheEntry<T>> {
    try {
      this.#assertOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    this.#loading ??= this.#load(true).finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #load(onAccess: boolean): Promise<CacheEntry<T>> {
    let next: CacheEntry<T>;
    try {
      const config = await loadConfig(this.#options.source, this.#options.baseDir === undefined ? {} : { baseDir: this.#options.baseDir });
      const compiled = await this.#options.compile(config);
      next = { config, compiled, loadedAt: Date.now() };
    } catch (err) {
      const error = asConfigError(err, configSourceLabel(this.#options.source));
      this.#lastError = error;
      const previous = this.#current;
      if (previous === undefined) throw error;
      log('configuration reload failed, the previous one stays in force: %s', error.message);
      // Keep serving the previous one; at expiry, try again after a short while rather than at every request.
      this.#cache.set(KEY, previous, onAccess ? this.#retry : this.#ttl);
      if (onAccess) {
        this.#options.onExpiryReloadFailed?.(error);
        return previous;
      }
      throw error;
    }
    if (this.#closed) {
      await this.#dispose(next);
      throw new Error('ConfigCache: closed');
    }
    const previous = this.#current;
    this.#current = next;
    this.#lastError = undefined;
    this.#cache.set(KEY, next, this.#ttl);
    log('configuration loaded: %d API(s)', next.config.apis.length);
    if (previous !== undefined && previous !== next) await this.#dispose(previous);
    return next;
  }

  async #dispose(entry: CacheEntry<T>): Promise<void> {
    try {
      await this.#options.dispose?.(entry.compiled);
    } catch (err) {
      log('dispose failed: %s', (err as Error)?.message ?? String(err));
    }
  }
}
