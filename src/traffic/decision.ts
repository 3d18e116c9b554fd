/**
 * A decision built from a store's verdict: the standings in the policies' order, the policy that
 * refused (the longest wait of those that did) and `Retry-After`.
 *
 * @module
 */
import type { GroupRefusal } from './group-budget.js';
import { NOTHING_TO_RELEASE, type StoreCheck, type StoreVerdict } from './store.js';
import type { PolicyStanding, TrafficDecision } from './types.js';

/** The result a decision gives one policy, for metrics. */
export type TrafficPolicyResult = 'allowed' | 'limited' | 'warning' | 'store_unavailable';

/** The fallback of a decision made without the shared store. */
export type StoreFallback = NonNullable<TrafficDecision['fallback']>;

const NO_STANDINGS: readonly PolicyStanding[] = Object.freeze([]);

/** The decision of a request no policy covers. */
export const UNCOVERED: TrafficDecision = Object.freeze({
  result: 'allowed',
  standings: NO_STANDINGS,
  storeUnavailable: false,
  release: NOTHING_TO_RELEASE,
});

function standingOf(check: StoreCheck, used: number, resetMs: number, exceeded: boolean): PolicyStanding {
  const { policy } = check;
  return {
    policy: policy.name,
    metric: policy.metric,
    mode: policy.mode,
    limit: check.limit,
    windowSeconds: policy.windowSeconds,
    group: check.group,
    remaining: exceeded ? 0 : Math.max(0, check.limit - used),
    resetSeconds: Math.ceil(resetMs / 1000),
    exceeded,
  };
}

/** The decision of a store's verdict (`fallback` when the shared store was not reached). */
export function decisionOf(checks: readonly StoreCheck[], verdict: StoreVerdict, fallback?: StoreFallback): TrafficDecision {
  const standings = checks.map((check, i) =>
    standingOf(check, verdict.results[i]!.used, verdict.results[i]!.resetMs, verdict.results[i]!.exceeded),
  );
  const storeUnavailable = fallback !== undefined;
  if (verdict.allowed) return { result: 'allowed', standings, storeUnavailable, fallback, release: verdict.release };
  let limitedBy: PolicyStanding | undefined;
  for (const standing of standings) {
    if (standing.exceeded && standing.mode === 'enforce' && (limitedBy === undefined || standing.resetSeconds > limitedBy.resetSeconds)) {
      limitedBy = standing;
    }
  }
  return {
    result: 'limited',
    limitedBy,
    standings,
    storeUnavailable,
    fallback,
    retryAfterSeconds: Math.max(1, limitedBy?.resetSeconds ?? 1),
    release: verdict.release,
  };
}

/** Whether a decision holds slots of a `concurrentRequests` policy, to release when its exchange ends. */
export function holdsSlots(decision: TrafficDecision): boolean {
  return decision.release !== NOTHING_TO_RELEASE;
}

/** The decision made without counting, the shared store unreachable: `allow` or `deny`. */
export function uncountedDecision(checks: readonly StoreCheck[], fallback: 'allow' | 'deny'): TrafficDecision {
  const standings = checks.map((check) => standingOf(check, 0, 0, false));
  return {
    result: fallback === 'allow' ? 'allowed' : 'unavailable',
    standings,
    storeUnavailable: true,
    fallback,
    release: NOTHING_TO_RELEASE,
  };
}

/** What a decision gives each policy, for metrics. */
export function policyResult(decision: TrafficDecision, standing: PolicyStanding): TrafficPolicyResult {
  if (decision.storeUnavailable) return 'store_unavailable';
  if (!standing.exceeded) return 'allowed';
  return standing.mode === 'enforce' ? 'limited' : 'warning';
}

/** Seconds a client refused a new group is told to wait: groups free as their windows pass. */
export const GROUP_REFUSAL_RETRY_SECONDS = 60;

/** The decision of a request whose new group the bound on groups refused: nothing was counted. */
export function groupRefusedDecision(checks: readonly StoreCheck[], refusal: GroupRefusal): TrafficDecision {
  const standings = checks.map((check) =>
    check === refusal.check ? standingOf(check, check.limit, GROUP_REFUSAL_RETRY_SECONDS * 1000, true) : standingOf(check, 0, 0, false),
  );
  return {
    result: 'limited',
    limitedBy: standings[checks.indexOf(refusal.check)],
    standings,
    storeUnavailable: false,
    retryAfterSeconds: GROUP_REFUSAL_RETRY_SECONDS,
    groupRefusal: refusal.diagnostic,
    release: NOTHING_TO_RELEASE,
  };
}

/** What the record says of a `limited` decision: the policy and group, and why. */
export function limitedDiagnostic(decision: TrafficDecision): string {
  const by = decision.limitedBy;
  if (by === undefined) return 'traffic control refused';
  if (decision.groupRefusal !== undefined) return `policy ${by.policy}, group ${by.group}: ${decision.groupRefusal}`;
  return `policy ${by.policy}, group ${by.group}: limit ${by.limit} reached`;
}
