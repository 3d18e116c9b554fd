/**
 * Policies compiled once, at creation or load: checked against the schema and the rules it cannot
 * say (every issue reported at once, with its path), defaults applied (`window: sliding`,
 * `mode: enforce`), the `operations` filter and the group function built. A request then only
 * picks the policies of its operation and derives its groups.
 *
 * @module
 */
import { schemaIssues } from '../schema.js';
import type { RuleIssue } from '../issues.js';
import { TrafficControlError } from './errors.js';
import { compileGroupKey, type GroupKeyFunction, type GroupLabelKey } from './group-key.js';
import { TrafficPolicySchema, trafficPolicyIssues, type TrafficPolicy } from './schema.js';
import { Type } from '@sinclair/typebox';

/** A policy ready for decisions. */
export interface CompiledTrafficPolicy {
  /** The policy's name. */
  readonly name: string;
  /** `''` for a top-level policy (one counter for every API), else the API's key. */
  readonly scope: string;
  readonly metric: TrafficPolicy['metric'];
  readonly limit: number;
  /** `requests` only. */
  readonly windowSeconds: number | undefined;
  /** `requests` only (`sliding` by default). */
  readonly window: NonNullable<TrafficPolicy['window']> | undefined;
  readonly mode: NonNullable<TrafficPolicy['mode']>;
  readonly groupBy: readonly string[];
  /** The operations it applies to; `undefined`: every request of its scope. */
  readonly operations: ReadonlySet<string> | undefined;
  /**
   * What counts are kept under, apart from the group: the name and the kind of count (`s`
   * sliding, `f<seconds>` fixed, `c` in flight), so that a policy changed from one kind to another
   * starts counts of its own. Policies of the same name in different scopes differ by their
   * groups' hashes (the scope is hashed in).
   */
  readonly storeName: string;
  /** The group of a request's facts. */
  readonly group: GroupKeyFunction;
  /** The policy as written (frozen). */
  readonly source: Readonly<TrafficPolicy>;
}

/** The policies that apply to one API's requests: the top-level ones, then the API's. */
export interface CompiledTrafficPolicies {
  /** Every policy, top-level first, in configuration order. */
  readonly all: readonly CompiledTrafficPolicy[];
  /** The policies that cover a request of `operation`, in the same order. */
  covering(operation: string | undefined): readonly CompiledTrafficPolicy[];
}

/** Options of {@link compileTrafficPolicies}. */
export interface CompileTrafficPoliciesOptions {
  /** The API's key (`provider/name/vN`): the scope of `apiPolicies`. Required with `apiPolicies`. */
  api?: string;
  /** The API's operation names: `operations` of its policies must name one of them (unchecked when absent). */
  apiOperations?: readonly string[];
  /** Path of the top-level list in issues. Default `trafficControl.policies`. */
  topPath?: string;
  /** Path of the API's list in issues. Default `apis[].trafficControl.policies`. */
  apiPath?: string;
  /**
   * The key a group's label hashes a credential header's value under (`groupLabelKey`: the cluster
   * secret's, so that instances agree). Default: this process's own.
   */
  labelKey?: GroupLabelKey;
}

const PolicyList = Type.Array(TrafficPolicySchema);

function storeNameOf(policy: TrafficPolicy): string {
  if (policy.metric === 'concurrentRequests') return `${policy.name}:c`;
  return (policy.window ?? 'sliding') === 'sliding' ? `${policy.name}:s` : `${policy.name}:f${policy.windowSeconds!}`;
}

function compileOne(policy: TrafficPolicy, scope: string, labelKey: GroupLabelKey | undefined): CompiledTrafficPolicy {
  const requests = policy.metric === 'requests';
  const groupBy = Object.freeze([...(policy.groupBy ?? [])]);
  return Object.freeze({
    name: policy.name,
    scope,
    metric: policy.metric,
    limit: policy.limit,
    windowSeconds: requests ? policy.windowSeconds : undefined,
    window: requests ? (policy.window ?? 'sliding') : undefined,
    mode: policy.mode ?? 'enforce',
    groupBy,
    operations: policy.operations === undefined ? undefined : new Set(policy.operations),
    storeName: storeNameOf(policy),
    group: compileGroupKey(groupBy, scope, labelKey),
    source: Object.freeze(structuredClone(policy)),
  });
}

/** Issues of one list: its shape, then (when the shape is right) the rules the schema cannot say. */
function listIssues(value: unknown, path: string, alsoNamed: readonly string[]): RuleIssue[] {
  const shape = schemaIssues(PolicyList, value, path);
  if (shape.length > 0) return shape;
  return trafficPolicyIssues(value as TrafficPolicy[], path, alsoNamed);
}

function operationIssues(policies: readonly TrafficPolicy[], path: string, known: readonly string[]): RuleIssue[] {
  const issues: RuleIssue[] = [];
  policies.forEach((policy, i) =>
    policy.operations?.forEach((operation, j) => {
      if (!known.includes(operation)) {
        issues.push({ path: `${path}[${i}].operations[${j}]`, message: `"${operation}" is not an operation of this API` });
      }
    }),
  );
  return issues;
}

/**
 * Checks and compiles the policies of one API: `top`, the top-level list (every API), and
 * `apiPolicies`, the API's own (`undefined` for none). Throws a {@link TrafficControlError} listing
 * every issue with its path.
 *
 * @example
 * ```ts
 * const policies = compileTrafficPolicies([{ name: 'per-client', metric: 'requests', limit: 100, windowSeconds: 60, groupBy: ['clientId'] }]);
 * ```
 */
export function compileTrafficPolicies(
  top: unknown,
  apiPolicies?: unknown,
  options: CompileTrafficPoliciesOptions = {},
): CompiledTrafficPolicies {
  const topPath = options.topPath ?? 'trafficControl.policies';
  const apiPath = options.apiPath ?? 'apis[].trafficControl.policies';
  const issues = top === undefined ? [] : listIssues(top, topPath, []);
  const topList = top === undefined || issues.length > 0 ? [] : (top as TrafficPolicy[]);
  if (apiPolicies !== undefined) {
    if (options.api === undefined || options.api === '') issues.push({ path: apiPath, message: 'needs the API key as options.api' });
    const own = listIssues(
      apiPolicies,
      apiPath,
      topList.map((p) => p.name),
    );
    issues.push(...own);
    if (own.length === 0 && options.apiOperations !== undefined) {
      issues.push(...operationIssues(apiPolicies as TrafficPolicy[], apiPath, options.apiOperations));
    }
  }
  if (issues.length > 0) throw new TrafficControlError(issues);
  const all = Object.freeze([
    ...topList.map((p) => compileOne(p, '', options.labelKey)),
    ...((apiPolicies as TrafficPolicy[] | undefined) ?? []).map((p) => compileOne(p, options.api!, options.labelKey)),
  ]);
  return policySet(all);
}

/** The list, with the policies of each operation named by a policy picked once. */
function policySet(all: readonly CompiledTrafficPolicy[]): CompiledTrafficPolicies {
  const unfiltered = Object.freeze(all.filter((p) => p.operations === undefined));
  const byOperation = new Map<string, readonly CompiledTrafficPolicy[]>();
  for (const policy of all) {
    for (const operation of policy.operations ?? []) {
      if (!byOperation.has(operation)) {
        byOperation.set(operation, Object.freeze(all.filter((p) => p.operations === undefined || p.operations.has(operation))));
      }
    }
  }
  return Object.freeze({
    all,
    covering: (operation: string | undefined) => (operation === undefined ? unfiltered : (byOperation.get(operation) ?? unfiltered)),
  });
}
