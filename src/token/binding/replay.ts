/**
 * The memory of DPoP proof `jti`s (RFC 9449 section 11.1): a proof is accepted once, and its
 * identifier is remembered for as long as the proof could be accepted. In this process's memory,
 * or in Redis (one atomic `SET NX PX`) when the gateway has it, so that a proof accepted by one
 * instance is refused by every other.
 *
 * @module
 */
import type { RedisConnection } from '../../cluster/redis.js';

/** Where the `jti`s of DPoP proofs are remembered. */
export interface DpopReplayStore {
  /**
   * Remembers `key` for `ttlMs` milliseconds. Resolves `true` when it was not known (the proof is
   * new), `false` when it was (a replay), `undefined` when the store could not answer (the proof
   * is then refused: the gateway fails closed).
   */
  remember(key: string, ttlMs: number): Promise<boolean | undefined> | boolean | undefined;
  /** Why the store did not answer, when it can tell (said in the refusal's diagnostic). */
  readonly unavailable?: string | undefined;
}

/** Most identifiers a process keeps; past it, expired ones are dropped, then new proofs refused (503) until some expire. */
const MAX_ENTRIES = 200_000;

/** The `jti`s remembered in this process (a gateway without Redis, or a `createTokenPolicy` of the host's). */
export class MemoryReplayStore implements DpopReplayStore {
  readonly #until = new Map<string, number>();
  readonly #maxEntries: number;
  /** The last proof was refused for want of room. */
  #full = false;

  constructor(maxEntries = MAX_ENTRIES) {
    this.#maxEntries = maxEntries;
  }

  remember(key: string, ttlMs: number): boolean | undefined {
    const now = Date.now();
    const until = this.#until.get(key);
    if (until !== undefined && until > now) return false;
    if (this.#until.size >= this.#maxEntries) {
      // Entries are in insertion order, their lifetimes alike: the expired ones come first.
      for (const [known, end] of this.#until) {
        if (end > now) break;
        this.#until.delete(known);
      }
      this.#full = this.#until.size >= this.#maxEntries;
      if (this.#full) return undefined;
    }
    this.#until.delete(key);
    this.#until.set(key, now + ttlMs);
    return true;
  }

  /** Said when full: the identifiers of every proof still within its lifetime are kept, none is forgotten early (that would let a replay through). */
  get unavailable(): string | undefined {
    return this.#full
      ? `full: ${this.#maxEntries} proofs within their lifetime in this process; use Redis, or a shorter dpopProofMaxAgeSeconds`
      : undefined;
  }

  /** Identifiers remembered now (expired ones included until they are dropped). */
  get size(): number {
    return this.#until.size;
  }
}

/** The `jti`s remembered in Redis, shared by every instance on it: `SET <prefix>dpop:<key> 1 NX PX <ttl>`. */
export class RedisReplayStore implements DpopReplayStore {
  readonly #redis: RedisConnection;

  constructor(redis: RedisConnection) {
    this.#redis = redis;
  }

  async remember(key: string, ttlMs: number): Promise<boolean | undefined> {
    const reply = await this.#redis.command([
      'SET',
      `${this.#redis.keyPrefix}dpop:${key}`,
      '1',
      'NX',
      'PX',
      String(Math.max(1, Math.ceil(ttlMs))),
    ]);
    if (reply === undefined) return undefined;
    return reply === 'OK';
  }
}
