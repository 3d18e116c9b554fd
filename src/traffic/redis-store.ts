/**
 * Counts shared by every instance, in Redis: one script, one round trip, per decision, the
 * decisions of one event-loop turn in one command (see redis-scripts.ts). The connection bounds each command by its timeout and, after a failure,
 * skips Redis at once for a while (its circuit): an unreachable Redis gives `undefined` fast, and
 * the engine follows `onStoreUnavailable`.
 *
 * In-flight slots are leases: this instance renews the slots of its requests still in flight in
 * one command every third of the lease, and frees a request's slots in one command when its
 * exchange ends; a crashed instance's slots come back after the lease. A lease is renewed only for
 * an exchange that still exists: one whose end was never reported (its `alive` says it is gone)
 * has its slots freed at the next renewal instead.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { RedisConnection } from '../cluster/redis.js';
import type { CompiledTrafficPolicy } from './compile.js';
import { DECIDE, RELEASE, RENEW, USAGE } from './redis-scripts.js';
import { NOTHING_TO_RELEASE, type CheckResult, type SharedStore, type StoreCheck, type StoreVerdict } from './store.js';
import type { GroupUsage } from './types.js';

/** Options of a {@link RedisTrafficStore}. */
export interface RedisTrafficStoreOptions {
  /** Lease of an in-flight slot, milliseconds. */
  leaseMs: number;
}

/** Groups remembered per policy for {@link RedisTrafficStore.usage}: the latest seen here. */
const USAGE_GROUPS = 1000;
/** Slots renewed per command. */
const RENEW_BATCH = 500;
/** Keys of the decisions of one turn past which they are sent at once (a command stays small). */
const BATCH_KEYS = 256;

function kindOf(policy: CompiledTrafficPolicy): 's' | 'f' | 'c' {
  if (policy.metric === 'concurrentRequests') return 'c';
  return policy.window === 'fixed' ? 'f' : 's';
}

function windowMsOf(policy: CompiledTrafficPolicy): number {
  return (policy.windowSeconds ?? 0) * 1000;
}

/** A decision's verdict in the script's reply from `at`, or `undefined` when it is not one. */
function verdictOf(
  values: readonly unknown[],
  at: number,
  n: number,
): { allowed: boolean; results: CheckResult[]; counted: boolean[] } | undefined {
  if (values.length < at + 1 + 3 * n) return undefined;
  const allowed = values[at];
  if (allowed !== 0 && allowed !== 1) return undefined;
  const results: CheckResult[] = [];
  const counted: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const used = values[at + 1 + 3 * i];
    const resetMs = values[at + 2 + 3 * i];
    const wasCounted = values[at + 3 + 3 * i];
    if (typeof used !== 'number' || typeof resetMs !== 'number' || typeof wasCounted !== 'number') return undefined;
    counted.push(wasCounted === 1);
    results.push({ used, resetMs, exceeded: false });
  }
  return { allowed: allowed === 1, results, counted };
}

/** A decision waiting for its turn's command. */
interface Pending {
  readonly id: string;
  readonly checks: readonly StoreCheck[];
  readonly keys: string[];
  readonly wires: PolicyWire[];
  readonly alive: (() => boolean) | undefined;
  readonly resolve: (verdict: StoreVerdict | undefined) => void;
}

/** The in-flight slots of one of this instance's exchanges. */
interface HeldSlots {
  readonly keys: string[];
  /** Whether the exchange still exists; `undefined`: until its release. */
  readonly alive: (() => boolean) | undefined;
}

/** The shared store (see the module comment). */
export class RedisTrafficStore implements SharedStore {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #leaseArg: string;
  readonly #instance = randomBytes(9).toString('base64url');
  #sequence = 0;
  /** Slot keys of this instance's requests in flight, by slot id. */
  readonly #inFlight = new Map<string, HeldSlots>();
  /** Per policy (scope and store name), the latest groups decided here: hash to label. */
  readonly #seen = new Map<string, Map<string, string>>();
  /** What each compiled policy sends with every decision, made once (see {@link RedisTrafficStore.take}). */
  readonly #wire = new WeakMap<CompiledTrafficPolicy, PolicyWire>();
  readonly #renewal: NodeJS.Timeout;
  /** The decisions of this turn, sent together when it ends. */
  #pending: Pending[] = [];
  #pendingKeys = 0;

  constructor(redis: RedisConnection, options: RedisTrafficStoreOptions) {
    this.#redis = redis;
    this.#prefix = `${redis.keyPrefix}traffic:`;
    this.#leaseMs = options.leaseMs;
    this.#leaseArg = String(options.leaseMs);
    this.#renewal = setInterval(() => void this.#renew(), Math.max(1, Math.floor(options.leaseMs / 3)));
    this.#renewal.unref();
    // Loaded ahead so that the first decisions need no second try; EVALSHA falls back by itself.
    void redis.command(['SCRIPT', 'LOAD', DECIDE.source]);
  }

  /** The key of a group of a policy (a fixed window's without the window's index). */
  keyOf(policy: CompiledTrafficPolicy, hash: string): string {
    return `${this.#prefix}${policy.storeName}:${hash}`;
  }

  /**
   * Counts a decision: sent with the other decisions of this event-loop turn in one command (a
   * round trip's CPU shared by them), answered as if alone. `undefined` when Redis did not answer.
   */
  take(checks: readonly StoreCheck[], alive?: () => boolean): Promise<StoreVerdict | undefined> {
    return new Promise((resolve) => {
      const id = `${this.#instance}.${(this.#sequence++).toString(36)}`;
      const keys: string[] = [];
      const wires: PolicyWire[] = [];
      for (const check of checks) {
        const wire = this.#wireOf(check.policy);
        wires.push(wire);
        keys.push(wire.keyPrefix + check.hash);
      }
      this.#pending.push({ id, checks, keys, wires, alive, resolve });
      this.#pendingKeys += keys.length;
      if (this.#pendingKeys >= BATCH_KEYS) this.#flush();
      else if (this.#pending.length === 1) setImmediate(this.#flushSoon);
    });
  }

  readonly #flushSoon = (): void => this.#flush();

  /** Sends the decisions waiting, in one command. */
  #flush(): void {
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    this.#pendingKeys = 0;
    const keys: string[] = [];
    const args = [this.#leaseArg, String(batch.length)];
    for (const { id, checks, wires, keys: own } of batch) {
      args.push(id, String(checks.length));
      checks.forEach((check, i) => {
        const wire = wires[i]!;
        keys.push(own[i]!);
        // Under localShare the limit of a check differs from its policy's.
        args.push(wire.kind, check.limit === check.policy.limit ? wire.limit : String(check.limit), wire.windowMs, wire.enforce);
      });
    }
    void this.#redis.evalScript(DECIDE, keys, args).then((reply) => {
      const values: readonly unknown[] = Array.isArray(reply) ? reply : [];
      let at = 0;
      for (const pending of batch) {
        const parsed = Array.isArray(reply) ? verdictOf(values, at, pending.checks.length) : undefined;
        at += 1 + 3 * pending.checks.length;
        pending.resolve(parsed === undefined ? undefined : this.#verdict(pending, parsed));
      }
    });
  }

  #verdict(pending: Pending, parsed: NonNullable<ReturnType<typeof verdictOf>>): StoreVerdict {
    const { id, checks, keys, wires, alive } = pending;
    const slots: string[] = [];
    const results = parsed.results.map((result, i): CheckResult => {
      const check = checks[i]!;
      remember(wires[i]!.seen, check);
      if (parsed.counted[i] === true && check.policy.metric === 'concurrentRequests') slots.push(keys[i]!);
      // Not counted: past its limit when it had no room (as in the local store).
      const exceeded = parsed.counted[i] === true ? result.used > check.limit : result.used >= check.limit;
      return { ...result, exceeded };
    });
    if (slots.length === 0) return { allowed: parsed.allowed, results, release: NOTHING_TO_RELEASE };
    this.#inFlight.set(id, { keys: slots, alive });
    return { allowed: parsed.allowed, results, release: () => this.#release(id) };
  }

  async usage(policy: CompiledTrafficPolicy, top: number): Promise<GroupUsage[] | undefined> {
    const seen = this.#seen.get(`${policy.scope}\n${policy.storeName}`);
    if (seen === undefined) return [];
    const groups = [...seen];
    const args = groups.flatMap(() => [kindOf(policy), String(windowMsOf(policy))]);
    const reply = await this.#redis.evalScript(
      USAGE,
      groups.map(([hash]) => this.keyOf(policy, hash)),
      args,
    );
    if (!Array.isArray(reply) || reply.length !== groups.length) return undefined;
    return groups
      .map(([, group], i) => ({ group, used: Number(reply[i]), limit: policy.limit }))
      .filter((u) => u.used > 0)
      .sort((a, b) => b.used - a.used || (a.group < b.group ? -1 : 1))
      .slice(0, top);
  }

  /** Stops renewing; the slots still held expire with their lease. */
  async close(): Promise<void> {
    clearInterval(this.#renewal);
    this.#inFlight.clear();
  }

  #release(id: string): void {
    const keys = this.#inFlight.get(id)?.keys;
    if (keys === undefined) return;
    this.#inFlight.delete(id);
    // Not awaited: a slot Redis did not free expires with its lease.
    if (keys.length === 1) void this.#redis.command(['ZREM', keys[0]!, id]);
    else void this.#redis.evalScript(RELEASE, keys, [id]);
  }

  async #renew(): Promise<void> {
    if (this.#inFlight.size === 0) return;
    let keys: string[] = [];
    let ids: string[] = [];
    const flush = async (): Promise<void> => {
      const [k, a] = [keys, ids];
      [keys, ids] = [[], []];
      await this.#redis.evalScript(RENEW, k, [String(this.#leaseMs), ...a]);
    };
    for (const [id, { keys: slots, alive }] of this.#inFlight) {
      // Its exchange is gone without a release: freed now rather than renewed.
      if (alive !== undefined && !alive()) {
        this.#release(id);
        continue;
      }
      for (const key of slots) {
        keys.push(key);
        ids.push(id);
      }
      if (keys.length >= RENEW_BATCH) await flush();
    }
    if (keys.length > 0) await flush();
  }

  #wireOf(policy: CompiledTrafficPolicy): PolicyWire {
    let wire = this.#wire.get(policy);
    if (wire === undefined) {
      const name = `${policy.scope}\n${policy.storeName}`;
      let seen = this.#seen.get(name);
      if (seen === undefined) this.#seen.set(name, (seen = new Map()));
      wire = {
        keyPrefix: this.keyOf(policy, ''),
        kind: kindOf(policy),
        limit: String(policy.limit),
        windowMs: String(windowMsOf(policy)),
        enforce: policy.mode === 'enforce' ? '1' : '0',
        seen,
      };
      this.#wire.set(policy, wire);
    }
    return wire;
  }
}

/** A policy's part of every decision's command, and where its groups seen lately are kept. */
interface PolicyWire {
  readonly keyPrefix: string;
  readonly kind: string;
  readonly limit: string;
  readonly windowMs: string;
  readonly enforce: '1' | '0';
  readonly seen: Map<string, string>;
}

/** Keeps a group among the latest {@link USAGE_GROUPS} of its policy decided here. */
function remember(seen: Map<string, string>, check: StoreCheck): void {
  seen.delete(check.hash);
  seen.set(check.hash, check.group);
  if (seen.size > USAGE_GROUPS) seen.delete(seen.keys().next().value!);
}
