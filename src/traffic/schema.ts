/**
 * The schema of traffic control (rate limits and quotas) in the configuration file and in the
 * options of `createGateway` and `trafficControl`: the same shape everywhere. `trafficControl` at
 * the top applies to every API; `apis[i].trafficControl` holds only `policies`, for that API.
 * Rules the schema cannot say (a name used twice, `windowSeconds` with `concurrentRequests`) are
 * {@link trafficPolicyIssues}, run after it.
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';
import type { RuleIssue } from '../issues.js';
import { NonEmptyString, OneOf, PositiveInteger } from '../schema.js';

/** What a policy counts: requests per window, or requests in flight on every instance. */
export const TRAFFIC_METRICS = ['requests', 'concurrentRequests'] as const;
/** How a `requests` window moves. */
export const TRAFFIC_WINDOWS = ['sliding', 'fixed'] as const;
/** Whether a policy refuses past its limit or only says so. */
export const TRAFFIC_MODES = ['enforce', 'warningOnly'] as const;
/** Where counts are kept. */
export const TRAFFIC_STORES = ['local', 'redis'] as const;
/** What a decision does while the shared store cannot be reached. */
export const STORE_UNAVAILABLE_MODES = ['localShare', 'allow', 'deny'] as const;
/** Which rate-limit header fields answers carry. */
export const TRAFFIC_HEADER_SETS = ['both', 'ietf', 'legacy', 'none'] as const;
/** The facts a policy can group by without a name; `claim:<name>` and `header:<name>` besides. */
export const TRAFFIC_GROUP_FACTS = ['clientId', 'subject', 'issuer', 'clientAddress', 'api', 'operation'] as const;

/**
 * Headers a policy may not group by: their values are credentials, and a group's name is shown in
 * records and consoles.
 */
export const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'dpop'] as const;

/** Longest `windowSeconds`: 31 days, the longest quota a count is kept for. */
export const MAX_WINDOW_SECONDS = 31 * 24 * 3600;
/** Largest `limit`: far above any real quota, small enough for exact integer arithmetic everywhere. */
export const MAX_LIMIT = 1_000_000_000;

/** A policy name: shown in `RateLimit-Policy` (a structured-field string), records, metrics and consoles. */
const PolicyName = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._~-]{0,63}$',
  description: 'Unique in its list; shown in headers, records, metrics and consoles.',
  errorMessage: 'must be 1-64 letters, digits, ".", "_", "~" or "-", starting with a letter or digit',
});

/** One `groupBy` member. */
const GroupBy = Type.String({
  pattern: "^(clientId|subject|issuer|clientAddress|api|operation|claim:[^\\s]{1,128}|header:[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128})$",
  description:
    '`clientId`, `subject`, `issuer`, `clientAddress` (through `trustProxy`), `api`, `operation`, `claim:<name>` (a dotted name reads nested members) or `header:<name>`.',
  errorMessage: 'must be clientId, subject, issuer, clientAddress, api, operation, claim:<name> or header:<name> (a header field name)',
});

/** One traffic policy. */
export const TrafficPolicySchema = Type.Object(
  {
    name: PolicyName,
    metric: OneOf(TRAFFIC_METRICS, {
      description: '`requests` (per window) or `concurrentRequests` (in flight across every instance).',
    }),
    limit: PositiveInteger({ maximum: MAX_LIMIT, description: 'Requests per window, or in flight at once.' }),
    windowSeconds: Type.Optional(
      PositiveInteger({ maximum: MAX_WINDOW_SECONDS, description: 'The window of a `requests` policy, in seconds (required there).' }),
    ),
    window: Type.Optional(
      OneOf(TRAFFIC_WINDOWS, {
        description:
          '`sliding` (default): never more than `limit` in any interval of `windowSeconds`; `fixed`: windows aligned on multiples of `windowSeconds` since the epoch.',
      }),
    ),
    groupBy: Type.Optional(
      Type.Array(GroupBy, {
        maxItems: 8,
        uniqueItems: true,
        description: 'One counter per distinct value of these facts; absent or empty: one counter for everything the policy covers.',
      }),
    ),
    operations: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description: 'The policy applies to these operations only (names of `apis[i].operations`).',
      }),
    ),
    mode: Type.Optional(
      OneOf(TRAFFIC_MODES, { description: '`enforce` (default): 429 past the limit; `warningOnly`: counted, recorded, never refused.' }),
    ),
  },
  { additionalProperties: false, description: 'A rate limit or quota.' },
);

/** A list of policies. */
const PoliciesSchema = Type.Array(TrafficPolicySchema, { description: 'Every policy is checked; all must allow.' });

/** `trafficControl.groups`: how many groups an instance keeps, and one client's share of them. */
export const TrafficGroupsSchema = Type.Object(
  {
    max: Type.Optional(
      PositiveInteger({ maximum: 100_000_000, description: 'Groups one instance keeps at once, over every policy. Default 200000.' }),
    ),
    maxMegabytes: Type.Optional(
      PositiveInteger({ maximum: 1_048_576, description: 'The worst-case heap of those groups, MiB. Default 128.' }),
    ),
    perClient: Type.Optional(
      PositiveInteger({
        maximum: 100_000_000,
        description:
          "Groups one client (the token's client and subject, else its address) may have made and still held; past it that client's new groups are refused (429). Default 1000.",
      }),
    ),
  },
  { additionalProperties: false, description: 'The bound on the groups an instance keeps (docs/traffic-control.md).' },
);

/** `trafficControl` at the top of the configuration (every API). */
export const TrafficControlSchema = Type.Object(
  {
    maxConcurrentRequests: Type.Optional(
      PositiveInteger({ description: 'Requests in flight on one instance; past it 429 at once, before any other work. Absent: no cap.' }),
    ),
    store: Type.Optional(
      OneOf(TRAFFIC_STORES, {
        description: '`redis` (shared by every instance; needs Redis) or `local`. Default: `redis` when the gateway has Redis.',
      }),
    ),
    onStoreUnavailable: Type.Optional(
      OneOf(STORE_UNAVAILABLE_MODES, {
        description:
          'While Redis cannot be reached: `localShare` (default; each live instance allows its share of the limit), `allow` (counted) or `deny` (503).',
      }),
    ),
    headers: Type.Optional(
      OneOf(TRAFFIC_HEADER_SETS, {
        description: '`both` (default), `ietf` (`RateLimit`, `RateLimit-Policy`), `legacy` (`X-RateLimit-*`) or `none`.',
      }),
    ),
    groups: Type.Optional(TrafficGroupsSchema),
    policies: Type.Optional(PoliciesSchema),
  },
  { additionalProperties: false, description: 'Traffic control: rate limits and quotas for every API.' },
);

/** `apis[i].trafficControl`: the API's own policies. */
export const ApiTrafficControlSchema = Type.Object(
  { policies: PoliciesSchema },
  { additionalProperties: false, description: 'Traffic control for this API: its own policies, checked with the top-level ones.' },
);

/** One policy, as written. */
export type TrafficPolicy = Static<typeof TrafficPolicySchema>;
/** The top-level section, as written (also `createGateway`'s and `trafficControl`'s options). */
export type TrafficControlSection = Static<typeof TrafficControlSchema>;
/** `trafficControl.groups`, as written. */
export type TrafficGroupsSection = Static<typeof TrafficGroupsSchema>;
/** An API's section, as written. */
export type ApiTrafficControlSection = Static<typeof ApiTrafficControlSchema>;

/**
 * What the schema cannot say of a list of policies: names used twice in it (or in `alsoNamed`, the
 * names of the other list that applies with it), `windowSeconds` required for `requests` and
 * meaningless for `concurrentRequests` (so is `window`), a credential header in `groupBy` (its value
 * would be shown as the group's name). Paths are below `base`.
 */
export function trafficPolicyIssues(policies: readonly TrafficPolicy[], base: string, alsoNamed: readonly string[] = []): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const seen = new Set(alsoNamed);
  policies.forEach((policy, i) => {
    const at = `${base}[${i}]`;
    if (seen.has(policy.name)) issues.push({ path: `${at}.name`, message: `"${policy.name}" is already the name of another policy` });
    seen.add(policy.name);
    if (policy.metric === 'requests' && policy.windowSeconds === undefined) {
      issues.push({ path: `${at}.windowSeconds`, message: 'is required for a requests policy' });
    }
    policy.groupBy?.forEach((by, j) => {
      const header = by.startsWith('header:') ? by.slice('header:'.length).toLowerCase() : undefined;
      if (header !== undefined && (CREDENTIAL_HEADERS as readonly string[]).includes(header)) {
        issues.push({ path: `${at}.groupBy[${j}]`, message: `may not name ${header}: its values are credentials` });
      }
    });
    if (policy.metric === 'concurrentRequests') {
      if (policy.windowSeconds !== undefined)
        issues.push({ path: `${at}.windowSeconds`, message: 'has no meaning for concurrentRequests' });
      if (policy.window !== undefined) issues.push({ path: `${at}.window`, message: 'has no meaning for concurrentRequests' });
    }
  });
  return issues;
}
