/**
 * `createGateway`: the whole gateway (every registered API, its chain and its relay) from one
 * configuration.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { GatewayError, messagesEn } from '../errors.js';
import { errorFields, logger, type GatewayLogger } from '../log.js';
import { problemJsonErrorHandler } from '../problem/handler.js';
import { monitoringConsole } from '../monitoring/router.js';
import { recordTransaction, type RecordTransactionMiddleware } from '../record/record-transaction.js';
import type { TransactionStore } from '../record/types.js';
import type { ClusterStatus, GatewayCluster } from '../cluster/cluster.js';
import type { ClusterResetResult } from '../cluster/reset.js';
import type { NodeDescription } from '../cluster/registry.js';
import type { ConfigCacheState } from '../config/cache.js';
import { ClusterLink, type ClusterLinkOptions } from './cluster-link.js';
import { ConfigError } from '../config/errors.js';
import { adminAuthenticator, adminReadGate } from '../admin/gate.js';
import { adminRouter, type AdminForgetSelector, type GatewayConfigState, type ResetResult } from './admin.js';
import { GatewayMetricsRecorder, metricsHandler, type GatewayMetrics, type MetricsSources } from '../observability/metrics.js';
import { GatewayTracing } from '../observability/tracing.js';
import { DependencyStates, type DependencyState } from '../observability/dependencies.js';
import { compileRuntime, type CompileSettings, type Runtime } from './compile.js';
import { watchedProofStore } from './proof-store.js';
import { MemoryReplayStore } from '../token/binding/replay.js';
import { ConfigCache } from '../config/cache.js';
import { createRequestPath } from './request-path.js';
import { OperatorAccess } from '../operators/access.js';
import { ADMIN_AREAS } from '../admin/areas.js';
import { adminHostCheck } from '../admin/host.js';
import { operatorsRouter } from '../operators/router.js';
import { configDigest } from '../configuration/digest.js';
import { configurationRouter } from '../configuration/router.js';
import { configurationPage } from '../configuration/page.js';
import { OperatorWorkPool } from '../configuration/work/pool.js';
import { gatewaySettings, type CreateGatewayOptions } from './settings.js';
import { accessLog, AuthorizationServerWatch, logConfigRefused, logConfigWarnings } from './logging.js';
import { CHECK_BACKOFF, checkNow, Readiness, TokenPolicyChecks, type GatewayCheck, type GatewayHealth } from './readiness.js';
import { operatorEvent } from './operator-log.js';
import { RequestsInFlight } from './traffic.js';

const log = logger('gateway');

export type { CreateGatewayOptions } from './settings.js';
export type { GatewayCheck, GatewayHealth, TokenPolicyCheckResult } from './readiness.js';

/** Options of {@link Gateway.resetAllCaches}. */
export interface ResetOptions {
  /** Who asked (an operator's name, `SIGHUP`), for the `reset` record of the gateway's logger. */
  by?: string;
}

/** What {@link createGateway} returns. */
export interface Gateway {
  /**
   * The Express router to mount at the root of your app (`app.use(gateway.router)`): it answers
   * under `basePath` only and passes anything else on.
   */
  readonly router: Router;
  /**
   * The same request path as a plain `node:http` handler, `(req, res, next?)`: what
   * `http.createServer(gateway.handler)` serves. Requests outside `basePath` go to `next` when
   * there is one, else get 404 problem+json. Keeps the request off Express's router, whose debug
   * output prints request URLs (query included).
   */
  readonly handler: (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;
  /**
   * The admin routes (`<basePath>/admin/...`) and the monitoring console (`<basePath>/console/`),
   * when `admin` is set, and, always, `GET <basePath>/health/live` (200 while the process serves)
   * and `GET <basePath>/health/ready` (200 once a configuration is loaded and compiled and, after
   * {@link Gateway.ready}, every token policy passes its check; else 503),
   * which need no credentials and tell nothing but the status. Mount it on its own listener (its own port,
   * so its own origin), never in the app that relays APIs: a page relayed from a backend shares
   * the origin of the APIs and could otherwise use an operator's cached credentials
   * (see docs/security.md).
   */
  readonly adminRouter: Router;
  /** The store transactions are recorded in. */
  readonly store: TransactionStore;
  /**
   * The gateway's Prometheus metrics (its own registry, to mount or merge in your app); `undefined`
   * with `metrics: false`. Also served at `GET <basePath>/metrics` on {@link Gateway.adminRouter}.
   */
  readonly metrics: GatewayMetrics | undefined;
  /** The configuration cache's state (when loaded, when it expires, the last load failure) and the APIs served. */
  readonly configState: GatewayConfigState;
  /**
   * Loads the configuration now instead of at the first request, so that a bad one fails at start,
   * then checks each token policy in force against its authorization server (`TokenPolicy.check`)
   * and resolves once each has a result. Rejects with a {@link ConfigError} only: a failing check
   * does not reject, it keeps {@link Gateway.health} (and `<basePath>/health/ready`) not ready,
   * logs `not_ready` with the policy and the cause (with a `logger`), and is checked again every
   * 5 to 30 s (at once when a call of the policy finds its server back) until it passes. From here
   * on, each policy a reload brings is checked too.
   */
  ready(): Promise<void>;
  /**
   * Readiness now: `ready` is what `<basePath>/health/ready` answers (a configuration in force and,
   * after {@link Gateway.ready}, every token policy check passing), with the last check of each policy.
   */
  health(): GatewayHealth;
  /**
   * Resolves the first time {@link Gateway.health} says ready, at once when it does now: after
   * {@link Gateway.ready}, once every token policy passes its check (a reload that fixes a policy,
   * its server back). Never rejects; stays pending when the gateway closes first. What
   * `serve` waits on to log `ready`.
   */
  whenReady(): Promise<void>;
  /**
   * Each dependency's state now (PostgreSQL, the record journal, Redis, each token policy's
   * authorization server), once the gateway used it: `up` or `down` since when, and while down
   * the cause and what the gateway does meanwhile. Also in `GET <basePath>/admin/status`.
   */
  dependencies(): Record<string, DependencyState>;
  /**
   * Loads the configuration (rejects with a {@link ConfigError}) and checks every token policy in
   * force now; resolves with the results and the configuration's warnings (what
   * `serve --check-config` prints).
   */
  check(): Promise<GatewayCheck>;
  /**
   * ResetAllCaches: reads the configuration again, compiles its policies, and forgets every cached
   * token result. When the new configuration is invalid, the previous one stays in force and the
   * promise rejects with the {@link ConfigError} that says why (token results are forgotten anyway).
   */
  resetAllCaches(options?: ResetOptions): Promise<ResetResult>;
  /**
   * Forgets the cached token results (valid and refused) of one subject or one client id, in every
   * token policy in force, without a full ResetAllCaches: for an incident. Returns how many were
   * dropped. Also `POST <basePath>/admin/forget`.
   */
  forget(selector: AdminForgetSelector): number;
  /** This instance's id (`nodeId`), on every record it writes. */
  readonly nodeId: string;
  /**
   * The digest of the configuration in force (policy texts included), `undefined` before the first
   * load: equal on two instances, or to a saved version's, exactly when they run the same configuration.
   */
  readonly configVersion: string | undefined;
  /** With `redis`: this instance, the live instances and the Redis connection; else `undefined`. */
  clusterStatus(): Promise<ClusterStatus | undefined>;
  /** Stops: closes backend connections, Redis and timers. In-flight relays finish first. */
  close(): Promise<void>;
}

/**
 * Creates the gateway: every registered API ("erogazione") of the configuration served at
 * `{basePath}/<provider>/<api>/v<version>/<resource path>` with this processing order
 * (docs/gateway.md, "What a request goes through"):
 *
 * 1. `recordTransaction` (ids, `Gateway-Transaction-ID`, the record; outgoing headers when the API's
 *    `recording.outgoingHeaders` is on);
 * 2. token management (`requireToken`, then `introspect` with the API's token policy and switches):
 *    400 without a token, 401 for an invalid one;
 * 3. authorization `xacml-Policy` (`xacmlAuthorize` with the API's policy document): 403 unless Permit;
 * 4. `forwardTokenHeaders` (token information when Token Forward is on; the client's token and
 *    spoofed `Gateway-*` headers are always removed), then the relay to the backend (keep-alive,
 *    streamed both ways; 503 unreachable, 504 read timeout).
 *
 * Unknown API, version or operation: 404 problem+json. Every error is problem+json.
 * The configuration and compiled policies are cached for `configCacheTtlSeconds`; a changed file takes
 * effect after {@link Gateway.resetAllCaches} (or `POST <basePath>/admin/reset-caches`) or expiry.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createGateway } from 'express-access-gateway';
 *
 * const gateway = createGateway({
 *   config: 'gateway.config.json',
 *   admin: { basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD ?? 'change-me' } },
 * });
 * await gateway.ready(); // fail at start on a bad configuration
 * const app = express();
 * app.use(gateway.router);
 * const server = app.listen(8080);
 * process.on('SIGTERM', () => server.close(() => void gateway.close()));
 * ```
 */
export function createGateway(options: CreateGatewayOptions): Gateway {
  const settings = gatewaySettings(options);
  const { source, basePath, configCacheTtlSeconds, targetRules, maxRequestTargetBytes, server, messages, store, nodeId, ownDispatcher } =
    settings;
  const tracing = new GatewayTracing();
  const events = settings.logger;
  const dependencies = watchStore(new DependencyStates(events), store);
  // The instance cap's count lives as long as the gateway: configurations come and go under it.
  const inFlight = new RequestsInFlight();
  // The recorder reads the metrics when an exchange ends, after they are made below.
  const record = gatewayRecorder(options, settings, tracing, () => metrics);
  const metrics = gatewayMetrics(settings, tracing, {
    tokenPolicies: () => latest?.tokenPolicies.values() ?? [],
    store,
    recorderStats: () => record.stats,
    clusterRejections: () => link?.cluster?.rejected,
    concurrentRequests: () => inFlight.count,
    dependencies: () => dependencies.gauge(),
    ...(options.admin === undefined ? {} : { auditStats: () => access?.auditStats() }),
  });
  const readiness = new Readiness(() => latest !== undefined && checks.ok());
  const checks = new TokenPolicyChecks(events, CHECK_BACKOFF, () => readiness.changed());
  const watch = events === undefined ? undefined : new AuthorizationServerWatch(events, (policy) => checks.recheck(policy), dependencies);
  const compileSettings = compileSettingsOf(settings, dependencies, { tracing, metrics, watchTokenPolicy: watch?.observer.bind(watch) });
  const errorHandler = problemJsonErrorHandler({ messages, server, ...(events === undefined ? {} : { onError: unexpectedError(events) }) });
  const access = operatorAccess(options, settings);
  // The configuration console's heavy work, in worker threads started at its first job.
  const work = new OperatorWorkPool(settings.operatorWork);

  /** The runtime most recently compiled and accepted (the cache's entry in force). */
  let latest: Runtime | undefined;
  /** The digest of the configuration `latest` was compiled from. */
  let latestDigest: string | undefined;
  // Joined once, at the first load; the configuration is compiled with its shared token results.
  const link = clusterLink(
    options,
    settings,
    access,
    {
      // This instance's part of its own cluster-wide reset is asked by whoever asked that one.
      onReset: () => resetLocal(askedBy.shift() ?? 'another instance'),
      describe: () => nodeDescription(cache.state, apisOf(latest), latestDigest),
    },
    dependencies,
  );
  const cluster = (): Promise<GatewayCluster> | undefined => link?.join();
  const cache = new ConfigCache<Runtime>({
    source,
    ...(options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
    ...(configCacheTtlSeconds === undefined ? {} : { ttlSeconds: configCacheTtlSeconds }),
    compile: async (config) => {
      const trust = settings.listenerTrust.forConfig(config.listener);
      latest = compileRuntime(config, latest, withCluster(compileSettings, await cluster()));
      settings.listenerTrust.use(trust);
      latestDigest = configDigest(config);
      inFlight.use(latest.traffic.cap);
      compiled(latest, events, checks);
      readiness.changed();
      return latest;
    },
    dispose: (old) => disposeRuntime(old, latest, watch),
    ...(events === undefined
      ? {}
      : { onExpiryReloadFailed: (error) => logConfigRefused(events, error, 'its reload at expiry (the previous one stays in force)') }),
  });

  const handler = createRequestPath({
    basePath,
    targetRules,
    maxRequestTargetBytes,
    record,
    errorHandler,
    server: settings.server,
    admit: (res) => refusedByStore(store) ?? inFlight.admit(res),
    runtime: () => {
      const entry = cache.get();
      return entry instanceof Promise ? entry.then((loaded) => loaded.compiled) : entry.compiled;
    },
  });

  const apisOf = (runtime: Runtime | undefined): string[] => (runtime === undefined ? [] : [...runtime.apis.keys()]);
  let lastResetError: unknown;
  const askedBy: string[] = [];
  /**
   * ResetAllCaches on this instance. Token results go in any case: the reset is also how an
   * operator drops a revoked token's result.
   */
  async function resetLocal(by: string): Promise<ResetResult> {
    lastResetError = undefined;
    return reloadRuntime(cache, clearTokenResults(latest), events, by, (err) => (lastResetError = err));
  }

  const gateway: Gateway = {
    router: Router(),
    handler,
    adminRouter: Router(),
    store,
    metrics,
    get configState() {
      return { ...cache.state, apis: apisOf(latest) };
    },
    nodeId,
    get configVersion() {
      return latestDigest;
    },
    async ready() {
      await cluster();
      await Promise.resolve(cache.get()).catch((err: unknown) => refused(events, err, 'the first load'));
      await checks.start(latest?.tokenPolicies.values() ?? []);
    },
    health: () => ({ ready: readiness.now(), tokenPolicies: checks.results() }),
    whenReady: () => readiness.reached(),
    dependencies: () => dependencies.snapshot(),
    check: async () => checkNow((await cache.get()).compiled),
    async resetAllCaches(resetOptions) {
      const by = typeof resetOptions?.by === 'string' && resetOptions.by !== '' ? resetOptions.by.slice(0, 200) : 'the host';
      const joined = await cluster();
      if (joined === undefined) return resetLocal(by);
      // Every instance resets (this one included) and reports; this one's report is first.
      askedBy.push(by);
      const answer = await joined.resetAll();
      const own = answer.nodes[0];
      if (events !== undefined) logClusterReset(events, by, answer);
      if (own?.applied !== true) throw lastResetError ?? new Error(own?.error ?? 'reset failed');
      return { ...(own.result as ResetResult), cluster: answer };
    },
    async clusterStatus() {
      return (await cluster())?.status();
    },
    forget(selector) {
      let forgotten = 0;
      for (const policy of latest?.tokenPolicies.values() ?? []) forgotten += policy.forget(selector);
      return forgotten;
    },
    async close() {
      await closeParts([checks, work, link, access, cache], latest, ownDispatcher ? compileSettings.dispatcher : undefined);
      latest = undefined;
    },
  };

  mountAdmin(gateway, options, settings, { ready: () => readiness.now(), metricsAuth: metrics?.auth, access, work }, () => latest);
  // One router layer: the handler decides which requests are the gateway's (Express's own mount
  // matching ignores case) and passes the others on.
  gateway.router.use((req: Request, res: Response, next: NextFunction) => handler(req, res, next));
  return gateway;
}

type GatewaySettings = ReturnType<typeof gatewaySettings>;

/**
 * Closes a gateway's parts in order (the token checks, the operators' work, the cluster link, the
 * operators, whose audit writes its pending summaries, the configuration cache), then what the
 * runtime in force holds, then its own backend connections.
 */
async function closeParts(
  parts: ReadonlyArray<{ close(): void | Promise<void> } | undefined>,
  runtime: Runtime | undefined,
  dispatcher: { close(): Promise<void> } | undefined,
): Promise<void> {
  for (const part of parts) await part?.close();
  for (const policy of runtime?.tokenPolicies.values() ?? []) policy.close();
  await runtime?.traffic.limiter?.close();
  await dispatcher?.close();
}

/**
 * `states` (every dependency's state: said once per change, shown by the metrics and the admin
 * status), told of the store's dependencies (the database, the journal) when it has any.
 */
function watchStore(states: DependencyStates, store: TransactionStore): DependencyStates {
  if (store.onAvailability === undefined) return states;
  // Assumed up until a failure says otherwise, as the store itself does.
  states.up('postgresql');
  store.onAvailability((dependency, available, cause, action) =>
    available ? states.up(dependency) : states.down(dependency, cause ?? 'unknown', action ?? ''),
  );
  return states;
}

/** The refusal of a new exchange while the store refuses (a journal that cannot write under `refuse`). */
function refusedByStore(store: TransactionStore): GatewayError | undefined {
  const cause = store.refusing;
  return cause === undefined ? undefined : new GatewayError('ERR_RECORDING_UNAVAILABLE', { diagnostic: cause });
}

/** The compile settings of `settings` with the gateway's parts, and its store of DPoP proof identifiers watched. */
function compileSettingsOf(
  settings: GatewaySettings,
  dependencies: DependencyStates,
  parts: Pick<CompileSettings, 'tracing' | 'metrics' | 'watchTokenPolicy'>,
): CompileSettings {
  // One store of proof identifiers for the process's policies (on Redis, the cluster's instead).
  const dpopReplay = watchedProofStore(settings.compileSettings.dpopReplay ?? new MemoryReplayStore(), dependencies);
  return { ...settings.compileSettings, ...parts, dpopReplay };
}

/** The compile settings with what the cluster shares, once joined: token results, Redis, the live instances. */
function withCluster(settings: CompileSettings, joined: GatewayCluster | undefined): CompileSettings {
  if (joined === undefined) return settings;
  return { ...settings, shared: joined.tokenResults, redis: joined.redis, liveInstances: () => joined.liveNodeCount };
}

/** Closes what a replaced runtime holds and the one in force does not: token policies, the traffic engine. */
function disposeRuntime(old: Runtime, latest: Runtime | undefined, watch: AuthorizationServerWatch | undefined): void {
  const live = new Set(latest?.tokenPolicies.values() ?? []);
  watch?.retain(live);
  for (const policy of old.tokenPolicies.values()) if (!live.has(policy)) policy.close();
  if (old.traffic.limiter !== latest?.traffic.limiter) void old.traffic.limiter?.close();
}

/** This instance's ResetAllCaches after its token results went: the configuration read and compiled again. */
async function reloadRuntime(
  cache: ConfigCache<Runtime>,
  tokenResultsCleared: number,
  events: GatewayLogger | undefined,
  by: string,
  failed: (err: unknown) => void,
): Promise<ResetResult> {
  let entry;
  try {
    entry = await cache.reload();
  } catch (err) {
    failed(err);
    log('ResetAllCaches: %s', (err as Error)?.message ?? String(err));
    if (events !== undefined) logConfigRefused(events, err, `ResetAllCaches (by ${by})`);
    throw err instanceof ConfigError ? err : new Error((err as Error)?.message ?? String(err), { cause: err });
  }
  const state = cache.state;
  const result: ResetResult = {
    loadedAt: entry.loadedAt,
    apis: [...entry.compiled.apis.keys()],
    tokenResultsCleared,
  };
  if (state.expiresAt !== undefined) result.expiresAt = state.expiresAt;
  log('ResetAllCaches: %d API(s), %d token result(s) cleared', result.apis.length, tokenResultsCleared);
  events?.info(
    { event: 'reset', by, apis: result.apis.length, tokenResultsCleared },
    `ResetAllCaches by ${by}: ${result.apis.length} API(s) in force`,
  );
  return result;
}

/** A configuration compiled: its warnings logged, its token policies checked (once `ready()` turned the checks on). */
function compiled(runtime: Runtime, events: GatewayLogger | undefined, checks: TokenPolicyChecks): void {
  if (events !== undefined) logConfigWarnings(events, runtime.warnings);
  void checks.track(runtime.tokenPolicies.values());
}

/**
 * The gateway's recorder. Every answer of the request path goes through the relay or the error
 * handler (sendProblem), and both write `Server` and the id headers themselves, with the rest of
 * the head: the recorder sets none (no writeHead hook, no setHeader per response). The client
 * address the record shows is the one trustProxy lets the gateway believe (as the throttle's).
 */
function gatewayRecorder(
  options: CreateGatewayOptions,
  settings: GatewaySettings,
  tracing: GatewayTracing,
  metrics: () => GatewayMetricsRecorder | undefined,
): RecordTransactionMiddleware {
  const access = settings.accessLog === undefined ? undefined : accessLog(settings.accessLog);
  return recordTransaction({
    ...options.recording,
    store: settings.store,
    nodeId: settings.nodeId,
    idHeaders: false,
    clientAddress: settings.compileSettings.clientAddress,
    // The exchange's trace starts with it, and its record ends the span and counts in the metrics
    // (and makes the access log's line).
    observer: {
      start: (req, context) => tracing.start(req, context),
      end: (built, context, seconds) => {
        metrics()?.exchangeEnded(built, seconds);
        tracing.end(context, built);
        access?.(built);
      },
    },
  });
}

/** The link to the other instances through Redis, joined at the first load; `undefined` without `redis`. */
function clusterLink(
  options: CreateGatewayOptions,
  settings: GatewaySettings,
  access: OperatorAccess | undefined,
  hooks: Pick<ClusterLinkOptions, 'onReset' | 'describe'>,
  dependencies: DependencyStates,
): ClusterLink | undefined {
  if (options.redis === undefined) return undefined;
  const { nodeId, clusterSecrets, redisKeyPrefix, redisCommandTimeoutMs } = settings;
  return new ClusterLink(
    {
      redis: options.redis,
      // Checked by gatewaySettings: set whenever redis is.
      secret: clusterSecrets!,
      nodeId,
      ...(redisKeyPrefix === undefined ? {} : { keyPrefix: redisKeyPrefix }),
      ...(redisCommandTimeoutMs === undefined ? {} : { commandTimeoutMs: redisCommandTimeoutMs }),
      ...hooks,
    },
    access,
    dependencies,
  );
}

/** Logs a configuration that could not be loaded (with a logger), then throws it on. */
function refused(events: GatewayLogger | undefined, err: unknown, when: string): never {
  if (events !== undefined) logConfigRefused(events, err, when);
  throw err;
}

/** What this instance tells the others of itself: its configuration's state and version. */
function nodeDescription(state: ConfigCacheState, apis: string[], digest: string | undefined): NodeDescription {
  return {
    configLoadedAt: state.loadedAt,
    configExpiresAt: state.expiresAt,
    apis,
    ...(digest === undefined ? {} : { configVersion: digest }),
    ...(state.lastError === undefined ? {} : { lastError: state.lastError.message }),
  };
}

/** The `reset` record of a ResetAllCaches on every instance: who asked, which nodes reset, which did not answer. */
function logClusterReset(events: GatewayLogger, by: string, answer: ClusterResetResult): void {
  const applied = answer.nodes.filter((node) => node.applied).length;
  events.info(
    {
      event: 'reset',
      by,
      nodes: answer.nodes.map((node) => ({ nodeId: node.nodeId, applied: node.applied })),
      missing: answer.missing,
      broadcast: answer.broadcast,
    },
    `ResetAllCaches by ${by} on every instance: ${applied} of ${answer.nodes.length} reset${answer.missing.length > 0 ? `, ${answer.missing.length} did not answer` : ''}`,
  );
}

/** `onError` of the gateway's error handler with a logger: the error and its stack, once. */
function unexpectedError(events: GatewayLogger): (err: unknown, req: IncomingMessage) => void {
  const logged = new WeakSet<object>();
  return (err, req) => {
    if (typeof err === 'object' && err !== null) {
      if (logged.has(err)) return;
      logged.add(err);
    }
    const transactionId = req.gateway?.transactionId;
    const fields = errorFields(err, req.gateway?.token?.raw);
    events.error(
      { event: 'unexpected_error', ...(transactionId === undefined ? {} : { transactionId }), err: fields },
      `unexpected error answered 500: ${String(fields['type'])}: ${String(fields['message'])}`,
    );
  };
}

/** Forgets every cached token result of the runtime's token policies; returns how many there were. */
function clearTokenResults(runtime: Runtime | undefined): number {
  let cleared = 0;
  for (const policy of runtime?.tokenPolicies.values() ?? []) {
    cleared += policy.cacheSize;
    policy.clearCache();
  }
  return cleared;
}

/** The gateway's metrics, when its settings ask for them. */
function gatewayMetrics(settings: GatewaySettings, tracing: GatewayTracing, sources: MetricsSources): GatewayMetricsRecorder | undefined {
  return settings.metrics === undefined ? undefined : new GatewayMetricsRecorder(settings.metrics, sources, tracing);
}

/** The operators of the admin listener, with `admin`; its credentials checked now, not at the first admin call. */
function operatorAccess(options: CreateGatewayOptions, settings: GatewaySettings): OperatorAccess | undefined {
  if (options.admin === undefined) return undefined;
  adminAuthenticator(options.admin, 'createGateway: options.admin');
  const listener = { basePath: settings.basePath, trustProxy: settings.compileSettings.trustProxy };
  const events = settings.logger;
  return new OperatorAccess(
    options.admin,
    options.operators ?? {},
    listener,
    'createGateway',
    events === undefined ? undefined : (entry) => operatorEvent(events, entry),
  );
}

/** The admin router's routes: health (always), admin and console (with `admin`). */
function mountAdmin(
  gateway: Gateway,
  options: CreateGatewayOptions,
  settings: GatewaySettings,
  {
    ready,
    metricsAuth,
    access,
    work,
  }: {
    ready: () => boolean;
    metricsAuth: boolean | undefined;
    access: OperatorAccess | undefined;
    work: OperatorWorkPool;
  },
  /** The runtime in force, for the configuration console's usage of its traffic policies. */
  trafficInForce: () => Runtime | undefined,
): void {
  const { basePath, server, messages, configStore } = settings;
  const adminHost =
    settings.adminHostName === undefined ? undefined : adminHostCheck(settings.adminHostName, settings.compileSettings.trustProxy);
  const prefix = basePath === '/' ? '' : basePath;
  // Both consoles open in the gateway's message language when the browser asks for neither (a set of one's own: Italian, the default's).
  const language = messages === 'en' || messages === messagesEn ? 'en' : 'it';
  const adminApp = gateway.adminRouter;
  const serverHeader = (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('Server', server);
    next();
  };
  // Health for load balancers and orchestrators: no credentials, nothing but the status.
  const health =
    (isUp: () => boolean) =>
    (_req: Request, res: Response): void => {
      const ok = isUp();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', Server: server });
      res.end(ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
    };
  adminApp.get(
    `${prefix}/health/live`,
    health(() => true),
  );
  adminApp.get(`${prefix}/health/ready`, health(ready));
  // Metrics: behind the operators' credentials (none without `admin`: no open default), or open when asked.
  const metrics = gateway.metrics;
  if (metrics !== undefined && metricsAuth === false) adminApp.get(`${prefix}/metrics`, serverHeader, metricsHandler(metrics));
  else if (metrics !== undefined && access !== undefined) {
    adminApp.use(`${prefix}/metrics`, access.signInTrail('metrics'));
    adminApp.get(`${prefix}/metrics`, serverHeader, adminReadGate(access.routerOptions()), metricsHandler(metrics));
  }
  if (access === undefined) return;
  // Past health and metrics (programs that address an instance by its own name), the operators'
  // routes answer under the admin host name only.
  if (adminHost !== undefined)
    adminApp.use(
      ADMIN_AREAS.filter((area) => area !== 'metrics').map((area) => `${prefix}/${area}`),
      serverHeader,
      adminHost,
    );
  // Every router of the listener: the same operators (session or Basic), roles and throttle.
  adminApp.use(`${prefix}/admin`, serverHeader, access.auditTrail('admin'), adminRouter(gateway, access.routerOptions()));
  adminApp.use(`${prefix}/operators`, serverHeader, access.signInTrail('operators'), operatorsRouter(access));
  if (configStore !== undefined) {
    adminApp.use(
      `${prefix}/configuration/api`,
      serverHeader,
      access.signInTrail('configuration/api'),
      configurationRouter(access, configStore, gateway, work, trafficInForce, { hasRedis: settings.compileSettings.hasRedis }),
    );
    adminApp.use(`${prefix}/configuration`, serverHeader, configurationPage(language));
  }
  if (options.console === false) return;
  const { authenticate, realm } = access.routerOptions();
  adminApp.use(
    `${prefix}/console`,
    serverHeader,
    access.signInTrail('console'),
    monitoringConsole({
      store: gateway.store,
      authenticate,
      ...(options.admin?.realm === undefined ? {} : { realm }),
      language,
    }),
  );
}
