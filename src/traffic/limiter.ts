/**
 * The engine of traffic control: decisions over the policies that cover a request, counted in the
 * local store or in Redis (shared by every instance), with `onStoreUnavailable` while Redis cannot
 * be reached, and the instance's cap on requests in flight.
 *
 * @module
 */
import type { RedisConnection } from '../cluster/redis.js';
import { optionChecks, optionKeys } from '../options.js';
import { schemaIssues } from '../schema.js';
import { compileTrafficPolicies, type CompiledTrafficPolicies, type CompiledTrafficPolicy } from './compile.js';
import { decisionOf, groupRefusedDecision, policyResult, uncountedDecision, UNCOVERED, type TrafficPolicyResult } from './decision.js';
import { GROUP_BUDGET_DEFAULTS, GroupBudget, type GroupBudgetBounds } from './group-budget.js';
import { groupLabelKey } from './group-key.js';
import { TrafficControlError, TrafficStoreError } from './errors.js';
import type { TrafficHeaderSet } from './headers.js';
import { InstanceCap } from './instance-cap.js';
import { LocalTrafficStore } from './local-store.js';
import { RedisTrafficStore } from './redis-store.js';
import { TrafficControlSchema, type TrafficControlSection, type STORE_UNAVAILABLE_MODES } from './schema.js';
import type { SharedStore, StoreCheck } from './store.js';
import type { GroupUsage, TrafficDecision, TrafficFacts } from './types.js';

/** What the engine needs besides the section: the shared store's connection, the cluster's size, metrics. */
export interface TrafficLimiterOptions {
  /** Redis, for `store: "redis"` (the default when given). Its key prefix prefixes the counts' keys. */
  redis?: RedisConnection;
  /**
   * The live instances (from the instance registry), for `localShare`: each allows
   * `ceil(limit / live)` while Redis cannot be reached. `undefined` or absent: 1.
   */
  liveInstances?: () => number | undefined;
  /** Called for each policy of each decision (for `gateway_traffic_decisions_total`). */
  onPolicyResult?: (api: string, policy: string, result: TrafficPolicyResult) => void;
  /**
   * How long a slot of a `concurrentRequests` policy stays taken in Redis without renewal,
   * milliseconds: a crashed instance's slots are freed after it. Renewed every third of it. Default 15000.
   */
  concurrencyLeaseMs?: number;
  /** The local store's clock, epoch milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Interval of the local store's sweep of expired groups, milliseconds. Default 1000. */
  sweepMs?: number;
  /**
   * The cluster secret (or a rotation list, the first signing): a credential header's group label
   * is hashed under a key derived from it, so that instances sharing it show one key by one label.
   * Absent: this process's own key.
   */
  clusterSecret?: string | readonly string[];
}

const LIMITER_KEYS = optionKeys<TrafficLimiterOptions>({
  redis: true,
  liveInstances: true,
  onPolicyResult: true,
  concurrencyLeaseMs: true,
  now: true,
  sweepMs: true,
  clusterSecret: true,
});

type StoreUnavailableMode = (typeof STORE_UNAVAILABLE_MODES)[number];

/** The engine (see the module comment). Create it with `createTrafficLimiter`. */
export class TrafficLimiter {
  /** Where counts are kept. */
  readonly store: 'local' | 'redis';
  /** What a decision does while Redis cannot be reached. */
  readonly onStoreUnavailable: StoreUnavailableMode;
  /** Which rate-limit header fields answers carry. */
  readonly headers: TrafficHeaderSet;
  /** The section's top-level policies, compiled (for a host with no APIs of its own: the `trafficControl` middleware). */
  readonly policies: CompiledTrafficPolicies;
  /** The instance's cap, when `maxConcurrentRequests` is set. */
  readonly instanceCap: InstanceCap | undefined;
  /** The bound on the groups this instance keeps, and each client's share of them. */
  readonly groups: GroupBudget;
  readonly #now: () => number;
  readonly #sweep: NodeJS.Timeout | undefined;
  readonly #local: LocalTrafficStore;
  readonly #shared: SharedStore | undefined;
  readonly #lastShared = new LastSharedCounts();
  readonly #liveInstances: () => number | undefined;
  readonly #onPolicyResult: TrafficLimiterOptions['onPolicyResult'];

  /** @internal Use {@link createTrafficLimiter}. */
  constructor(section: TrafficControlSection, policies: CompiledTrafficPolicies, options: TrafficLimiterOptions, leaseMs: number) {
    this.store = section.store ?? (options.redis === undefined ? 'local' : 'redis');
    this.onStoreUnavailable = section.onStoreUnavailable ?? 'localShare';
    this.headers = section.headers ?? 'both';
    this.policies = policies;
    this.instanceCap = section.maxConcurrentRequests === undefined ? undefined : new InstanceCap(section.maxConcurrentRequests);
    this.groups = new GroupBudget(groupBounds(section.groups), leaseMs);
    this.#now = options.now ?? Date.now;
    const sweepMs = options.sweepMs ?? 1000;
    if (sweepMs > 0) {
      this.#sweep = setInterval(() => this.groups.sweep(this.#now()), sweepMs);
      this.#sweep.unref();
    }
    this.#local = new LocalTrafficStore({ now: options.now, sweepMs: options.sweepMs });
    this.#shared = this.store === 'redis' ? new RedisTrafficStore(options.redis!, { leaseMs }) : undefined;
    this.#liveInstances = options.liveInstances ?? (() => 1);
    this.#onPolicyResult = options.onPolicyResult;
  }

  /** Requests in flight on this instance (0 without a cap): the `gateway_concurrent_requests` gauge. */
  get inFlight(): number {
    return this.instanceCap?.inFlight ?? 0;
  }

  /**
   * Decides a request over the policies of `policies` that cover its operation, and counts it.
   * Never rejects: a store that cannot be reached gives a decision by `onStoreUnavailable`.
   * Call the decision's `release()` once the exchange ends. `alive` says whether the exchange
   * still exists: the Redis store renews the lease of its in-flight slots only while it does (and
   * frees them when it no longer does, should `release()` never come).
   */
  async decide(facts: TrafficFacts, policies: CompiledTrafficPolicies, alive?: () => boolean): Promise<TrafficDecision> {
    const covering = policies.covering(facts.operation);
    if (covering.length === 0 || this.#shared === undefined) return this.#atOnce(facts, covering);
    const checks = checksOf(facts, covering);
    const refusal = this.groups.admit(checks, facts, this.#now());
    if (refusal !== undefined) return this.#reported(facts, groupRefusedDecision(checks, refusal));
    const verdict = await this.#shared.take(checks, alive);
    if (verdict === undefined) return this.#reported(facts, this.#withoutStore(checks));
    this.#lastShared.note(checks, verdict, this.#now());
    return this.#reported(facts, decisionOf(checks, verdict));
  }

  /**
   * {@link decide}'s decision when it needs no round trip (no policy covers the request, or the
   * store is local), so that the request goes on in the same turn; `undefined` when it must ask
   * Redis.
   */
  decideAtOnce(facts: TrafficFacts, policies: CompiledTrafficPolicies): TrafficDecision | undefined {
    const covering = policies.covering(facts.operation);
    return covering.length === 0 || this.#shared === undefined ? this.#atOnce(facts, covering) : undefined;
  }

  /** The decision over `covering` that needs no round trip: none covers the request, or the store is local. */
  #atOnce(facts: TrafficFacts, covering: readonly CompiledTrafficPolicy[]): TrafficDecision {
    if (covering.length === 0) return UNCOVERED;
    const checks = checksOf(facts, covering);
    const refusal = this.groups.admit(checks, facts, this.#now());
    if (refusal !== undefined) return this.#reported(facts, groupRefusedDecision(checks, refusal));
    return this.#reported(facts, decisionOf(checks, this.#local.take(checks)));
  }

  /** The busiest groups of a policy now, most used first (Redis: the groups this instance saw lately). */
  async usage(policy: CompiledTrafficPolicy, top = 10): Promise<GroupUsage[]> {
    if (this.#shared !== undefined) {
      const shared = await this.#shared.usage(policy, top);
      if (shared !== undefined) return shared;
    }
    return this.#local.usage(policy, top);
  }

  /** Stops the timers and frees the counts (Redis keys expire by themselves). */
  async close(): Promise<void> {
    if (this.#sweep !== undefined) clearInterval(this.#sweep);
    this.#local.close();
    await this.#shared?.close();
  }

  #reported(facts: TrafficFacts, decision: TrafficDecision): TrafficDecision {
    if (this.#onPolicyResult !== undefined) {
      const api = facts.api;
      for (const standing of decision.standings) this.#onPolicyResult(api, standing.policy, policyResult(decision, standing));
    }
    return decision;
  }

  #withoutStore(checks: readonly StoreCheck[]): TrafficDecision {
    const mode = this.onStoreUnavailable;
    if (mode !== 'localShare') return uncountedDecision(checks, mode);
    const live = this.#liveInstances();
    const share = live === undefined || !Number.isSafeInteger(live) || live < 1 ? 1 : live;
    const now = this.#now();
    // What the window had already used in Redis is not allowed again: each instance's share is of what was left.
    const shared = checks.map((check) => ({
      ...check,
      limit: Math.ceil(Math.max(0, check.limit - this.#lastShared.used(check, now)) / share),
    }));
    return decisionOf(shared, this.#local.take(shared), 'localShare');
  }
}

/** Groups whose last count in Redis is kept, for `localShare` (past it, every one is forgotten and the count starts again). */
const LAST_SHARED_MAX = 100_000;

/**
 * The last count Redis gave each group of a `requests` policy, so that `localShare` starts from
 * what the window had used rather than from zero: a fixed window's count holds until the window
 * ends; a sliding window's is taken to fall evenly to zero over the window.
 */
class LastSharedCounts {
  #byPolicy = new WeakMap<CompiledTrafficPolicy, Map<string, { used: number; at: number }>>();
  #size = 0;

  note(checks: readonly StoreCheck[], verdict: { readonly results: ReadonlyArray<{ readonly used: number }> }, now: number): void {
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i]!;
      if (check.policy.metric !== 'requests') continue;
      let groups = this.#byPolicy.get(check.policy);
      if (groups === undefined) this.#byPolicy.set(check.policy, (groups = new Map()));
      if (!groups.has(check.hash) && ++this.#size > LAST_SHARED_MAX) {
        // Bounded: forgotten all at once (a switch then starts those groups from zero, as before).
        this.#byPolicy = new WeakMap([[check.policy, (groups = new Map())]]);
        this.#size = 1;
      }
      groups.set(check.hash, { used: verdict.results[i]!.used, at: now });
    }
  }

  /** What the group had used of its window at `now`, as far as Redis last said. */
  used(check: StoreCheck, now: number): number {
    const last = this.#byPolicy.get(check.policy)?.get(check.hash);
    const policy = check.policy;
    if (last === undefined || policy.windowSeconds === undefined) return 0;
    const windowMs = policy.windowSeconds * 1000;
    if (policy.window === 'fixed') return Math.floor(now / windowMs) === Math.floor(last.at / windowMs) ? last.used : 0;
    const elapsed = now - last.at;
    return elapsed >= windowMs ? 0 : Math.ceil(last.used * (1 - elapsed / windowMs));
  }
}

/** `trafficControl.groups` with its defaults, in bytes. */
export function groupBounds(groups: TrafficControlSection['groups'] = {}): GroupBudgetBounds {
  return {
    max: groups.max ?? GROUP_BUDGET_DEFAULTS.max,
    maxBytes: groups.maxMegabytes === undefined ? GROUP_BUDGET_DEFAULTS.maxBytes : groups.maxMegabytes * 1024 * 1024,
    perClient: groups.perClient ?? GROUP_BUDGET_DEFAULTS.perClient,
  };
}

/** One check per covering policy: the request's group in it. */
function checksOf(facts: TrafficFacts, covering: readonly CompiledTrafficPolicy[]): StoreCheck[] {
  return covering.map((policy) => {
    const { label, hash } = policy.group(facts);
    return { policy, hash, group: label, limit: policy.limit };
  });
}

/**
 * Creates the engine from the top-level section (the configuration file's `trafficControl`, also
 * `createGateway`'s and `trafficControl`'s options) and what it needs besides. Throws a
 * {@link TrafficControlError} (every issue, with its path below `path`) for an invalid section, a
 * {@link TrafficStoreError} for `store: "redis"` without `options.redis`, an `InvalidOptionError`
 * for a bad option.
 */
export function createTrafficLimiter(
  section: TrafficControlSection = {},
  options: TrafficLimiterOptions = {},
  path = 'trafficControl',
): TrafficLimiter {
  const check = optionChecks('createTrafficLimiter');
  check.object(options, '');
  check.known(options, '', LIMITER_KEYS);
  if (options.redis !== undefined && (options.redis === null || typeof options.redis.command !== 'function')) {
    check.fail('redis', 'must be a RedisConnection (connectRedis)');
  }
  check.optionalFunction(options.liveInstances, 'liveInstances');
  check.optionalFunction(options.onPolicyResult, 'onPolicyResult');
  check.optionalFunction(options.now, 'now');
  const leaseMs = check.positive(options.concurrencyLeaseMs, 'concurrencyLeaseMs', 15_000, true);
  if (options.sweepMs !== undefined) check.nonNegative(options.sweepMs, 'sweepMs', 1000);
  // The section's shape; its policies' own rules are checked as they compile.
  const issues = schemaIssues(TrafficControlSchema, section, path);
  if (issues.length > 0) throw new TrafficControlError(issues);
  const secret = options.clusterSecret;
  if (secret !== undefined && !(typeof secret === 'string' || (Array.isArray(secret) && secret.every((s) => typeof s === 'string'))))
    check.fail('clusterSecret', 'must be a string or an array of strings');
  const labelKey = groupLabelKey(secret);
  const policies = compileTrafficPolicies(section.policies ?? [], undefined, { topPath: `${path}.policies`, labelKey });
  if (section.store === 'redis' && options.redis === undefined) throw new TrafficStoreError();
  return new TrafficLimiter(section, policies, options, leaseMs);
}
