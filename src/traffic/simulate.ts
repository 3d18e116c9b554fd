/**
 * What-if: how many of a list of recorded transactions a policy would have refused, and in which
 * groups, with the local store's windows on the transactions' own clock (the same semantics as a
 * live decision: refused requests do not count). Pure: no timer, no I/O; the configuration
 * console runs it in a worker over recorded traffic.
 *
 * @module
 */
import { compileTrafficPolicies } from './compile.js';
import { LocalTrafficStore } from './local-store.js';
import type { TrafficPolicy } from './schema.js';
import type { StoreCheck } from './store.js';
import type { TrafficFacts } from './types.js';

/**
 * A recorded transaction, as the simulation reads it: the facts a decision reads (headers as
 * recorded instead of a lookup), and when and how long.
 */
export interface SimulatedTransaction extends Omit<TrafficFacts, 'header'> {
  /** Epoch milliseconds at which the gateway took the request. */
  readonly startedAt: number;
  /** How long the exchange lasted, milliseconds (for `concurrentRequests`; absent: 0). */
  readonly durationMs?: number | undefined;
  /** Request headers recorded (any case), for `header:<name>`. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** One group's outcome. */
export interface SimulatedGroup {
  readonly group: string;
  readonly allowed: number;
  readonly refused: number;
}

/** The outcome of a simulation. */
export interface TrafficSimulation {
  /** Transactions the policy covered (its API and operations). */
  readonly covered: number;
  /** Of which it would have refused (a `warningOnly` policy is simulated as enforced). */
  readonly refused: number;
  /** Groups with a refusal, most refused first (at most `topGroups`). */
  readonly groups: readonly SimulatedGroup[];
  /** Distinct groups seen. */
  readonly groupCount: number;
}

/** Options of {@link simulateTrafficPolicy}. */
export interface SimulateTrafficPolicyOptions {
  /** The API whose policy it is (its transactions only); absent: a top-level policy (every API). */
  api?: string;
  /** Most groups in the result. Default 100. */
  topGroups?: number;
}

/** A min-heap of in-flight ends, each with its release. */
class Ends {
  readonly #items: Array<{ at: number; release: () => void }> = [];

  push(at: number, release: () => void): void {
    const items = this.#items;
    items.push({ at, release });
    for (let i = items.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= items[i]!.at) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  /** Releases every end at or before `now`. */
  releaseUntil(now: number): void {
    const items = this.#items;
    while (items.length > 0 && items[0]!.at <= now) {
      items[0]!.release();
      const last = items.pop()!;
      if (items.length === 0) break;
      items[0] = last;
      for (let i = 0; ;) {
        const [l, r] = [2 * i + 1, 2 * i + 2];
        let least = i;
        if (l < items.length && items[l]!.at < items[least]!.at) least = l;
        if (r < items.length && items[r]!.at < items[least]!.at) least = r;
        if (least === i) break;
        [items[least], items[i]] = [items[i]!, items[least]!];
        i = least;
      }
    }
  }
}

function factsOfRecord(t: SimulatedTransaction): TrafficFacts {
  const headers = new Map(Object.entries(t.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  return { ...t, header: (name) => headers.get(name) };
}

/**
 * Simulates `policy` (checked as at load: a {@link TrafficControlError} lists its issues) over
 * `transactions` (sorted by `startedAt` first when they are not in that order).
 */
export function simulateTrafficPolicy(
  policy: TrafficPolicy,
  transactions: readonly SimulatedTransaction[],
  options: SimulateTrafficPolicyOptions = {},
): TrafficSimulation {
  const enforced = { ...policy, mode: 'enforce' as const };
  const compiled =
    options.api === undefined
      ? compileTrafficPolicies([enforced], undefined, { topPath: 'policy' })
      : compileTrafficPolicies(undefined, [enforced], { api: options.api, apiPath: 'policy' });
  const ordered = transactions.every((t, i) => i === 0 || transactions[i - 1]!.startedAt <= t.startedAt)
    ? transactions
    : [...transactions].sort((a, b) => a.startedAt - b.startedAt);
  let now = 0;
  const store = new LocalTrafficStore({ now: () => now, sweepMs: 0 });
  const ends = new Ends();
  const groups = new Map<string, { group: string; allowed: number; refused: number }>();
  let covered = 0;
  let refused = 0;
  try {
    for (const t of ordered) {
      if (options.api !== undefined && t.api !== options.api) continue;
      const [covering] = compiled.covering(t.operation);
      if (covering === undefined) continue;
      now = t.startedAt;
      ends.releaseUntil(now);
      covered++;
      const { label, hash } = covering.group(factsOfRecord(t));
      const check: StoreCheck = { policy: covering, hash, group: label, limit: covering.limit };
      const verdict = store.take([check]);
      let group = groups.get(hash);
      if (group === undefined) groups.set(hash, (group = { group: label, allowed: 0, refused: 0 }));
      if (verdict.allowed) {
        group.allowed++;
        if (covering.metric === 'concurrentRequests') ends.push(now + Math.max(0, t.durationMs ?? 0), verdict.release);
      } else {
        group.refused++;
        refused++;
      }
      // Expired groups go as the simulated clock moves, as the live sweep would let them.
      if (covered % 10_000 === 0) store.sweep(now);
    }
  } finally {
    store.close();
  }
  const withRefusals = [...groups.values()].filter((g) => g.refused > 0);
  withRefusals.sort((a, b) => b.refused - a.refused || (a.group < b.group ? -1 : 1));
  return { covered, refused, groups: withRefusals.slice(0, options.topGroups ?? 100), groupCount: groups.size };
}
