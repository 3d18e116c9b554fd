/**
 * The usage of the traffic policies in force: for each, its busiest groups now (used against the
 * limit), from the engine the gateway runs. Counts are the engine's: with Redis, the shared counts
 * of the groups this instance saw lately; with the local store, this instance's.
 *
 * @module
 */
import { compileTrafficPolicies, type CompiledTrafficPolicy } from '../traffic/compile.js';
import type { TrafficLimiter } from '../traffic/limiter.js';
import type { TrafficPolicy } from '../traffic/schema.js';
import type { GroupUsage } from '../traffic/types.js';

/**
 * Traffic control in force on this instance, as the gateway's compiled configuration holds it (its
 * `Runtime` has this shape): the engine, the policies of every API, and each API's own.
 */
export interface TrafficInForce {
  readonly traffic: {
    /** The engine; `undefined` when no policy is in force. */
    readonly limiter: Pick<TrafficLimiter, 'usage'> | undefined;
    readonly settings: {
      /** Where counts are kept. */
      readonly store: 'local' | 'redis';
      /** The policies of every API (`createGateway`'s option's, then the file's). */
      readonly policies: readonly TrafficPolicy[];
    };
  };
  /** The APIs in force by key, with their own policies. */
  readonly apis: ReadonlyMap<string, { readonly api: { readonly trafficControl: { readonly policies: readonly TrafficPolicy[] } } }>;
}

/** Groups of a policy when the request names no `top`. */
export const USAGE_TOP_DEFAULT = 10;
/** Most groups of a policy an answer shows. */
export const USAGE_TOP_MAX = 100;

/** One policy in force and its busiest groups. */
export interface PolicyUsage {
  /** The API of an API's own policy; `null` for a policy of every API. */
  scope: string | null;
  policy: string;
  metric: TrafficPolicy['metric'];
  mode: NonNullable<TrafficPolicy['mode']>;
  limit: number;
  /** `requests` only. */
  windowSeconds?: number;
  /** `requests` only. */
  window?: NonNullable<TrafficPolicy['window']>;
  groupBy: string[];
  /** The busiest groups now, most used first; groups with nothing counted are left out. */
  groups: GroupUsage[];
}

/** The usage of every policy in force. */
export interface TrafficUsage {
  /** Where counts are kept (`undefined`: nothing is in force yet). */
  store?: 'local' | 'redis';
  policies: PolicyUsage[];
}

async function usageOf(limiter: Pick<TrafficLimiter, 'usage'>, policy: CompiledTrafficPolicy, top: number): Promise<PolicyUsage> {
  const out: PolicyUsage = {
    scope: policy.scope === '' ? null : policy.scope,
    policy: policy.name,
    metric: policy.metric,
    mode: policy.mode,
    limit: policy.limit,
    groupBy: [...policy.groupBy],
    groups: await limiter.usage(policy, top),
  };
  if (policy.windowSeconds !== undefined) out.windowSeconds = policy.windowSeconds;
  if (policy.window !== undefined) out.window = policy.window;
  return out;
}

/**
 * The busiest `top` groups of each policy in force, top-level first, then each API's in the order
 * of the APIs. The policies are compiled again here as the gateway compiled them: the engine keeps
 * counts by a policy's scope, name and kind of count, not by the compiled object.
 */
export async function trafficUsage(inForce: TrafficInForce | undefined, top: number): Promise<TrafficUsage> {
  const limiter = inForce?.traffic.limiter;
  if (inForce === undefined) return { policies: [] };
  const store = inForce.traffic.settings.store;
  if (limiter === undefined) return { store, policies: [] };
  const compiled: CompiledTrafficPolicy[] = [...compileTrafficPolicies(inForce.traffic.settings.policies).all];
  for (const [api, { api: config }] of inForce.apis) {
    const own = config.trafficControl.policies;
    if (own.length > 0) compiled.push(...compileTrafficPolicies(undefined, own, { api }).all);
  }
  return { store, policies: await Promise.all(compiled.map((policy) => usageOf(limiter, policy, top))) };
}
