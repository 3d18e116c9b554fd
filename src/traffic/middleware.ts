/**
 * `trafficControl(options)`: traffic control as Express middleware for a host that composes the
 * gateway's middleware itself (`app.use(requireToken(...), introspect(...), trafficControl({...}))`).
 * It reads the facts the gateway's middleware left on `req.gateway`, decides, sets the rate-limit
 * header fields, and refuses with `ERR_RATE_LIMITED` (429, `Retry-After`), `ERR_INSTANCE_BUSY`
 * (429) or `ERR_TRAFFIC_STORE_UNAVAILABLE` (503) for `problemJsonErrorHandler` to answer. The
 * decision is left on `req.gateway.traffic`.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connectRedis, RedisConnection, type RedisClientLike } from '../cluster/redis.js';
import { gatewayContext, type Middleware } from '../context.js';
import { GatewayError } from '../errors.js';
import { exchangeEnded, onExchangeEnd } from '../exchange/answer-end.js';
import { optionChecks, optionKeys } from '../options.js';
import { clientAddressOf, compileTrust, type TrustProxy } from '../trust-proxy.js';
import { holdsSlots, limitedDiagnostic } from './decision.js';
import { factsOf, type TrafficFactsOverride } from './facts.js';
import { trafficHeaders } from './headers.js';
import { admitExchange } from './instance-cap.js';
import { createTrafficLimiter, type TrafficLimiter, type TrafficLimiterOptions } from './limiter.js';
import type { TrafficControlSection } from './schema.js';
import type { TrafficControlSettings } from './types.js';
import type { TrafficDecision } from './types.js';

/** Options of {@link trafficControl}: the configuration file's `trafficControl` section, and what a host adds. */
export interface TrafficControlOptions extends TrafficControlSettings {
  /**
   * Redis shared by the instances (`store: "redis"`, the default with it): a `redis://` URL (the
   * `redis` package is loaded; requests wait for the first connection attempt, at most a second),
   * a connected node-redis client, or a connection from `connectRedis`.
   */
  redis?: string | RedisClientLike | RedisConnection;
  /** Prefix of the keys in Redis, with a URL or a client. Default `eag:` (counts under `eag:traffic:`). */
  redisKeyPrefix?: string;
  /** Longest wait for Redis, milliseconds, with a URL or a client. Default 1000. */
  redisCommandTimeoutMs?: number;
  /** Who may speak for the client in `X-Forwarded-For` (`clientAddress`): Express's `trust proxy` values. Default none. */
  trustProxy?: TrustProxy;
  /** The client's address instead (for `clientAddress`). */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /** The request's facts instead of (over) those on `req.gateway`: for a host that validates tokens itself. */
  facts?: (req: IncomingMessage) => TrafficFactsOverride | undefined;
  /** The `api` fact when `req.gateway` names no API. Default `-`. */
  api?: string;
  /** The live instances, for `localShare`. Default 1. */
  liveInstances?: TrafficLimiterOptions['liveInstances'];
  /** Called for each policy of each decision, for metrics. */
  onPolicyResult?: TrafficLimiterOptions['onPolicyResult'];
  /** Lease of an in-flight slot in Redis, milliseconds. Default 15000. */
  concurrencyLeaseMs?: number;
  /**
   * The instances' shared secret (or a rotation list, the first signing): a credential header's
   * group label (`header:x-api-key=hmac:…`) is hashed under a key derived from it, so that every
   * instance given it shows one key by one label. Absent: this process's own key.
   */
  clusterSecret?: string | string[];
}

/** The middleware, with its engine and a way to stop it. */
export interface TrafficControlMiddleware extends Middleware {
  /** The engine, once Redis was tried (at once without a URL). @internal */
  readonly limiter: Promise<TrafficLimiter>;
  /** Stops the engine's timers, and closes the Redis connection it opened from a URL. */
  close(): Promise<void>;
}

const FACTORY = 'trafficControl';
const KEYS = optionKeys<TrafficControlOptions>({
  maxConcurrentRequests: true,
  store: true,
  onStoreUnavailable: true,
  headers: true,
  groups: true,
  policies: true,
  redis: true,
  redisKeyPrefix: true,
  redisCommandTimeoutMs: true,
  trustProxy: true,
  clientAddress: true,
  facts: true,
  api: true,
  liveInstances: true,
  onPolicyResult: true,
  concurrencyLeaseMs: true,
  clusterSecret: true,
});
const SECTION_KEYS = ['maxConcurrentRequests', 'store', 'onStoreUnavailable', 'headers', 'groups', 'policies'] as const;

/** Sends the decision's header fields (when the answer has not started) and what it asks for. */
function apply(
  req: IncomingMessage,
  res: ServerResponse,
  next: (err?: unknown) => void,
  limiter: TrafficLimiter,
  decision: TrafficDecision,
): void {
  gatewayContext(req).traffic = decision;
  if (!res.headersSent) for (const [name, value] of trafficHeaders(decision, limiter.headers)) res.setHeader(name, value);
  if (decision.result === 'allowed') return next();
  if (decision.result === 'limited') {
    return next(new GatewayError('ERR_RATE_LIMITED', { retryAfter: decision.retryAfterSeconds, diagnostic: limitedDiagnostic(decision) }));
  }
  next(
    new GatewayError('ERR_TRAFFIC_STORE_UNAVAILABLE', {
      diagnostic: 'traffic control: Redis cannot be reached (onStoreUnavailable: deny)',
    }),
  );
}

/**
 * Traffic control middleware (see the module comment). Every option is checked now: an invalid
 * one throws (`InvalidOptionError`, `TrafficControlError` with every issue's path, or
 * `TrafficStoreError` for `store: "redis"` without `redis`).
 *
 * @example
 * ```ts
 * app.use(requireToken(), introspect({ policy }), trafficControl({
 *   policies: [{ name: 'per-client', metric: 'requests', limit: 100, windowSeconds: 60, groupBy: ['clientId'] }],
 * }));
 * app.use(problemJsonErrorHandler());
 * ```
 */
export function trafficControl(options: TrafficControlOptions = {}): TrafficControlMiddleware {
  const check = optionChecks(FACTORY);
  check.object(options, '');
  check.known(options, '', KEYS);
  const clientAddress =
    check.optionalFunction<(req: IncomingMessage) => string | undefined>(options.clientAddress, 'clientAddress') ??
    clientAddressOf(compileTrust(options.trustProxy, check, 'trustProxy'));
  const override = check.optionalFunction<(req: IncomingMessage) => TrafficFactsOverride | undefined>(options.facts, 'facts');
  const fallbackApi = check.string(options.api, 'api', '-');
  const section: TrafficControlSection = {};
  for (const key of SECTION_KEYS) if (options[key] !== undefined) (section as Record<string, unknown>)[key] = options[key];
  const engine = {
    liveInstances: options.liveInstances,
    onPolicyResult: options.onPolicyResult,
    concurrencyLeaseMs: options.concurrencyLeaseMs,
    clusterSecret: options.clusterSecret,
  };
  let owned: RedisConnection | undefined;
  let limiter: Promise<TrafficLimiter>;
  const redis = options.redis;
  if (redis === undefined || redis instanceof RedisConnection) {
    const made = createTrafficLimiter(section, { ...engine, redis }, FACTORY);
    limiter = Promise.resolve(made);
  } else {
    if (typeof redis !== 'string' && (redis === null || typeof redis !== 'object'))
      check.fail('redis', 'must be a redis:// URL, a Redis client or a RedisConnection');
    // Checked now with a stand-in store, so that a bad section throws here and not on a request.
    createTrafficLimiter({ ...section, store: 'local' }, { ...engine, sweepMs: 0 }, FACTORY).close();
    limiter = connectRedis(redis, { keyPrefix: options.redisKeyPrefix, commandTimeoutMs: options.redisCommandTimeoutMs }).then(
      (connection) => {
        owned = connection;
        return createTrafficLimiter(section, { ...engine, redis: connection }, FACTORY);
      },
    );
    // A rejection (the redis package missing) is the first request's error.
    limiter.catch(() => undefined);
  }

  const middleware = ((req, res, next) => {
    void limiter.then(
      (ready) => decideFor(ready, req, res, next),
      (err: unknown) => next(err),
    );
  }) as TrafficControlMiddleware;

  function decideFor(ready: TrafficLimiter, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    // The instance's slot and the decision's slots go back once the exchange ends, whatever ends it.
    const busy = ready.instanceCap === undefined ? undefined : admitExchange(ready.instanceCap, res);
    if (busy !== undefined) return next(busy);
    const context = gatewayContext(req);
    const facts = factsOf(req, context, clientAddress, fallbackApi, override?.(req));
    ready
      .decide(facts, ready.policies, () => !exchangeEnded(res))
      .then(
        (decision) => {
          if (holdsSlots(decision)) onExchangeEnd(res, decision.release);
          // The client went away while the decision was made: nothing to answer, nothing held.
          if (exchangeEnded(res)) return;
          apply(req, res, next, ready, decision);
        },
        (err: unknown) => next(err),
      );
  }

  Object.defineProperty(middleware, 'limiter', { value: limiter, enumerable: true });
  middleware.close = async () => {
    const ready = await limiter.catch(() => undefined);
    await ready?.close();
    await owned?.close();
  };
  return middleware;
}
