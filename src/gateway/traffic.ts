/**
 * Traffic control in the gateway: what a configuration compiles into (the engine, the instance
 * cap, the step of each API covered by a policy) and the instance cap at the start of the request
 * path.
 *
 * - The engine (`TrafficLimiter`: its stores and `onStoreUnavailable`) is kept across reloads
 *   while `store` and `onStoreUnavailable` stay the same, so that counts outlive ResetAllCaches;
 *   each policy's counts are keyed by its name and kind of count (see the engine), so a policy
 *   whose definition did not change goes on counting. A changed `store` or `onStoreUnavailable`
 *   makes a new engine (this instance's local counts start again; Redis keeps its own).
 * - The instance cap is kept while `maxConcurrentRequests` stays the same; a changed cap applies
 *   to the requests that arrive after the reload (those in flight finish under the old one).
 * - Each API covered by a policy gets one step, after token validation: one decision over the
 *   policies covering the request (top-level first), left on `req.gateway.traffic`; its
 *   rate-limit fields go on the answer, whatever it is, through exchange/head.ts.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ANSWER_FIELDS, gatewayContext, type AnswerFields, type GatewayContext, type Middleware } from '../context.js';
import { exchangeEnded, onExchangeEnd } from '../exchange/answer-end.js';
import { GatewayError } from '../errors.js';
import { ConfigError } from '../config/errors.js';
import type { ResolvedApi } from '../config/types.js';
import type { RedisConnection } from '../cluster/redis.js';
import { apiKey } from '../record/types.js';
import { compileTrafficPolicies, type CompiledTrafficPolicies } from '../traffic/compile.js';
import { holdsSlots, limitedDiagnostic, type TrafficPolicyResult } from '../traffic/decision.js';
import { TrafficControlError } from '../traffic/errors.js';
import { factsOf, type TrafficFactsOverride } from '../traffic/facts.js';
import { trafficHeaders } from '../traffic/headers.js';
import { admitExchange, InstanceCap } from '../traffic/instance-cap.js';
import { createTrafficLimiter, groupBounds, type TrafficLimiter } from '../traffic/limiter.js';
import type { GroupLabelKey } from '../traffic/group-key.js';
import type { TrafficDecision } from '../traffic/types.js';
import type { TrafficSettings } from './traffic-settings.js';

const RATE_LIMIT_NAME = /^(x-)?ratelimit(-|$)/i;

/**
 * Whether a field is of the rate-limit family, in any case: `RateLimit`, `RateLimit-Policy` (and
 * the older drafts' `RateLimit-*`), `X-RateLimit-*`. A backend's are dropped from an answer that
 * carries the gateway's (docs/traffic-control.md). Asked of every field of every such answer: the
 * first letter (`r` or `x`) settles most names without the expression.
 */
function isRateLimitField(name: string): boolean {
  const first = name.charCodeAt(0) | 0x20;
  return (first === 0x72 || first === 0x78) && RATE_LIMIT_NAME.test(name);
}

/** A cap no instance reaches: without `maxConcurrentRequests`, requests in flight are still counted (the gauge). */
const UNCAPPED = Number.MAX_SAFE_INTEGER;

/** What the engine needs from the gateway, settled at each compilation. */
export interface TrafficEnvironment {
  /** The gateway's Redis connection, once the cluster is joined; `undefined` without Redis. */
  readonly redis: RedisConnection | undefined;
  /** The live instances the cluster last counted (for `localShare`). */
  liveInstances(): number | undefined;
  /** Each policy's result of each decision (`gateway_traffic_decisions_total`). */
  readonly onPolicyResult: ((api: string, policy: string, result: TrafficPolicyResult) => void) | undefined;
  /** The client's address as `trustProxy` lets the gateway believe it (`clientAddress`). */
  clientAddress(req: IncomingMessage): string | undefined;
  /** The key groups' labels hash credential headers under; absent: this process's own. */
  readonly labelKey?: GroupLabelKey | undefined;
}

/** Traffic control of one compiled configuration. */
export interface RuntimeTraffic {
  readonly settings: TrafficSettings;
  /** The engine; `undefined` when no policy exists. */
  readonly limiter: TrafficLimiter | undefined;
  /** What the engine was made for: an equal key reuses it. */
  readonly limiterKey: string;
  /** This instance's requests in flight, capped by `maxConcurrentRequests`. */
  readonly cap: InstanceCap;
}

/**
 * The traffic part of a configuration being compiled: the previous one's engine and cap reused
 * when their settings are the same. `created` is the engine made here (to close if the
 * compilation fails).
 */
export function runtimeTraffic(
  settings: TrafficSettings,
  apis: readonly ResolvedApi[],
  previous: RuntimeTraffic | undefined,
  environment: TrafficEnvironment,
): { traffic: RuntimeTraffic; created: TrafficLimiter | undefined } {
  const max = settings.maxConcurrentRequests ?? UNCAPPED;
  const cap = previous !== undefined && previous.cap.max === max ? previous.cap : new InstanceCap(max);
  const limiterKey = `${settings.store} ${settings.onStoreUnavailable}`;
  let limiter: TrafficLimiter | undefined;
  let created: TrafficLimiter | undefined;
  const anyPolicy = settings.policies.length > 0 || apis.some((api) => api.trafficControl.policies.length > 0);
  // Kept while the settings stay, even with no policy for now: counts outlive a reload that drops them.
  if (anyPolicy || previous?.limiter !== undefined) {
    if (previous?.limiter !== undefined && previous.limiterKey === limiterKey) {
      limiter = previous.limiter;
      limiter.groups.bounds = groupBounds(settings.groups);
    } else {
      limiter = created = createTrafficLimiter(
        { store: settings.store, onStoreUnavailable: settings.onStoreUnavailable, headers: settings.headers, groups: settings.groups },
        {
          ...(settings.store === 'redis' && environment.redis !== undefined ? { redis: environment.redis } : {}),
          liveInstances: () => environment.liveInstances(),
          ...(environment.onPolicyResult === undefined ? {} : { onPolicyResult: environment.onPolicyResult }),
        },
      );
    }
  }
  return { traffic: { settings, limiter, limiterKey, cap }, created };
}

/**
 * Admits a request of the API listener under the instance cap: `undefined` (counted until its
 * exchange ends, whatever ends it), or the refusal to answer at once.
 */
export function admitRequest(cap: InstanceCap, res: ServerResponse): GatewayError | undefined {
  return admitExchange(cap, res);
}

/**
 * This instance's requests in flight under the cap of the configuration in force: a changed cap
 * applies to new requests, and those admitted under an older one are still counted (the gauge)
 * until their exchanges end.
 */
export class RequestsInFlight {
  #current = new InstanceCap(UNCAPPED);
  readonly #draining = new Set<InstanceCap>();

  /** The cap of the configuration now in force. */
  use(cap: InstanceCap): void {
    if (cap === this.#current) return;
    if (this.#current.admitted > 0) this.#draining.add(this.#current);
    this.#current = cap;
  }

  /** Admits a request, or the refusal to answer (see {@link admitRequest}). */
  admit(res: ServerResponse): GatewayError | undefined {
    return admitRequest(this.#current, res);
  }

  /** Requests in flight now (`gateway_concurrent_requests`). */
  get count(): number {
    let count = this.#current.inFlight;
    for (const cap of this.#draining) {
      if (cap.admitted === 0) this.#draining.delete(cap);
      else count += cap.inFlight;
    }
    return count;
  }
}

/** The error a decision that is not `allowed` answers with. */
function refusalOf(decision: TrafficDecision): GatewayError {
  if (decision.result === 'limited') {
    return new GatewayError('ERR_RATE_LIMITED', { retryAfter: decision.retryAfterSeconds, diagnostic: limitedDiagnostic(decision) });
  }
  return new GatewayError('ERR_TRAFFIC_STORE_UNAVAILABLE', {
    diagnostic: 'traffic control: Redis cannot be reached (onStoreUnavailable: deny)',
  });
}

/**
 * Leaves a decision on the exchange (for the record, the answer's fields, the slots' release) and
 * goes on, or refuses. A function of its own, not a closure made per request.
 */
function settle(
  decision: TrafficDecision,
  context: GatewayContext,
  res: ServerResponse,
  next: (err?: unknown) => void,
  headers: TrafficSettings['headers'],
): void {
  context.traffic = decision;
  if (holdsSlots(decision)) {
    // Given back once the exchange ends; at once when it ended (the client gone) while the decision was made.
    onExchangeEnd(res, decision.release);
    if (exchangeEnded(res)) return;
  }
  const fields = trafficHeaders(decision, headers);
  if (fields.length > 0) {
    const answer: AnswerFields = { fields, replaces: isRateLimitField };
    (context as { [ANSWER_FIELDS]?: AnswerFields })[ANSWER_FIELDS] = answer;
  }
  if (decision.result === 'allowed') next();
  else next(refusalOf(decision));
}

/** The middleware of one API's policies. */
function trafficStep(
  limiter: TrafficLimiter,
  policies: CompiledTrafficPolicies,
  settings: TrafficSettings,
  environment: TrafficEnvironment,
  api: string,
): Middleware {
  const clientAddressOf = (req: IncomingMessage): string | undefined => environment.clientAddress(req);
  // The step's API is the request's: its key made once, not from the context at each request.
  const known: TrafficFactsOverride = Object.freeze({ api });
  const { headers } = settings;
  return (req, res, next) => {
    const context = gatewayContext(req);
    const facts = factsOf(req, context, clientAddressOf, api, known);
    // The local store decides in this turn; Redis answers in a later one.
    const atOnce = limiter.decideAtOnce(facts, policies);
    if (atOnce !== undefined) settle(atOnce, context, res, next, headers);
    else
      limiter
        .decide(facts, policies, () => !exchangeEnded(res))
        .then(
          (decision) => settle(decision, context, res, next, headers),
          (err: unknown) => next(err),
        );
  };
}

/**
 * The traffic step of one API: none when no policy covers any of its requests. Policies are
 * compiled here, once per load (their rules were checked at load: a failure is a ConfigError all
 * the same, with the file's paths).
 */
export function trafficSteps(traffic: RuntimeTraffic, api: ResolvedApi, at: string, environment: TrafficEnvironment): Middleware[] {
  const { limiter, settings } = traffic;
  const own = api.trafficControl.policies;
  if (limiter === undefined || (settings.policies.length === 0 && own.length === 0)) return [];
  const key = apiKey(api);
  let policies: CompiledTrafficPolicies;
  try {
    policies = compileTrafficPolicies(settings.policies, own.length === 0 ? undefined : own, {
      api: key,
      ...(api.operations === undefined ? {} : { apiOperations: api.operations.map((op) => op.name) }),
      apiPath: `${at}.trafficControl.policies`,
      ...(environment.labelKey === undefined ? {} : { labelKey: environment.labelKey }),
    });
  } catch (err) {
    if (err instanceof TrafficControlError) throw new ConfigError([...err.issues], undefined, { cause: err });
    throw err;
  }
  if (policies.all.length === 0) return [];
  return [trafficStep(limiter, policies, settings, environment, key)];
}
