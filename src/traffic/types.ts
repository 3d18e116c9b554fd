/**
 * The contract between traffic control's engine (policies compiled, counts kept in a store) and
 * what uses it: the gateway's step after token validation, the `trafficControl` middleware, the
 * records, metrics and consoles.
 *
 * @module
 */
import type { STORE_UNAVAILABLE_MODES, TrafficControlSection, TrafficPolicy } from './schema.js';

/** What policies group by and filter on: the request's facts once its token was validated. */
export interface TrafficFacts {
  /** The API, `provider/name/vN`. */
  readonly api: string;
  /** The operation, when the API declares operations and one matched. */
  readonly operation?: string | undefined;
  /** `azp`, else `client_id`, of the token. */
  readonly clientId?: string | undefined;
  /** `sub` of the token. */
  readonly subject?: string | undefined;
  /** `iss` of the token. */
  readonly issuer?: string | undefined;
  /** The client's address, as `trustProxy` lets the gateway believe it. */
  readonly clientAddress?: string | undefined;
  /** The token's claims (introspection, JWT, UserInfo merged), for `claim:<name>`. */
  readonly claims?: Readonly<Record<string, unknown>> | undefined;
  /** A request header's value (lower-case name; several joined by `, `), for `header:<name>`. */
  header(name: string): string | undefined;
}

/** Where one policy stands for one request's group, after the decision. */
export interface PolicyStanding {
  /** The policy's name. */
  readonly policy: string;
  /** What the policy counts: `requests` or `concurrentRequests`. */
  readonly metric: TrafficPolicy['metric'];
  /** `enforce` or `warningOnly`. */
  readonly mode: NonNullable<TrafficPolicy['mode']>;
  /** The limit this decision applied (under `localShare`, this instance's share). */
  readonly limit: number;
  /** `requests` only: the window in seconds. */
  readonly windowSeconds?: number | undefined;
  /**
   * The group, as records and consoles show it: `clientId=client1, operation=getPet` (each value
   * cut to 64 characters), or `*` for a policy without `groupBy`. Store keys hash it instead.
   */
  readonly group: string;
  /** What is left after this request (0 when refused). */
  readonly remaining: number;
  /** Whole seconds until more quota (`requests`); 0 when there is quota now. */
  readonly resetSeconds: number;
  /** Whether this request went past the limit (refused under `enforce`, a warning under `warningOnly`). */
  readonly exceeded: boolean;
}

/** One decision over every policy that covers a request. */
export interface TrafficDecision {
  /**
   * `allowed` (every enforced policy had room), `limited` (an enforced policy had none: 429),
   * `unavailable` (the shared store could not be reached and `onStoreUnavailable` is `deny`: 503).
   */
  readonly result: 'allowed' | 'limited' | 'unavailable';
  /** The enforced policy that refused, with `result: 'limited'` (the one nearest its limit when several did). */
  readonly limitedBy?: PolicyStanding | undefined;
  /** Every policy that covered the request, in configuration order (top-level first). */
  readonly standings: readonly PolicyStanding[];
  /** Whether the shared store could not be reached (the decision then followed `onStoreUnavailable`). */
  readonly storeUnavailable: boolean;
  /**
   * With `storeUnavailable`: the `onStoreUnavailable` mode followed. Under `localShare` the
   * standings are this instance's counts; under `allow` and `deny` nothing was counted (the
   * standings show the full limit, and no rate-limit header is sent).
   */
  readonly fallback?: (typeof STORE_UNAVAILABLE_MODES)[number] | undefined;
  /** Whole seconds for `Retry-After`, when refused. */
  readonly retryAfterSeconds?: number | undefined;
  /**
   * With `result: 'limited'`: why the request's new group was refused (the client's share of the
   * instance's groups, or the instance's bound, was used up) rather than a policy's limit.
   */
  readonly groupRefusal?: string | undefined;
  /**
   * Frees the request's `concurrentRequests` slots: call once the exchange ends (answered,
   * failed or aborted). Idempotent; nothing to free after a refusal.
   */
  release(): void;
}

/** How busy one group of a policy is now. */
export interface GroupUsage {
  /** The group, as in {@link PolicyStanding.group}. */
  readonly group: string;
  /** Requests counted in the current window (`requests`), or in flight (`concurrentRequests`). */
  readonly used: number;
  /** The policy's limit. */
  readonly limit: number;
}

/**
 * One traffic policy, as written in the configuration file's `trafficControl.policies` (and an
 * API's), `createGateway`'s and `trafficControl`'s options: the documented twin of the schema's
 * `TrafficPolicy` (the compiler keeps them equal).
 */
export interface TrafficPolicyDefinition {
  /** Unique in its list (and the top-level one): 1-64 letters, digits, `.`, `_`, `~`, `-`; shown in headers, records, metrics. */
  name: string;
  /** `requests` (per window) or `concurrentRequests` (in flight across every instance). */
  metric: 'requests' | 'concurrentRequests';
  /** Requests per window, or in flight at once. */
  limit: number;
  /** The window of a `requests` policy, in seconds (required there, refused for `concurrentRequests`). */
  windowSeconds?: number;
  /** `sliding` (default: never more than `limit` in any interval of `windowSeconds`) or `fixed` (aligned on multiples of it since the epoch). */
  window?: 'sliding' | 'fixed';
  /** One counter per distinct value of these facts: `clientId`, `subject`, `issuer`, `clientAddress`, `api`, `operation`, `claim:<name>`, `header:<name>`. Absent: one counter. */
  groupBy?: string[];
  /** The policy applies to these operations only. */
  operations?: string[];
  /** `enforce` (default: 429 past the limit) or `warningOnly` (counted, recorded, never refused). */
  mode?: 'enforce' | 'warningOnly';
}

/** `trafficControl.groups`: the documented twin of the schema's `TrafficGroupsSection`. */
export interface TrafficGroupBounds {
  /** Groups one instance keeps at once, over every policy. Default 200000. */
  max?: number;
  /** Their worst-case heap, MiB. Default 128. */
  maxMegabytes?: number;
  /** Groups one client (the token's client and subject, else its address) may have made and still held. Default 1000. */
  perClient?: number;
}

/** Traffic control's top-level settings: the documented twin of the schema's `TrafficControlSection`. */
export interface TrafficControlSettings {
  /** Requests in flight on one instance; past it 429 at once, before any other work. Absent: no cap. */
  maxConcurrentRequests?: number;
  /** `redis` (shared by every instance; needs Redis) or `local`. Default: `redis` when Redis is given. */
  store?: 'local' | 'redis';
  /** While Redis cannot be reached: `localShare` (default: each live instance allows its share), `allow` or `deny` (503). */
  onStoreUnavailable?: 'localShare' | 'allow' | 'deny';
  /** `both` (default), `ietf` (`RateLimit`, `RateLimit-Policy`), `legacy` (`X-RateLimit-*`) or `none`. */
  headers?: 'both' | 'ietf' | 'legacy' | 'none';
  /** The bound on the groups an instance keeps (docs/traffic-control.md). */
  groups?: TrafficGroupBounds;
  /** Every policy is checked; all must allow. */
  policies?: TrafficPolicyDefinition[];
}

// The documented shapes and the schema's are one: a change to either that the other lacks fails here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const SHAPES_AGREE: [Same<TrafficPolicyDefinition, TrafficPolicy>, Same<TrafficControlSettings, TrafficControlSection>] = [true, true];
void SHAPES_AGREE;

declare module '../context.js' {
  interface GatewayContext {
    /**
     * Traffic control's decision of this request, once the gateway's step or the `trafficControl`
     * middleware made it: the records name the policy and group that refused from it.
     */
    traffic?: TrafficDecision;
  }
}
