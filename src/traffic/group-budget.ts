/**
 * The bound on traffic groups (docs/traffic-control.md, "How many groups an instance keeps"): a
 * group is made by the first request of a new value of a policy's `groupBy`, and a client may
 * choose such values freely (`header:<name>`, some claims). So that one client cannot fill the
 * memory of an instance, or take every group for itself, this process keeps a ledger of the groups
 * it counts: at most `max` groups, `maxBytes` of their worst-case heap, and `perClient` made by one
 * client (the token's client and subject, or the client's address without a token). Past the
 * client's share only that client's new groups are refused; its groups already made, and everyone
 * else's, are counted as before.
 *
 * The ledger holds a group for as long as its store may (the window after its last request; a
 * `concurrentRequests` slot's lease), per policy in the order of their last request, which is the
 * order in which they expire.
 *
 * @module
 */
import type { CompiledTrafficPolicy } from './compile.js';
import { LOCAL_BYTES_PER_GROUP_BOUND } from './local-store.js';
import type { StoreCheck } from './store.js';
import type { TrafficFacts } from './types.js';

/** The ledger's bounds (`trafficControl.groups`). */
export interface GroupBudgetBounds {
  /** Groups held at once, over every policy. */
  readonly max: number;
  /** Their worst-case heap, bytes. */
  readonly maxBytes: number;
  /** Groups one client may have made and still held. */
  readonly perClient: number;
}

/** The defaults: 200,000 groups, 128 MiB, 1,000 per client. */
export const GROUP_BUDGET_DEFAULTS: GroupBudgetBounds = Object.freeze({ max: 200_000, maxBytes: 128 * 1024 * 1024, perClient: 1000 });

/** What the ledger adds per group to what the store holds: its entry and the client's name. */
const LEDGER_BYTES_PER_GROUP = 200;
/** Bytes of a sliding window's time (one per request it holds, up to the limit). */
const BYTES_PER_SLIDING_TIME = 8;
/** Longest client name kept: longer ones share the share of their first 256 characters. */
const MAX_CLIENT_NAME = 256;

/** The worst-case heap of one group of `policy`: the store's, its sliding times at the limit, the ledger's entry. */
export function groupBytes(policy: CompiledTrafficPolicy): number {
  const times = policy.metric === 'requests' && policy.window !== 'fixed' ? policy.limit * BYTES_PER_SLIDING_TIME : 0;
  return LOCAL_BYTES_PER_GROUP_BOUND + LEDGER_BYTES_PER_GROUP + times;
}

/** The client a new group is counted to: the token's client and subject, else the address. */
export function clientOf(facts: TrafficFacts): string {
  const { clientId, subject } = facts;
  const name =
    clientId === undefined && subject === undefined
      ? `address ${facts.clientAddress ?? '-'}`
      : `token ${clientId ?? '-'} ${subject ?? '-'}`;
  return name.length > MAX_CLIENT_NAME ? name.slice(0, MAX_CLIENT_NAME) : name;
}

interface Held {
  readonly client: string;
  readonly bytes: number;
  until: number;
}

interface PolicyGroups {
  lifetimeMs: number;
  readonly groups: Map<string, Held>;
  /** False once the sweep dropped them (empty): a policy's cached reference to them is stale. */
  live: boolean;
}

/** Why a request's new group was refused; `undefined` when every group was admitted. */
export interface GroupRefusal {
  /** The check whose group is new and over the bound. */
  readonly check: StoreCheck;
  /** `client`: the client's share is used up; `instance`: the instance's count or bytes are. */
  readonly bound: 'client' | 'instance';
  /** Said in the record's diagnostic. */
  readonly diagnostic: string;
}

/** The ledger (see the module comment). */
export class GroupBudget {
  /** Changed by a reload that keeps the engine: groups held past a lower bound stay until they expire. */
  bounds: GroupBudgetBounds;
  readonly #leaseMs: number;
  readonly #byPolicy = new Map<string, PolicyGroups>();
  /** Each compiled policy's groups, found once: the request path builds no key string. */
  readonly #cached = new WeakMap<CompiledTrafficPolicy, PolicyGroups>();
  readonly #byClient = new Map<string, number>();
  #count = 0;
  #bytes = 0;

  /** `leaseMs`: how long a `concurrentRequests` group is held after its last request. */
  constructor(bounds: GroupBudgetBounds, leaseMs: number) {
    this.bounds = bounds;
    this.#leaseMs = leaseMs;
  }

  /** Groups held. */
  get size(): number {
    return this.#count;
  }

  /** The worst-case heap of the groups held, bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Groups held that `client` made. */
  heldBy(client: string): number {
    return this.#byClient.get(client) ?? 0;
  }

  /**
   * Admits the groups of `checks` at `now`: a known group is held longer, a new one is counted to
   * the request's client when the bounds allow it. Nothing is admitted when one is refused.
   */
  admit(checks: readonly StoreCheck[], facts: TrafficFacts, now: number): GroupRefusal | undefined {
    let fresh: StoreCheck[] | undefined;
    for (const check of checks) {
      // A policy without groupBy has one group: nothing a client can multiply.
      if (check.policy.groupBy.length === 0) continue;
      const held = this.#policyGroups(check.policy).groups.get(check.hash);
      if (held === undefined) (fresh ??= []).push(check);
    }
    if (fresh !== undefined) {
      const refusal = this.#refusal(fresh, facts, now);
      if (refusal !== undefined) return refusal;
    }
    for (const check of checks) if (check.policy.groupBy.length > 0) this.#hold(check, facts, now);
    return undefined;
  }

  /** Forgets the groups whose time has passed. */
  sweep(now: number): void {
    for (const [name, policy] of this.#byPolicy) {
      for (const [hash, held] of policy.groups) {
        if (held.until > now) break;
        policy.groups.delete(hash);
        this.#forget(held);
      }
      if (policy.groups.size === 0) {
        policy.live = false;
        this.#byPolicy.delete(name);
      }
    }
  }

  #refusal(fresh: readonly StoreCheck[], facts: TrafficFacts, now: number): GroupRefusal | undefined {
    const client = clientOf(facts);
    const check = fresh[0]!;
    // Groups past their time are counted until a sweep: one first, before refusing.
    if (this.heldBy(client) + fresh.length > this.bounds.perClient) this.sweep(now);
    if (this.heldBy(client) + fresh.length > this.bounds.perClient) {
      return {
        check,
        bound: 'client',
        diagnostic: `traffic groups: this client holds ${this.heldBy(client)} groups, its share (trafficControl.groups.perClient ${this.bounds.perClient}); no new group for policy ${check.policy.name}`,
      };
    }
    const bytes = fresh.reduce((sum, one) => sum + groupBytes(one.policy), 0);
    if (this.#count + fresh.length > this.bounds.max || this.#bytes + bytes > this.bounds.maxBytes) this.sweep(now);
    if (this.#count + fresh.length > this.bounds.max || this.#bytes + bytes > this.bounds.maxBytes) {
      return {
        check,
        bound: 'instance',
        diagnostic: `traffic groups: this instance holds ${this.#count} groups (${Math.ceil(this.#bytes / 1048576)} MiB at most), its bound (trafficControl.groups max ${this.bounds.max}, maxMegabytes ${Math.floor(this.bounds.maxBytes / 1048576)}); no new group for policy ${check.policy.name}`,
      };
    }
    return undefined;
  }

  #hold(check: StoreCheck, facts: TrafficFacts, now: number): void {
    const policy = this.#policyGroups(check.policy);
    const until = now + policy.lifetimeMs;
    const groups = policy.groups;
    const held = groups.get(check.hash);
    if (held !== undefined) {
      // Moved to the end: the latest to expire.
      groups.delete(check.hash);
      held.until = until;
      groups.set(check.hash, held);
      return;
    }
    const client = clientOf(facts);
    const bytes = groupBytes(check.policy);
    groups.set(check.hash, { client, bytes, until });
    this.#byClient.set(client, this.heldBy(client) + 1);
    this.#count++;
    this.#bytes += bytes;
  }

  #forget(held: Held): void {
    const left = this.heldBy(held.client) - 1;
    if (left > 0) this.#byClient.set(held.client, left);
    else this.#byClient.delete(held.client);
    this.#count--;
    this.#bytes -= held.bytes;
  }

  #policyGroups(policy: CompiledTrafficPolicy): PolicyGroups {
    const cached = this.#cached.get(policy);
    if (cached?.live === true) return cached;
    // Policies of one name in one scope share their groups across a reload (as their counts do).
    const name = `${policy.scope}\n${policy.storeName}`;
    const lifetimeMs = policy.metric === 'concurrentRequests' ? this.#leaseMs : policy.windowSeconds! * 1000;
    let groups = this.#byPolicy.get(name);
    if (groups === undefined) this.#byPolicy.set(name, (groups = { lifetimeMs, groups: new Map(), live: true }));
    // A reload may change the window under the same name: the latest policy's applies.
    else groups.lifetimeMs = lifetimeMs;
    this.#cached.set(policy, groups);
    return groups;
  }
}
