/**
 * Counts kept in this process: exact fixed and sliding windows and in-flight counts, per policy
 * and group. Each policy's groups are kept in a `Map` in the order of their last count (a counted
 * group is moved to the end), which is also the order in which they expire: a sweep (an unref'd
 * timer) forgets the expired ones from the front, so that an idle group lives no longer than its
 * window (plus one sweep interval), and the memory is what the groups active in their window hold.
 *
 * @module
 */
import type { CompiledTrafficPolicy } from './compile.js';
import type { GroupUsage } from './types.js';
import { NOTHING_TO_RELEASE, type CheckResult, type StoreCheck, type StoreVerdict } from './store.js';
import { FixedCount, SlidingTimes } from './windows.js';

/** Options of a {@link LocalTrafficStore}. */
export interface LocalTrafficStoreOptions {
  /** The clock, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Interval of the sweep of expired groups, milliseconds; 0: no timer (call {@link LocalTrafficStore.sweep}). Default 1000. */
  sweepMs?: number;
}

/**
 * The heap a group holding one request may take, bytes, with its key and label (a short
 * `clientId=` label): what bench/traffic.ts measures over a million groups. A sliding window adds
 * 8 bytes per further request it holds.
 */
export const LOCAL_BYTES_PER_GROUP_BOUND = 400;

/** Most groups one sweep forgets: a mass expiry is spread over several sweeps. */
const SWEEP_BATCH = 100_000;

type Counts = (
  | { readonly kind: 'fixed'; readonly windowMs: number; readonly groups: Map<string, FixedCount> }
  | { readonly kind: 'sliding'; windowMs: number; readonly groups: Map<string, SlidingTimes> }
  | { readonly kind: 'inFlight'; readonly groups: Map<string, { readonly label: string; count: number }> }
) & {
  /** False once the sweep dropped these counts (empty): a policy's cached reference to them is stale. */
  live: boolean;
  /** The group counted last: already at the end of `groups`, not moved again. */
  last: string | undefined;
};

/** Puts a counted group at the end of its policy's groups: the latest to expire. */
function moveLast<T>(counts: { readonly groups: Map<string, T>; last: string | undefined }, hash: string, state: T, held: boolean): void {
  if (!held) counts.groups.set(hash, state);
  else if (counts.last !== hash) {
    counts.groups.delete(hash);
    counts.groups.set(hash, state);
  }
  counts.last = hash;
}

/** A policy's counts' identity: its store name and its scope. */
function countsKey(policy: CompiledTrafficPolicy): string {
  return `${policy.scope}\n${policy.storeName}`;
}

/** The counts of one process (see the module comment). */
export class LocalTrafficStore {
  readonly #now: () => number;
  readonly #counts = new Map<string, Counts>();
  /**
   * Each compiled policy's counts, found once: the request path then builds no key string (the
   * counts outlive a reload through {@link countsKey}; a reload's new policy objects find them there).
   */
  #countsByPolicy = new WeakMap<CompiledTrafficPolicy, Counts>();
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(options: LocalTrafficStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    const sweepMs = options.sweepMs ?? 1000;
    if (sweepMs > 0) {
      this.#timer = setInterval(() => this.sweep(), sweepMs);
      this.#timer.unref();
    }
  }

  /** The store's clock. */
  now(): number {
    return this.#now();
  }

  /** Decides and counts one request over its checks (see {@link StoreVerdict}). */
  take(checks: readonly StoreCheck[]): StoreVerdict {
    const now = this.#now();
    const n = checks.length;
    // Plain loops and arrays of the checks' length: this runs for every request a policy covers.
    const counts = new Array<Counts>(n);
    // Each check's count before this request; it has room while that is below its limit.
    const before = new Array<number>(n);
    let allowed = true;
    for (let i = 0; i < n; i++) {
      const check = checks[i]!;
      counts[i] = this.#countsOf(check.policy);
      before[i] = this.#used(counts[i]!, check.hash, now);
      if (check.policy.mode === 'enforce' && before[i]! >= check.limit) allowed = false;
    }
    let taken: StoreCheck[] | undefined;
    const results = new Array<CheckResult>(n);
    for (let i = 0; i < n; i++) {
      const check = checks[i]!;
      const policyCounts = counts[i]!;
      const counted = check.policy.metric === 'requests' ? allowed || check.policy.mode === 'warningOnly' : allowed;
      if (counted && policyCounts.kind === 'inFlight') (taken ??= []).push(check);
      const used = counted ? this.#count(policyCounts, check, now) : before[i]!;
      const exceeded = counted ? used > check.limit : used >= check.limit;
      results[i] = { used, exceeded, resetMs: used >= check.limit ? this.#resetMs(policyCounts, check, used, now) : 0 };
    }
    if (taken === undefined) return { allowed, results, release: NOTHING_TO_RELEASE };
    const slots = taken;
    let released = false;
    return {
      allowed,
      results,
      release: () => {
        if (released) return;
        released = true;
        for (const check of slots) this.#free(check);
      },
    };
  }

  /** The busiest groups of a policy now, most used first. */
  usage(policy: CompiledTrafficPolicy, top: number): GroupUsage[] {
    const counts = this.#counts.get(countsKey(policy));
    if (counts === undefined) return [];
    const now = this.#now();
    const used: GroupUsage[] = [];
    for (const [hash, state] of counts.groups) {
      const n = this.#used(counts, hash, now);
      if (n > 0) used.push({ group: state.label, used: n, limit: policy.limit });
    }
    return used.sort((a, b) => b.used - a.used || (a.group < b.group ? -1 : 1)).slice(0, top);
  }

  /** Groups held, over every policy (for tests and the benchmark). */
  get size(): number {
    let size = 0;
    for (const counts of this.#counts.values()) size += counts.groups.size;
    return size;
  }

  /** Forgets the groups whose window has passed (the timer calls it; call it without one). */
  sweep(now = this.#now()): void {
    let budget = SWEEP_BATCH;
    for (const [key, counts] of this.#counts) {
      if (counts.kind === 'inFlight') continue;
      for (const [hash, state] of counts.groups) {
        if (budget-- <= 0) return;
        if (!expired(counts, state, now)) break;
        (counts.groups as Map<string, unknown>).delete(hash);
      }
      if (counts.groups.size === 0) {
        counts.live = false;
        this.#counts.delete(key);
      }
    }
  }

  /** Stops the sweep and forgets every count. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#counts.clear();
    this.#countsByPolicy = new WeakMap();
  }

  #countsOf(policy: CompiledTrafficPolicy): Counts {
    let counts = this.#countsByPolicy.get(policy);
    if (counts === undefined || !counts.live) {
      const key = countsKey(policy);
      counts = this.#counts.get(key);
      if (counts === undefined) {
        if (policy.metric === 'concurrentRequests') counts = { kind: 'inFlight', groups: new Map(), live: true, last: undefined };
        else if (policy.window === 'fixed')
          counts = { kind: 'fixed', windowMs: policy.windowSeconds! * 1000, groups: new Map(), live: true, last: undefined };
        else counts = { kind: 'sliding', windowMs: policy.windowSeconds! * 1000, groups: new Map(), live: true, last: undefined };
        this.#counts.set(key, counts);
      }
      this.#countsByPolicy.set(policy, counts);
    }
    // A reload may change a sliding window's length under the same name: the latest policy's applies.
    if (counts.kind === 'sliding' && counts.windowMs !== policy.windowSeconds! * 1000) counts.windowMs = policy.windowSeconds! * 1000;
    return counts;
  }

  /** A group's count now (requests in the window, or in flight). */
  #used(counts: Counts, hash: string, now: number): number {
    if (counts.kind === 'fixed') {
      const state = counts.groups.get(hash);
      return state === undefined ? 0 : state.at(Math.floor(now / counts.windowMs));
    }
    if (counts.kind === 'sliding') return counts.groups.get(hash)?.countAt(now, counts.windowMs) ?? 0;
    return counts.groups.get(hash)?.count ?? 0;
  }

  /** Counts the request; returns the new count. The group moves to the end: the latest to expire. */
  #count(counts: Counts, check: StoreCheck, now: number): number {
    const { hash, group } = check;
    if (counts.kind === 'fixed') {
      const index = Math.floor(now / counts.windowMs);
      const held = counts.groups.get(hash);
      const state = held ?? new FixedCount(group, index);
      state.at(index);
      state.count++;
      moveLast(counts, hash, state, held !== undefined);
      return state.count;
    }
    if (counts.kind === 'sliding') {
      const held = counts.groups.get(hash);
      const state = held ?? new SlidingTimes(group);
      state.countAt(now, counts.windowMs);
      state.add(now);
      moveLast(counts, hash, state, held !== undefined);
      return state.countAt(now, counts.windowMs);
    }
    const state = counts.groups.get(hash);
    if (state === undefined) {
      counts.groups.set(hash, { label: group, count: 1 });
      return 1;
    }
    return ++state.count;
  }

  /** Milliseconds until the count falls below the limit again. */
  #resetMs(counts: Counts, check: StoreCheck, used: number, now: number): number {
    if (counts.kind === 'fixed') return (Math.floor(now / counts.windowMs) + 1) * counts.windowMs - now;
    if (counts.kind === 'inFlight') return 0;
    const state = counts.groups.get(check.hash);
    if (state === undefined || used === 0) return 0;
    // The count falls below the limit when the (used - limit + 1)-th oldest time leaves the window.
    return Math.max(0, state.nth(Math.min(used - check.limit, used - 1)) + counts.windowMs - now);
  }

  #free(check: StoreCheck): void {
    const counts = this.#countsByPolicy.get(check.policy);
    if (counts?.kind !== 'inFlight') return;
    const state = counts.groups.get(check.hash);
    if (state === undefined) return;
    if (--state.count <= 0) counts.groups.delete(check.hash);
  }
}

function expired(counts: Counts, state: FixedCount | SlidingTimes | { count: number }, now: number): boolean {
  if (counts.kind === 'fixed') return ((state as FixedCount).index + 1) * counts.windowMs <= now;
  if (counts.kind === 'sliding') {
    const newest = (state as SlidingTimes).newest();
    return newest === undefined || newest + counts.windowMs <= now;
  }
  return false;
}
