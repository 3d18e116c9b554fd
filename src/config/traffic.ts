/**
 * Traffic control in the configuration file: the rules its schema cannot say (names unique across
 * the two lists that apply together, `operations` that name operations, the policy's own rules of
 * `traffic/schema.ts`), and its resolved form. Whether `store: "redis"` has a Redis to use is the
 * gateway's to check: only it knows (see `gateway/traffic.ts`).
 *
 * @module
 */
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { RuleIssue } from '../issues.js';
import { TrafficPolicySchema, trafficPolicyIssues, type TrafficControlSection, type TrafficPolicy } from '../traffic/schema.js';
import type { ResolvedTrafficControl, ResolvedTrafficPolicy } from './types.js';

type Obj = Record<string, unknown>;

const PolicyList = Type.Array(TrafficPolicySchema);

function isObj(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The policies of a section when the schema accepts every one of them (the schema reports the others). */
function wellFormed(section: unknown): TrafficPolicy[] | undefined {
  const policies = isObj(section) ? section.policies : undefined;
  return Value.Check(PolicyList, policies) ? policies : undefined;
}

/** The operation names an API declares, or `undefined` when it lists none. */
function operationsOf(api: Obj): Set<string> | undefined {
  if (!Array.isArray(api.operations)) return undefined;
  return new Set(api.operations.flatMap((op: unknown) => (isObj(op) && typeof op.name === 'string' ? [op.name] : [])));
}

/** `operations` entries of `policies` that name no operation of `known` (`undefined`: the API lists none). */
function operationIssues(
  policies: readonly TrafficPolicy[],
  base: string,
  known: ReadonlySet<string> | undefined,
  scope: string,
): RuleIssue[] {
  const issues: RuleIssue[] = [];
  policies.forEach((policy, i) => {
    const at = `${base}[${i}].operations`;
    if (policy.operations === undefined) return;
    if (known === undefined) {
      issues.push({ path: at, message: `${scope} lists no operations: the policy would cover nothing` });
      return;
    }
    policy.operations.forEach((name, j) => {
      if (!known.has(name))
        issues.push({ path: `${at}[${j}]`, message: `names no operation of ${scope} (${[...known].join(', ') || 'none declared'})` });
    });
  });
  return issues;
}

/**
 * The rules of traffic control beside its schema, for the top-level section and each API's: a
 * name is unique across the top-level list and the API's (both apply to the API's requests); an
 * `operations` entry names an operation of the API (of some API, at the top).
 */
export function trafficRules(input: Obj, issues: RuleIssue[]): void {
  const apis = (Array.isArray(input.apis) ? input.apis : []).filter(isObj);
  const top = wellFormed(input.trafficControl);
  const topSection = isObj(input.trafficControl) && Array.isArray(input.trafficControl.policies) ? input.trafficControl.policies : [];
  const topNames = topSection.flatMap((p: unknown) => (isObj(p) && typeof p.name === 'string' ? [p.name] : []));
  if (top !== undefined) {
    issues.push(...trafficPolicyIssues(top, 'trafficControl.policies'));
    const everyOperation = new Set(apis.flatMap((api) => [...(operationsOf(api) ?? [])]));
    issues.push(...operationIssues(top, 'trafficControl.policies', everyOperation, 'any API'));
  }
  (Array.isArray(input.apis) ? input.apis : []).forEach((api: unknown, i) => {
    if (!isObj(api)) return;
    const own = wellFormed(api.trafficControl);
    if (own === undefined) return;
    const base = `apis[${i}].trafficControl.policies`;
    issues.push(...trafficPolicyIssues(own, base, topNames));
    issues.push(...operationIssues(own, base, operationsOf(api), 'this API'));
  });
}

/** Valid policies with their defaults applied (copies: later edits of the document wait for a reload). */
export function resolvedTrafficPolicies(policies: readonly TrafficPolicy[] | undefined): ResolvedTrafficPolicy[] {
  return (policies ?? []).map((policy) => {
    const { operations, groupBy, window, mode, ...rest } = policy;
    return {
      ...rest,
      ...(policy.metric === 'requests' ? { window: window ?? 'sliding' } : {}),
      groupBy: [...(groupBy ?? [])],
      ...(operations === undefined ? {} : { operations: [...operations] }),
      mode: mode ?? 'enforce',
    };
  });
}

/** The valid top-level section, resolved: settings as written (`undefined` when not given), policies with their defaults. */
export function resolvedTrafficControl(section: TrafficControlSection | undefined): ResolvedTrafficControl {
  return {
    maxConcurrentRequests: section?.maxConcurrentRequests,
    store: section?.store,
    onStoreUnavailable: section?.onStoreUnavailable,
    headers: section?.headers,
    groups: section?.groups === undefined ? undefined : { ...section.groups },
    policies: resolvedTrafficPolicies(section?.policies),
  };
}

/** The problem of `trafficControl.store: "redis"` in a gateway without Redis (refused at load, and at a save of the console). */
export const NO_REDIS_STORE = 'is redis, and the gateway has no Redis (give serve REDIS_URL, or createGateway its redis option)';
