/**
 * `createGateway`: the whole gateway of the spec from one configuration.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { Agent, type Dispatcher } from 'undici';
import type { MessageSet } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks } from '../options.js';
import { problemJsonErrorHandler } from '../problem/handler.js';
import { monitoringConsole } from '../record/console/router.js';
import { MemoryTransactionStore } from '../record/memory-store.js';
import { recordTransaction, type RecordTransactionOptions } from '../record/record-transaction.js';
import type { TransactionStore } from '../record/types.js';
import type { TokenPolicyOptions } from '../token/policy.js';
import { createGatewayCluster, type ClusterStatus, type GatewayCluster } from '../cluster/cluster.js';
import type { RedisClientLike } from '../cluster/redis.js';
import { ConfigError } from './config/errors.js';
import { defaultNodeId, NODE_ID, NODE_ID_RULE } from '../cluster/node-id.js';
import { adminAuthenticator, adminRouter, type AdminAuthOptions, type AdminForgetSelector, type GatewayConfigState, type ResetResult } from './admin.js';
import { compileRuntime, type CompileSettings, type Runtime } from './compile.js';
import { ConfigCache } from './config/cache.js';
import type { ConfigSource } from './config/load.js';
import type { ResolvedTokenPolicy } from './config/types.js';
import { createRequestPath } from './request-path.js';
import type { RequestTargetRules } from '../url/request-target.js';
import { clientAddressOf, compileTrust, type TrustProxy } from './trust-proxy.js';

const log = logger('gateway');


/** Options of {@link createGateway}. */
export interface CreateGatewayOptions {
  /**
   * The configuration: the path of a JSON file (relative paths in it resolve from its folder), the
   * document as an object, or an async loader. Read at first access (or {@link Gateway.ready}),
   * cached, and read again only by {@link Gateway.resetAllCaches} or at expiry.
   */
  config: ConfigSource;
  /** Folder that relative paths resolve from, for an object or loader `config`. Default: the working directory. */
  baseDir?: string;
  /**
   * Path the registered APIs are served under. Default `/gateway`. Matched case-sensitively, as
   * every part of the canonical path is (see docs/security.md).
   */
  basePath?: string;
  /**
   * Accept empty path segments (`/a//b`). Default `false`: such a path is refused with 400
   * `ERR_PATH_REFUSED`, as are dot segments, escaped separators, backslashes, control characters,
   * `;` parameters and fragments, whatever this says (docs/security.md, "The canonical request path").
   */
  allowEmptySegments?: boolean;
  /** Value of the `Server` header of every gateway response. Default `Gateway`. */
  server?: string;
  /** Message set of error details: `it` (the spec's, default), `en` or your own. */
  messages?: 'it' | 'en' | MessageSet;
  /**
   * Lifetime of the cached configuration and compiled policies, in seconds. Default `7200` (spec 8).
   * (Token results have their own lifetime: `cacheTtlSeconds` of each token policy in the file.)
   */
  configCacheTtlSeconds?: number;
  /** @deprecated The name of {@link CreateGatewayOptions.configCacheTtlSeconds} until the next minor version. */
  cacheTtlSeconds?: number;
  /**
   * Credentials of the admin routes (`POST <basePath>/admin/reset-caches`, `GET <basePath>/admin/status`)
   * and of the monitoring console (`<basePath>/console/`). Without it neither is mounted: there is no
   * open default.
   */
  admin?: AdminAuthOptions;
  /** Mount the monitoring console at `<basePath>/console` (needs `admin`). Default `true`. */
  console?: boolean;
  /**
   * Where transaction records go. Default: a new `MemoryTransactionStore`. Give every instance the
   * same `PostgresTransactionStore` table to see all their records from any console.
   */
  store?: TransactionStore;
  /**
   * Redis shared by the gateway's instances (`redis://` / `rediss://` URL, or a node-redis client):
   * token results are shared behind each instance's own cache (one introspection per token for all
   * of them), ResetAllCaches reaches every instance, and `GET <basePath>/admin/status` lists them.
   * Redis down or slow never fails a request: each instance goes on with its own cache.
   * Default: none (one instance on its own). See docs/deployment.md.
   */
  redis?: string | RedisClientLike;
  /** Prefix of the gateway's Redis keys and channels, one per group of instances. Default `eag:`. */
  redisKeyPrefix?: string;
  /**
   * This instance's id, on every record it writes and in the node list: up to 200 letters, digits
   * and `._:@-`. Default `<host name>-<pid>`.
   */
  nodeId?: string;
  /** Other options of the `recordTransaction` middleware (outgoing-header recording is set per API). */
  recording?: Omit<RecordTransactionOptions, 'store' | 'recordOutgoingHeaders' | 'idHeaders' | 'clientAddress'>;
  /**
   * Whose `X-Forwarded-*` and `Forwarded` headers the relay continues instead of replacing them
   * with the connection's: Express's `trust proxy` values. Default `false` (nobody's).
   */
  trustProxy?: TrustProxy;
  /** Connections to backends. */
  relay?: {
    /**
     * Relay client headers whose name has `_`. Default `false`: dropped, as nginx does (a CGI/WSGI
     * backend reads `Gateway_Token_Subject` as `Gateway-Token-Subject`).
     */
    keepUnderscoreHeaders?: boolean;
    /**
     * Bytes of an unread upload drained after a backend's early answer, so that the client's next
     * request on the connection is answered; a larger (or chunked) one closes the connection.
     * Default `1048576`.
     */
    maxDrainBytes?: number;
    /** Connect timeout in milliseconds (503 past it). Default `10000`. */
    connectTimeoutMs?: number;
    /** Most connections per backend origin. Default: no limit. */
    connections?: number;
    /**
     * How long an idle keep-alive connection to a backend is kept, in milliseconds. A backend's
     * longer `Keep-Alive: timeout=` hint does not extend it (a shorter one shortens it). Default `4000`.
     */
    keepAliveTimeoutMs?: number;
    /** Your own undici dispatcher (then the options above are ignored, and you close it). */
    dispatcher?: Dispatcher;
  };
  /**
   * Adjusts the options of each token policy built from the configuration, for what a JSON file
   * cannot hold (a `private_key_jwt` key, metadata from elsewhere).
   */
  tokenPolicyOptions?: (options: TokenPolicyOptions, config: ResolvedTokenPolicy) => TokenPolicyOptions;
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
   * and `GET <basePath>/health/ready` (200 once a configuration is loaded and compiled, else 503),
   * which need no credentials and tell nothing but the status. Mount it on its own listener (its own port,
   * so its own origin), never in the app that relays APIs: a page relayed from a backend shares
   * the origin of the APIs and could otherwise use an operator's cached credentials
   * (see docs/security.md).
   */
  readonly adminRouter: Router;
  /** The store transactions are recorded in. */
  readonly store: TransactionStore;
  /** The configuration cache's state (when loaded, when it expires, the last load failure) and the APIs served. */
  readonly configState: GatewayConfigState;
  /**
   * Loads the configuration now instead of at the first request, so that a bad one fails at start.
   * Rejects with a {@link ConfigError}.
   */
  ready(): Promise<void>;
  /**
   * ResetAllCaches: reads the configuration again, compiles its policies, and forgets every cached
   * token result. When the new configuration is invalid, the previous one stays in force and the
   * promise rejects with the {@link ConfigError} that says why (token results are forgotten anyway).
   */
  resetAllCaches(): Promise<ResetResult>;
  /**
   * Forgets the cached token results (valid and refused) of one subject or one client id, in every
   * token policy in force, without a full ResetAllCaches: for an incident. Returns how many were
   * dropped. Also `POST <basePath>/admin/forget`.
   */
  forget(selector: AdminForgetSelector): number;
  /** This instance's id (`nodeId`), on every record it writes. */
  readonly nodeId: string;
  /** With `redis`: this instance, the live instances and the Redis connection; else `undefined`. */
  clusterStatus(): Promise<ClusterStatus | undefined>;
  /** Stops: closes backend connections, Redis and timers. In-flight relays finish first. */
  close(): Promise<void>;
}

const BASE_PATH = /^\/([A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*)?\/?$/;

function normalizeBasePath(value: string): string {
  return value.length > 1 && value.endsWith('/') ? value.slice(0, -1) : value;
}

/**
 * Creates the gateway of the spec: every registered API ("erogazione") of the configuration served
 * at `{basePath}/<provider>/<api>/v<version>/<resource path>` with the processing order of spec 4.2:
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
  const check = optionChecks('createGateway');
  check.object(options, '');
  const source = options.config;
  if (!(typeof source === 'string' || source instanceof URL || typeof source === 'function' || (source !== null && typeof source === 'object'))) {
    check.fail('config', 'must be a file path, a configuration object or a loader function');
  }
  const basePath = normalizeBasePath(check.string(options.basePath, 'basePath', '/gateway', BASE_PATH, 'a path like /gateway'));
  if (options.configCacheTtlSeconds !== undefined && options.cacheTtlSeconds !== undefined) check.fail('cacheTtlSeconds', 'is the old name of configCacheTtlSeconds: give one of them');
  const configCacheTtlSeconds = options.configCacheTtlSeconds ?? options.cacheTtlSeconds;
  const targetRules: RequestTargetRules = { allowEmptySegments: check.boolean(options.allowEmptySegments, 'allowEmptySegments', false) };
  const server = check.headerValue(options.server, 'server', 'Gateway');
  const messages = options.messages ?? 'it';
  const store = options.store ?? new MemoryTransactionStore();
  const nodeId = check.string(options.nodeId, 'nodeId', defaultNodeId(), NODE_ID, NODE_ID_RULE);
  if (options.redis !== undefined && typeof options.redis !== 'string' && (typeof options.redis !== 'object' || options.redis === null)) check.fail('redis', 'must be a redis:// URL or a node-redis client');
  const redisKeyPrefix = options.redisKeyPrefix === undefined ? undefined : check.string(options.redisKeyPrefix, 'redisKeyPrefix');
  const tokenPolicyOptions = check.optionalFunction<NonNullable<CreateGatewayOptions['tokenPolicyOptions']>>(options.tokenPolicyOptions, 'tokenPolicyOptions');
  const relayOptions = check.object<NonNullable<CreateGatewayOptions['relay']>>(options.relay, 'relay', {});
  const connectTimeoutMs = check.positive(relayOptions.connectTimeoutMs, 'relay.connectTimeoutMs', 10_000);
  const connections = relayOptions.connections === undefined ? undefined : check.positive(relayOptions.connections, 'relay.connections', 0, true);
  const keepAliveTimeoutMs = check.positive(relayOptions.keepAliveTimeoutMs, 'relay.keepAliveTimeoutMs', 4_000);
  // Compiled once here so that a bad value fails at start; each relay gets the compiled function.
  const trustProxy = compileTrust(options.trustProxy, check, 'trustProxy');
  const compileSettings: CompileSettings = {
    server,
    trustProxy,
    clientAddress: clientAddressOf(trustProxy),
    keepUnderscoreHeaders: relayOptions.keepUnderscoreHeaders === undefined ? undefined : check.boolean(relayOptions.keepUnderscoreHeaders, 'relay.keepUnderscoreHeaders', false),
    maxDrainBytes: relayOptions.maxDrainBytes === undefined ? undefined : check.positive(relayOptions.maxDrainBytes, 'relay.maxDrainBytes', 0, true),
    tokenPolicyOptions,
    dispatcher:
      relayOptions.dispatcher ??
      new Agent({
        connect: { timeout: connectTimeoutMs },
        ...(connections === undefined ? {} : { connections }),
        // undici keeps an idle connection as long as the backend's `Keep-Alive: timeout=` hint
        // says (up to 10 minutes) unless capped: the cap makes the documented setting hold.
        keepAliveTimeout: keepAliveTimeoutMs,
        keepAliveMaxTimeout: keepAliveTimeoutMs,
      }),
  };
  const ownDispatcher = relayOptions.dispatcher === undefined;
  // Every answer of the request path goes through the relay or the error handler (sendProblem),
  // and both write `Server` and the id headers themselves, with the rest of the head: the
  // recorder sets none (no writeHead hook, no setHeader per response).
  // The client address the record shows is the one trustProxy lets the gateway believe (as the throttle's).
  const record = recordTransaction({ ...options.recording, store, nodeId, idHeaders: false, clientAddress: compileSettings.clientAddress });
  const errorHandler = problemJsonErrorHandler({ messages, server });
  // Validated now, so that a missing password fails at start rather than at the first admin call.
  if (options.admin !== undefined) adminAuthenticator(options.admin, 'createGateway: options.admin');

  /** The runtime most recently compiled and accepted (the cache's entry in force). */
  let latest: Runtime | undefined;
  // Connected once, at the first load; the configuration is compiled with its shared token results.
  let clusterReady: Promise<GatewayCluster> | undefined;
  const cluster = (): Promise<GatewayCluster> | undefined => {
    if (options.redis === undefined) return undefined;
    clusterReady ??= createGatewayCluster({
      redis: options.redis,
      nodeId,
      ...(redisKeyPrefix === undefined ? {} : { keyPrefix: redisKeyPrefix }),
      onReset: () => resetLocal(),
      describe: () => {
        const state = cache.state;
        return { configLoadedAt: state.loadedAt, configExpiresAt: state.expiresAt, apis: apisOf(latest), ...(state.lastError === undefined ? {} : { lastError: state.lastError.message }) };
      },
    });
    return clusterReady;
  };
  const cache = new ConfigCache<Runtime>({
    source,
    ...(options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
    ...(configCacheTtlSeconds === undefined ? {} : { ttlSeconds: configCacheTtlSeconds }),
    compile: async (config) => {
      const shared = (await cluster())?.tokenResults;
      return (latest = compileRuntime(config, latest, shared === undefined ? compileSettings : { ...compileSettings, shared }));
    },
    dispose: (old) => {
      const live = new Set(latest?.tokenPolicies.values() ?? []);
      for (const policy of old.tokenPolicies.values()) if (!live.has(policy)) policy.close();
    },
  });

  const handler = createRequestPath({
    basePath,
    targetRules,
    record,
    errorHandler,
    runtime: () => {
      const entry = cache.get();
      return entry instanceof Promise ? entry.then((loaded) => loaded.compiled) : entry.compiled;
    },
  });

  const apisOf = (runtime: Runtime | undefined): string[] => (runtime === undefined ? [] : [...runtime.apis.keys()]);
  let lastResetError: unknown;
  /**
   * ResetAllCaches on this instance. Token results go in any case: the reset is also how an
   * operator drops a revoked token's result.
   */
  async function resetLocal(): Promise<ResetResult> {
    lastResetError = undefined;
    const tokenResultsCleared = clearTokenResults();
    let entry;
    try {
      entry = await cache.reload();
    } catch (err) {
      lastResetError = err;
      log('ResetAllCaches: %s', (err as Error)?.message ?? String(err));
      throw err instanceof ConfigError ? err : new Error((err as Error)?.message ?? String(err), { cause: err });
    }
    const state = cache.state;
    const result: ResetResult = { loadedAt: entry.loadedAt, apis: apisOf(entry.compiled), tokenResultsCleared };
    if (state.expiresAt !== undefined) result.expiresAt = state.expiresAt;
    log('ResetAllCaches: %d API(s), %d token result(s) cleared', result.apis.length, tokenResultsCleared);
    return result;
  }
  function clearTokenResults(): number {
    let cleared = 0;
    for (const policy of latest?.tokenPolicies.values() ?? []) {
      cleared += policy.cacheSize;
      policy.clearCache();
    }
    return cleared;
  }

  const gateway: Gateway = {
    router: Router(),
    handler,
    adminRouter: Router(),
    store,
    get configState() {
      return { ...cache.state, apis: apisOf(latest) };
    },
    nodeId,
    async ready() {
      await cluster();
      await cache.get();
    },
    async resetAllCaches() {
      const joined = await cluster();
      if (joined === undefined) return resetLocal();
      // Every instance resets (this one included) and reports; this one's report is first.
      const answer = await joined.resetAll();
      const own = answer.nodes[0];
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
      await (await clusterReady?.catch(() => undefined))?.close();
      await cache.close();
      for (const policy of latest?.tokenPolicies.values() ?? []) policy.close();
      latest = undefined;
      if (ownDispatcher) await compileSettings.dispatcher.close();
    },
  };

  mountAdmin(gateway, options, { basePath, server, ready: () => latest !== undefined });
  // One router layer: the handler decides which requests are the gateway's (Express's own mount
  // matching ignores case) and passes the others on.
  gateway.router.use((req: Request, res: Response, next: NextFunction) => handler(req, res, next));
  return gateway;
}

/** The admin router's routes: health (always), admin and console (with `admin`). */
function mountAdmin(gateway: Gateway, options: CreateGatewayOptions, { basePath, server, ready }: { basePath: string; server: string; ready: () => boolean }): void {
  const prefix = basePath === '/' ? '' : basePath;
  const adminApp = gateway.adminRouter;
  const serverHeader = (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('Server', server);
    next();
  };
  // Health for load balancers and orchestrators: no credentials, nothing but the status.
  const health = (isUp: () => boolean) => (_req: Request, res: Response): void => {
    const ok = isUp();
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', Server: server });
    res.end(ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
  };
  adminApp.get(`${prefix}/health/live`, health(() => true));
  adminApp.get(`${prefix}/health/ready`, health(ready));
  if (options.admin === undefined) return;
  adminApp.use(`${prefix}/admin`, serverHeader, adminRouter(gateway, options.admin));
  if (options.console === false) return;
  const { basicAuth, authenticate, realm } = options.admin;
  adminApp.use(
    `${prefix}/console`,
    serverHeader,
    monitoringConsole({
      store: gateway.store,
      ...(basicAuth === undefined ? {} : { basicAuth }),
      ...(authenticate === undefined ? {} : { authenticate }),
      ...(realm === undefined ? {} : { realm }),
    }),
  );
}
