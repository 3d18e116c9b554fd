/**
 * The memory of DPoP proof `jti`s (RFC 9449 section 11.1): a proof is accepted once, and its
 * identifier is remembered for as long as the proof could be accepted. In this process's memory,
 * or in Redis (one atomic `SET NX PX`) when the gateway has it, so that a proof accepted by one
 * instance is refused by every other.
 *
 * @module
 */
import { redisScript, type RedisConnection } from '../../cluster/redis.js';

/**
 * What a store says of a proof: `true` new (remembered now), `false` a replay, `'overShare'` new but
 * its key already has its share of the store (refused, not remembered), `undefined` the store could
 * not answer (the proof is then refused: the gateway fails closed).
 */
export type ProofMemory = boolean | 'overShare' | undefined;

/** The key a proof is counted to, and how many proofs of it may be remembered at once. */
export interface ProofOwner {
  /** The JWK SHA-256 thumbprint of the proof's key (43 characters). */
  readonly thumbprint: string;
  /** Most proofs of that key remembered within their lifetime (`dpopMaxProofsPerKey`). */
  readonly maxProofs: number;
}

/** Where the `jti`s of DPoP proofs are remembered. */
export interface DpopReplayStore {
  /**
   * Remembers `key` for `ttlMs` milliseconds, counted to `owner` when the store keeps shares (see
   * {@link ProofMemory}).
   */
  remember(key: string, ttlMs: number, owner?: ProofOwner): Promise<ProofMemory> | ProofMemory;
  /** Why the store did not answer, when it can tell (said in the refusal's diagnostic). */
  readonly unavailable?: string | undefined;
}

/** Most identifiers a {@link MemoryReplayStore} keeps by default (about 30 MB). */
export const MAX_PROOFS = 200_000;

interface Remembered {
  readonly until: number;
  readonly owner: string | undefined;
}

/**
 * The `jti`s remembered in this process (a gateway without Redis, or a `createTokenPolicy` of the
 * host's), bounded by count (the count bounds the memory: each entry is a 43-character hash and a
 * thumbprint, about 150 bytes) and by each key's share of it (docs/sender-constrained-tokens.md, "What is checked").
 */
export class MemoryReplayStore implements DpopReplayStore {
  readonly #until = new Map<string, Remembered>();
  readonly #perOwner = new Map<string, number>();
  readonly #maxEntries: number;
  /** The last proof was refused for want of room. */
  #full = false;

  /** `maxEntries`: most identifiers kept; past it, new proofs are refused (503) until some expire. */
  constructor(maxEntries = MAX_PROOFS) {
    this.#maxEntries = maxEntries;
  }

  remember(key: string, ttlMs: number, owner?: ProofOwner): ProofMemory {
    const now = Date.now();
    const known = this.#until.get(key);
    if (known !== undefined && known.until > now) return false;
    if (known !== undefined) this.#drop(key, known);
    const thumbprint = owner?.thumbprint;
    const overShare = (): boolean => thumbprint !== undefined && this.#heldBy(thumbprint) >= owner!.maxProofs;
    if (this.#until.size >= this.#maxEntries || overShare()) this.#dropExpired(now);
    if (overShare()) return 'overShare';
    this.#full = this.#until.size >= this.#maxEntries;
    if (this.#full) return undefined;
    this.#until.set(key, { until: now + ttlMs, owner: thumbprint });
    if (thumbprint !== undefined) this.#perOwner.set(thumbprint, this.#heldBy(thumbprint) + 1);
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

  /** Identifiers remembered now for `owner`. */
  #heldBy(owner: string): number {
    return this.#perOwner.get(owner) ?? 0;
  }

  /** Entries are in insertion order, their lifetimes alike: the expired ones come first. */
  #dropExpired(now: number): void {
    for (const [key, known] of this.#until) {
      if (known.until > now) break;
      this.#drop(key, known);
    }
  }

  #drop(key: string, known: Remembered): void {
    this.#until.delete(key);
    if (known.owner === undefined) return;
    const left = this.#heldBy(known.owner) - 1;
    if (left > 0) this.#perOwner.set(known.owner, left);
    else this.#perOwner.delete(known.owner);
  }
}

/**
 * One proof in Redis: `SET <jti key> 1 NX PX <ttl>`; a new one is then counted to its key in a
 * window of the proof lifetime (`<share key>`), and refused past the key's share (its `jti` then
 * forgotten: the proof was not accepted). Returns 1 new, 0 a replay, 2 over the share.
 */
const REMEMBER = redisScript(`if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 0 end
if KEYS[2] == nil then return 1 end
local n = redis.call('INCR', KEYS[2])
if n == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
if n > tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
  return 2
end
return 1`);

/**
 * The `jti`s remembered in Redis, shared by every instance on it (`<prefix>dpop:<key>`). One key
 * (one client) may have at most its `maxProofs` new proofs per proof lifetime (so at most twice
 * that within their lifetime), counted under `<prefix>dpop-share:<thumbprint>`: Redis's memory is
 * bounded per client, and by the clients the authorization server binds tokens to.
 */
export class RedisReplayStore implements DpopReplayStore {
  readonly #redis: RedisConnection;

  constructor(redis: RedisConnection) {
    this.#redis = redis;
  }

  async remember(key: string, ttlMs: number, owner?: ProofOwner): Promise<ProofMemory> {
    const prefix = this.#redis.keyPrefix;
    const keys = owner === undefined ? [`${prefix}dpop:${key}`] : [`${prefix}dpop:${key}`, `${prefix}dpop-share:${owner.thumbprint}`];
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    const reply = await this.#redis.evalScript(REMEMBER, keys, owner === undefined ? [ttl] : [ttl, String(owner.maxProofs)]);
    if (reply === undefined) return undefined;
    return reply === 1 ? true : reply === 2 ? 'overShare' : false;
  }
}
