/**
 * The token-result caches of one token policy, keyed by a hash of the token (never the token):
 *
 * - valid results, least recently used evicted first, bounded in entries and in estimated bytes,
 *   each living min(TTL, exp − now), or longer as a stale fallback when `staleIfError` asks;
 * - refusals (inactive, expired, wrong audience...), for a short TTL, bounded on their own, so
 *   that a token the authorization server refused is not sent to it again at every request;
 * - the `exp` of tokens that were valid, to tell "expired" from "invalid" when introspection
 *   later says only `active: false`.
 *
 * @module
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { heapBytes } from './heap-bytes.js';
import { accountTokenData, type SharedTokenData } from './validated-data.js';

/** Settings of the valid-result cache. */
export interface ValidCacheSettings {
  /** Longest life of a fresh entry, seconds. */
  ttl: number;
  /** Most entries kept (least recently used evicted first). */
  maxEntries: number;
  /** Most estimated bytes kept (least recently used evicted first). */
  maxBytes: number;
  /** Seconds after its check during which a result may still serve when the server is down; 0: never. */
  staleIfError: number;
}

/** Settings of the refusal cache. */
export interface RefusalCacheSettings {
  /** Life of an entry, seconds. */
  ttl: number;
  /** Most entries kept. */
  maxEntries: number;
}

/** A remembered refusal: what to answer again, and whose token it was when the answer said. */
export interface Refusal {
  readonly code: 'ERR_TOKEN_INVALID' | 'ERR_TOKEN_EXPIRED';
  readonly diagnostic: string;
  readonly subject?: string;
  readonly clientId?: string;
}

/** Which cached results {@link TokenCache.forget} drops: those of this subject and/or client id. */
export interface ForgetSelector {
  /** `sub` of the token (its normalized `subject`). */
  subject?: string;
  /** Client id of the token (its normalized `clientId`: `azp`, else `client_id`). */
  clientId?: string;
}

/** A valid result as cached. */
export interface CachedEntry<T> {
  readonly value: T;
  /** Epoch milliseconds of the check that produced it. */
  readonly checkedAt: number;
  /** Epoch milliseconds until which it is fresh (served without a call). */
  readonly freshUntil: number;
}

interface Stored<T> extends CachedEntry<T> {
  /** Estimated bytes. */
  readonly size: number;
}

// What an entry costs besides its data: the key, the entry and `exp` objects, lru-cache's slots in
// both caches, the shared data's own object.
const ENTRY_OVERHEAD = 360;

/**
 * Estimated heap bytes of a validation as cached ({@link heapBytes} of its parts). What the
 * requests then derive from it (XACML attributes, forwarded headers, the record's token part,
 * remembered decisions) is added to its entry as it is made (`accountTokenData`).
 */
export function estimateSize(value: SharedTokenData): number {
  const seen = new Set<unknown>();
  return (
    ENTRY_OVERHEAD +
    heapBytes(value.info, seen) +
    heapBytes(value.introspection, seen) +
    heapBytes(value.jwt, seen) +
    heapBytes(value.userInfo, seen)
  );
}

function matches(selector: ForgetSelector, subject: string | undefined, clientId: string | undefined): boolean {
  if (selector.subject !== undefined && selector.subject !== subject) return false;
  if (selector.clientId !== undefined && selector.clientId !== clientId) return false;
  return true;
}

/**
 * One policy's caches. `generation` changes at every {@link TokenCache.clear} and
 * {@link TokenCache.forget}: a validation that started before does not store its result (it may
 * be what was just forgotten).
 */
export class TokenCache<T extends SharedTokenData> {
  private readonly valid: LRUCache<string, Stored<T>> | undefined;
  private readonly refusals: LRUCache<string, Refusal> | undefined;
  private readonly expiries: LRUCache<string, number> | undefined;
  private readonly settings: ValidCacheSettings | undefined;
  private current = 0;

  constructor(valid: ValidCacheSettings | undefined, refusals: RefusalCacheSettings | undefined) {
    this.settings = valid;
    if (valid !== undefined) {
      this.valid = new LRUCache<string, Stored<T>>({
        max: valid.maxEntries,
        maxSize: valid.maxBytes,
        sizeCalculation: (entry) => entry.size,
        // An entry's life is set at each `set`; expired entries go when read or evicted.
        ttlAutopurge: false,
      });
      this.expiries = new LRUCache<string, number>({ max: valid.maxEntries, ttlAutopurge: false });
    }
    if (refusals !== undefined) {
      this.refusals = new LRUCache<string, Refusal>({ max: refusals.maxEntries, ttl: refusals.ttl * 1000, ttlAutopurge: false });
    }
  }

  /**
   * The cache key of a token: a SHA-256 of it (each policy has its own caches, so no namespace).
   * Computed once per request, with the one-shot `crypto.hash`.
   */
  key(token: string): string {
    return hash('sha256', token, 'base64url');
  }

  /** The current generation (see the class comment). */
  get generation(): number {
    return this.current;
  }

  /** A fresh valid result, if any (the hot path: one lookup). */
  fresh(key: string, now: number): T | undefined {
    const entry = this.valid?.get(key);
    return entry !== undefined && now < entry.freshUntil ? entry.value : undefined;
  }

  /** A result past its freshness, kept for `staleIfError`, if any (does not count as a use). */
  stale(key: string): CachedEntry<T> | undefined {
    return this.valid?.peek(key);
  }

  /**
   * Counts `bytes` more in the entry of `value` (what requests derived from it), evicting the least
   * recently used entries past the bound; nothing when the entry is no longer `value`'s.
   */
  private grow(key: string, value: T, bytes: number): void {
    const entry = this.valid?.peek(key);
    if (entry === undefined || entry.value !== value) return;
    this.valid!.set(key, { ...entry, size: entry.size + bytes }, { noUpdateTTL: true });
  }

  /** Forgets one valid result (for example when a hit turned out to be expired). */
  delete(key: string): void {
    this.valid?.delete(key);
  }

  /**
   * Stores a valid result, fresh for min(ttl, exp − now) seconds; kept up to `staleIfError`
   * seconds after the check when that is longer (never past `exp`). Nothing is stored when the
   * generation changed since the validation started, or when the result alone is larger than
   * the byte bound.
   *
   * @param checkedAt - epoch ms of the check, when earlier than `now` (a result another gateway
   *   instance validated): its freshness counts from then.
   */
  set(key: string, value: T, generation: number, now: number, checkedAt = now): void {
    if (this.valid === undefined || this.settings === undefined || generation !== this.current) return;
    const { ttl, staleIfError } = this.settings;
    const at = Math.min(checkedAt, now);
    const expiry = value.exp === undefined ? Infinity : value.exp * 1000;
    const freshUntil = Math.min(at + ttl * 1000, expiry);
    const keepUntil = Math.min(at + Math.max(ttl, staleIfError) * 1000, expiry);
    if (freshUntil > now) {
      const size = estimateSize(value);
      if (size <= this.settings.maxBytes) {
        this.valid.set(key, { value, checkedAt: at, freshUntil, size }, { ttl: Math.ceil(keepUntil - now) });
        accountTokenData(value, (bytes) => this.grow(key, value, bytes));
      }
    }
    // Remembered for one TTL past expiry: long enough to explain the next "inactive".
    if (value.exp !== undefined) this.expiries!.set(key, value.exp, { ttl: Math.ceil(Math.max(expiry - now, 0) + ttl * 1000) });
    this.refusals?.delete(key);
  }

  /** When the token of `key` expires, if it was once valid (and is still remembered). */
  knownExpiry(key: string): number | undefined {
    return this.expiries?.get(key);
  }

  /** A remembered refusal of the token of `key`, if any. */
  refusal(key: string): Refusal | undefined {
    return this.refusals?.get(key);
  }

  /**
   * Remembers a refusal (and forgets any valid result of the same token).
   *
   * @param ttlMs - how long, when shorter than the refusal TTL (a refusal another gateway
   *   instance remembered first).
   */
  refuse(key: string, refusal: Refusal, generation: number, ttlMs?: number): void {
    this.valid?.delete(key);
    if (generation !== this.current) return;
    if (ttlMs === undefined) this.refusals?.set(key, refusal);
    else if (ttlMs > 0) this.refusals?.set(key, refusal, { ttl: Math.ceil(ttlMs) });
  }

  /** Drops the valid results and refusals whose token has the selector's subject and/or client id; returns how many. */
  forget(selector: ForgetSelector): number {
    this.current++;
    let dropped = 0;
    if (this.valid !== undefined) {
      for (const key of [...this.valid.keys()]) {
        const info = this.valid.peek(key, { allowStale: true })?.value.info;
        if (info !== undefined && matches(selector, info.subject, info.clientId) && this.valid.delete(key)) dropped++;
      }
    }
    if (this.refusals !== undefined) {
      for (const key of [...this.refusals.keys()]) {
        const refusal = this.refusals.peek(key, { allowStale: true });
        if (
          refusal !== undefined &&
          (refusal.subject !== undefined || refusal.clientId !== undefined) &&
          matches(selector, refusal.subject, refusal.clientId) &&
          this.refusals.delete(key)
        )
          dropped++;
      }
    }
    return dropped;
  }

  /** Number of valid results held. */
  get size(): number {
    return this.valid?.size ?? 0;
  }

  /** Number of refusals held. */
  get refusalCount(): number {
    return this.refusals?.size ?? 0;
  }

  /** Estimated bytes of the valid results held. */
  get bytes(): number {
    return this.valid?.calculatedSize ?? 0;
  }

  /** Drops every valid result, refusal and expiry. Validations already running do not store theirs. */
  clear(): void {
    this.current++;
    this.valid?.clear();
    this.expiries?.clear();
    this.refusals?.clear();
  }
}
