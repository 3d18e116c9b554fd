/**
 * Traffic control's settings as the gateway runs them: `createGateway`'s `trafficControl` option
 * (checked at creation) and the configuration file's top-level section (checked at load) put
 * together at each compilation, defaults applied.
 *
 * - Policies of both apply, the option's first; a name is unique across the option's list, the
 *   file's top-level list and each API's list (all apply to the same requests).
 * - A setting (`maxConcurrentRequests`, `store`, `onStoreUnavailable`, `headers`) is given in one
 *   place: given in both, the configuration is refused, rather than one silently winning.
 * - `store: "redis"` without the gateway's Redis is refused: at creation for the option, at load
 *   (with the file's path) for the file, which `serve` reports and exits 2 on.
 *
 * @module
 */
import type { OptionChecks } from '../options.js';
import { schemaIssues } from '../schema.js';
import { ConfigError } from '../config/errors.js';
import type { ConfigIssue } from '../config/errors.js';
import type { ResolvedApi, ResolvedConfig, ResolvedTrafficPolicy } from '../config/types.js';
import { NO_REDIS_STORE, resolvedTrafficPolicies } from '../config/traffic.js';
import { TrafficControlSchema, trafficPolicyIssues, type TrafficControlSection } from '../traffic/schema.js';

/** Where an issue of the option is said to be, in a {@link ConfigError} of the load. */
const OPTION_PATH = "createGateway's trafficControl";

/** Traffic control of every API, as the gateway runs it. */
export interface TrafficSettings {
  /** Requests in flight on one instance; `undefined`: no cap. */
  readonly maxConcurrentRequests: number | undefined;
  /** Where counts are kept: `redis` by default when the gateway has Redis, else `local`. */
  readonly store: 'local' | 'redis';
  /** What a decision does while Redis cannot be reached. Default `localShare`. */
  readonly onStoreUnavailable: NonNullable<TrafficControlSection['onStoreUnavailable']>;
  /** Which rate-limit headers answers carry. Default `both`. */
  readonly headers: NonNullable<TrafficControlSection['headers']>;
  /** The bound on the groups an instance keeps, as written (the engine applies the defaults). */
  readonly groups: TrafficControlSection['groups'];
  /** Policies of every API: the option's, then the file's top-level ones. */
  readonly policies: readonly ResolvedTrafficPolicy[];
}

/** The settings the section's defaults and the gateway's Redis give when none is written. */
const SETTINGS = ['maxConcurrentRequests', 'store', 'onStoreUnavailable', 'headers', 'groups'] as const;

/**
 * Checks `createGateway`'s `trafficControl` option (the configuration file's top-level shape),
 * failing with the path of the first problem. Returns a copy (later edits of the caller's object
 * change nothing).
 */
export function checkedTrafficOption(value: unknown, check: OptionChecks, hasRedis: boolean): TrafficControlSection | undefined {
  if (value === undefined) return undefined;
  const [issue] = schemaIssues(TrafficControlSchema, value, 'trafficControl');
  if (issue !== undefined) check.fail(issue.path, issue.message);
  const section = structuredClone(value) as TrafficControlSection;
  const [rule] = trafficPolicyIssues(section.policies ?? [], 'trafficControl.policies');
  if (rule !== undefined) check.fail(rule.path, rule.message);
  if (section.store === 'redis' && !hasRedis) check.fail('trafficControl.store', 'is redis, and the gateway has no redis option');
  return section;
}

/** An option policy's `operations` that name no operation of any API. */
function optionOperationIssues(option: TrafficControlSection, apis: readonly ResolvedApi[]): ConfigIssue[] {
  const known = new Set(apis.flatMap((api) => (api.operations ?? []).map((op) => op.name)));
  const issues: ConfigIssue[] = [];
  (option.policies ?? []).forEach((policy, i) =>
    policy.operations?.forEach((name, j) => {
      if (!known.has(name))
        issues.push({ path: `${OPTION_PATH}.policies[${i}].operations[${j}]`, message: `names no operation of any API` });
    }),
  );
  return issues;
}

/**
 * The traffic settings of a configuration with the option, defaults applied. Throws a
 * {@link ConfigError} naming the file's field when the two give one setting or one name, when an
 * option policy filters on an operation no API has, or when the file says `store: "redis"` and the
 * gateway has no Redis.
 */
export function trafficSettings(config: ResolvedConfig, option: TrafficControlSection | undefined, hasRedis: boolean): TrafficSettings {
  const file = config.trafficControl;
  const issues: ConfigIssue[] = [];
  for (const name of SETTINGS) {
    if (option?.[name] !== undefined && file[name] !== undefined)
      issues.push({ path: `trafficControl.${name}`, message: `is also given in ${OPTION_PATH} option: give it in one place` });
  }
  const optionNames = new Set((option?.policies ?? []).map((p) => p.name));
  if (option !== undefined) {
    issues.push(...namedInOption(file.policies, 'trafficControl.policies', optionNames));
    config.apis.forEach((api, i) =>
      issues.push(...namedInOption(api.trafficControl.policies, `apis[${i}].trafficControl.policies`, optionNames)),
    );
    issues.push(...optionOperationIssues(option, config.apis));
  }
  const store = option?.store ?? file.store ?? (hasRedis ? 'redis' : 'local');
  if (store === 'redis' && !hasRedis) issues.push({ path: 'trafficControl.store', message: NO_REDIS_STORE });
  if (issues.length > 0) throw new ConfigError(issues);
  return {
    maxConcurrentRequests: option?.maxConcurrentRequests ?? file.maxConcurrentRequests,
    store,
    onStoreUnavailable: option?.onStoreUnavailable ?? file.onStoreUnavailable ?? 'localShare',
    headers: option?.headers ?? file.headers ?? 'both',
    groups: option?.groups ?? file.groups,
    policies: [...resolvedTrafficPolicies(option?.policies), ...file.policies],
  };
}

/** Policies of the file named like one of the option's (the file's own lists were checked at load). */
function namedInOption(policies: readonly ResolvedTrafficPolicy[], base: string, optionNames: ReadonlySet<string>): ConfigIssue[] {
  return policies.flatMap((policy, i) =>
    optionNames.has(policy.name)
      ? [{ path: `${base}[${i}].name`, message: `"${policy.name}" is already the name of a policy of ${OPTION_PATH} option` }]
      : [],
  );
}
