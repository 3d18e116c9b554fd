/**
 * `createGateway`: the whole gateway of the spec from one configuration.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { Agent, type Dispatcher } from 'undici';
import { xacmlAuthorize } from '../authorize/xacml-authorize.js';
import { gatewayContext } from '../context.js';
import { GatewayError, type MessageSet } from '../errors.js';
import { logger } from '../log.js';
import { problemJsonErrorHandler } from '../problem/handler.js';
import { monitoringConsole } from '../record/console/router.js';
import { MemoryTransactionStore } from '../record/memory-store.js';
import { recordTransactionWithoutIdHeaders, type RecordTransactionOptions } from '../record/record-transaction.js';
import type { TransactionStore } from '../record/types.js';
import { forwardTokenHeaders } from '../token/forward/forward-token-headers.js';
import { introspect } from '../token/introspect.js';
import { createTokenPolicy, type TokenPolicy, type TokenPolicyOptions } from '../token/policy.js';
import { requireToken } from '../token/require-token.js';
import { adminAuthenticator, adminRouter, type AdminAuthOptions, type GatewayConfigState, type ResetResult } from './admin.js';
import { ConfigCache } from './config/cache.js';
import { ConfigError } from './config/errors.js';
import type { ConfigSource } from './config/load.js';
import type { ResolvedApi, ResolvedConfig, ResolvedTokenPolicy } from './config/types.js';
import { isHeaderValue } from './headers.js';
import { createRelay } from './relay.js';
import { compileTrust, type TrustProxy } from './trust-proxy.js';
import { canonicalTarget, isRefused, type CanonicalTarget, type RefusedTarget, type RequestTargetRules } from './request-target.js';
import { apiKey, findOperation, parseInvocation } from './routing.js';

const log = logger('gateway');

/** The per-request recording setting of APIs that record outgoing headers: one shared object. */
const RECORD_OUTGOING_HEADERS = Object.freeze({ outgoingHeaders: true });

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

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
  /** Lifetime of the cached configuration and compiled policies, in seconds. Default `7200` (spec 8). */
  cacheTtlSeconds?: number;
  /**
   * Credentials of the admin routes (`POST <basePath>/admin/reset-caches`, `GET <basePath>/admin/status`)
   * and of the monitoring console (`<basePath>/console/`). Without it neither is mounted: there is no
   * open default.
   */
  admin?: AdminAuthOptions;
  /** Mount the monitoring console at `<basePath>/console` (needs `admin`). Default `true`. */
  console?: boolean;
  /** Where transaction records go. Default: a new `MemoryTransactionStore`. */
  store?: TransactionStore;
  /** Other options of the `recordTransaction` middleware (outgoing-header recording is set per API). */
  recording?: Omit<RecordTransactionOptions, 'store' | 'recordOutgoingHeaders'>;
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
  /** Stops: closes backend connections and timers. In-flight relays finish first. */
  close(): Promise<void>;
}

/** One registered API, ready to serve. */
interface CompiledApi {
  readonly api: ResolvedApi;
  readonly chain: readonly Middleware[];
}

/** What a configuration compiles into. */
interface Runtime {
  readonly apis: ReadonlyMap<string, CompiledApi>;
  /** Token policies by their settings' key (reused across reloads while the settings are the same). */
  readonly tokenPolicies: ReadonlyMap<string, TokenPolicy>;
}

function normalizeBasePath(value: unknown): string {
  if (value === undefined) return '/gateway';
  if (typeof value !== 'string' || !/^\/([A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*)?\/?$/.test(value)) {
    throw new TypeError('createGateway: options.basePath must be a path like /gateway');
  }
  return value.length > 1 && value.endsWith('/') ? value.slice(0, -1) : value;
}

/** Runs a list of middleware in order, stopping at the first error (as a tiny router would). */
function runChain(chain: readonly Middleware[], req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void): void {
  let index = 0;
  const next = (err?: unknown): void => {
    if (err !== undefined && err !== null) {
      done(err);
      return;
    }
    const handler = chain[index++];
    if (handler === undefined) {
      done();
      return;
    }
    try {
      handler(req, res, next);
    } catch (error) {
      done(error);
    }
  };
  next();
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
 * The configuration and compiled policies are cached for `cacheTtlSeconds`; a changed file takes
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
  if (options === null || typeof options !== 'object') throw new TypeError('createGateway: options must be an object');
  const source = options.config;
  if (!(typeof source === 'string' || source instanceof URL || typeof source === 'function' || (source !== null && typeof source === 'object'))) {
    throw new TypeError('createGateway: options.config must be a file path, a configuration object or a loader function');
  }
  const basePath = normalizeBasePath(options.basePath);
  if (options.allowEmptySegments !== undefined && typeof options.allowEmptySegments !== 'boolean') {
    throw new TypeError('createGateway: options.allowEmptySegments must be a boolean');
  }
  const targetRules: RequestTargetRules = { allowEmptySegments: options.allowEmptySegments ?? false };
  const server = options.server ?? 'Gateway';
  if (typeof server !== 'string' || server === '' || !isHeaderValue(server)) throw new TypeError('createGateway: options.server must be a non-empty header value');
  const messages = options.messages ?? 'it';
  const store = options.store ?? new MemoryTransactionStore();
  if (options.tokenPolicyOptions !== undefined && typeof options.tokenPolicyOptions !== 'function') {
    throw new TypeError('createGateway: options.tokenPolicyOptions must be a function');
  }
  const relayOptions = options.relay ?? {};
  if (relayOptions === null || typeof relayOptions !== 'object') throw new TypeError('createGateway: options.relay must be an object');
  for (const name of ['connectTimeoutMs', 'connections', 'keepAliveTimeoutMs', 'maxDrainBytes'] as const) {
    const value = relayOptions[name];
    if (value !== undefined && (typeof value !== 'number' || !(value > 0))) throw new TypeError(`createGateway: options.relay.${name} must be a positive number`);
  }
  if (relayOptions.keepUnderscoreHeaders !== undefined && typeof relayOptions.keepUnderscoreHeaders !== 'boolean') {
    throw new TypeError('createGateway: options.relay.keepUnderscoreHeaders must be a boolean');
  }
  // Compiled once here so that a bad value fails at start; each relay gets the compiled function.
  const trustProxy = compileTrust(options.trustProxy, 'createGateway: options.trustProxy');
  const ownDispatcher = relayOptions.dispatcher === undefined;
  const dispatcher =
    relayOptions.dispatcher ??
    new Agent({
      connect: { timeout: relayOptions.connectTimeoutMs ?? 10_000 },
      ...(relayOptions.connections === undefined ? {} : { connections: relayOptions.connections }),
      // undici keeps an idle connection as long as the backend's `Keep-Alive: timeout=` hint says
      // (up to 10 minutes) unless capped: the cap makes the documented setting hold.
      keepAliveTimeout: relayOptions.keepAliveTimeoutMs ?? 4_000,
      keepAliveMaxTimeout: relayOptions.keepAliveTimeoutMs ?? 4_000,
    });
  // Every answer of the request path goes through the relay or the error handler (sendProblem),
  // and both write `Server` and the id headers themselves, with the rest of the head: the
  // recorder sets none (no writeHead hook, no setHeader per response).
  const record = recordTransactionWithoutIdHeaders({ ...options.recording, store });
  const errorHandler = problemJsonErrorHandler({ messages, server });
  // Validated now, so that a missing password fails at start rather than at the first admin call.
  if (options.admin !== undefined) adminAuthenticator(options.admin, 'createGateway: options.admin');

  /** The runtime most recently compiled and accepted (the cache's entry in force). */
  let latest: Runtime | undefined;

  function tokenPolicyFor(config: ResolvedTokenPolicy, api: ResolvedApi & { tokenManagement: { enabled: true } }): [string, TokenPolicyOptions] {
    const { jwtValidation, introspection, userInfo } = api.tokenManagement;
    const endpoints = config.introspectionEndpoint !== undefined || config.userinfoEndpoint !== undefined || config.jwksUri !== undefined;
    let policyOptions: TokenPolicyOptions = {
      name: config.name,
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      introspection,
      jwtValidation,
      userInfo,
      timeoutMs: config.timeoutMs,
      cache: { ttlSeconds: config.cacheTtlSeconds },
      ...(endpoints
        ? {
            metadata: {
              issuer: config.issuer,
              ...(config.introspectionEndpoint === undefined ? {} : { introspection_endpoint: config.introspectionEndpoint }),
              ...(config.userinfoEndpoint === undefined ? {} : { userinfo_endpoint: config.userinfoEndpoint }),
              ...(config.jwksUri === undefined ? {} : { jwks_uri: config.jwksUri }),
            },
          }
        : { issuer: config.issuer }),
      ...(config.clientAuthMethod === undefined ? {} : { clientAuthMethod: config.clientAuthMethod }),
      ...(config.allowInsecureRequests === undefined ? {} : { allowInsecureRequests: config.allowInsecureRequests }),
      ...(config.audience === undefined ? {} : { audience: config.audience }),
      ...(config.anyAudience === undefined ? {} : { anyAudience: config.anyAudience }),
      ...(config.jwtTypes === undefined ? {} : { jwtTypes: config.jwtTypes }),
      ...(config.maxResponseSize === undefined ? {} : { maxResponseSize: config.maxResponseSize }),
    };
    // Same settings, same policy object: a reload keeps discovery state; the key is never logged.
    const key = JSON.stringify(policyOptions);
    if (options.tokenPolicyOptions !== undefined) policyOptions = options.tokenPolicyOptions(policyOptions, config);
    return [key, policyOptions];
  }

  function compile(config: ResolvedConfig): Runtime {
    const previous = latest?.tokenPolicies ?? new Map<string, TokenPolicy>();
    const tokenPolicies = new Map<string, TokenPolicy>();
    const created: TokenPolicy[] = [];
    const apis = new Map<string, CompiledApi>();
    try {
      config.apis.forEach((api, i) => {
        const at = `apis[${i}]`;
        const chain: Middleware[] = [];
        const tm = api.tokenManagement;
        if (tm.enabled) {
          const [key, policyOptions] = tokenPolicyFor(config.tokenPolicies[tm.policy]!, { ...api, tokenManagement: tm });
          let policy = tokenPolicies.get(key) ?? previous.get(key);
          if (policy === undefined) {
            try {
              policy = createTokenPolicy(policyOptions);
            } catch (err) {
              throw new ConfigError([{ path: `tokenPolicies.${tm.policy}`, message: (err as Error).message }], undefined, { cause: err });
            }
            created.push(policy);
          }
          tokenPolicies.set(key, policy);
          chain.push(requireToken({ policy }), introspect({ policy }));
        }
        const az = api.authorization;
        if (az.mode === 'xacml-Policy') {
          try {
            // Compiled here, once per configuration load: the request path does no XML work.
            chain.push(xacmlAuthorize({ policy: az.policyXml, references: az.referencesXml }) as unknown as Middleware);
          } catch (err) {
            throw new ConfigError([{ path: `${at}.authorization.policy`, message: `${az.policyFile}: ${(err as Error).message}` }], undefined, { cause: err });
          }
        }
        const forward = tm.enabled && tm.tokenForward.enabled;
        const original = tm.enabled ? tm.tokenForward.originalToken : undefined;
        chain.push(
          forwardTokenHeaders({
            mode: forward ? (tm.tokenForward.mode ?? 'headers') : [],
            ...(original === undefined || original === 'none' ? {} : { originalToken: original }),
          }),
        );
        const prefix = `/${api.provider}/${api.name}/v${api.version}`;
        chain.push(
          createRelay({
            target: api.backend.url,
            dispatcher,
            timeoutMs: api.backend.timeoutMs,
            server,
            idHeaders: true,
            trustProxy,
            ...(relayOptions.keepUnderscoreHeaders === undefined ? {} : { keepUnderscoreHeaders: relayOptions.keepUnderscoreHeaders }),
            ...(relayOptions.maxDrainBytes === undefined ? {} : { maxDrainBytes: relayOptions.maxDrainBytes }),
            resourceUrl: (req) => {
              const url = req.url ?? '/';
              if (url.startsWith(prefix)) {
                const rest = url.slice(prefix.length);
                return rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
              }
              // Something rewrote req.url: fall back to what routing saw (query from the current URL).
              const q = url.indexOf('?');
              return (req.gateway?.api?.resourcePath ?? '/') + (q === -1 ? '' : url.slice(q));
            },
          }),
        );
        apis.set(apiKey(api.provider, api.name, api.version), { api, chain });
      });
    } catch (err) {
      for (const policy of created) policy.close();
      throw err;
    }
    const runtime: Runtime = { apis, tokenPolicies };
    latest = runtime;
    return runtime;
  }

  function dispose(old: Runtime): void {
    const live = new Set(latest?.tokenPolicies.values() ?? []);
    for (const policy of old.tokenPolicies.values()) if (!live.has(policy)) policy.close();
  }

  const cache = new ConfigCache<Runtime>({
    source,
    ...(options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
    ...(options.cacheTtlSeconds === undefined ? {} : { ttlSeconds: options.cacheTtlSeconds }),
    compile,
    dispose,
  });

  function route(runtime: Runtime, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const url = req.url ?? '/';
    const parsed = parseInvocation(url);
    const compiled = parsed === undefined ? undefined : runtime.apis.get(apiKey(parsed.provider, parsed.api, parsed.version));
    if (parsed === undefined || compiled === undefined) {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `no registered API at ${basePath}${url.split('?')[0]}` }));
      return;
    }
    const { api } = compiled;
    let operation: string | undefined;
    if (api.operations !== undefined) {
      const found = findOperation(api.operations, req.method ?? 'GET', parsed.resourcePath);
      if (found === undefined) {
        next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `${parsed.prefix} has no operation ${req.method} ${parsed.resourcePath}` }));
        return;
      }
      operation = found.name;
    }
    const context = gatewayContext(req);
    context.api = { provider: api.provider, name: api.name, version: api.version, resourcePath: parsed.resourcePath };
    if (operation !== undefined) context.api.operation = operation;
    if (api.recording.outgoingHeaders) context.recording = RECORD_OUTGOING_HEADERS;
    runChain(compiled.chain, req, res, next);
  }

  function dispatch(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    const entry = cache.get();
    if (entry instanceof Promise) {
      entry.then(
        (loaded) => route(loaded.compiled, req, res, next),
        (err: unknown) => {
          // No configuration was ever loaded: fail closed, the cause in diagnostics and logs only.
          log('no configuration in force: %s', (err as Error)?.message ?? String(err));
          next(new GatewayError('ERR_INTERNAL', { diagnostic: `no configuration in force: ${(err as Error)?.message ?? String(err)}`, cause: err }));
        },
      );
      return;
    }
    route(entry.compiled, req, res, next);
  }

  function apisOf(runtime: Runtime | undefined): string[] {
    return runtime === undefined ? [] : [...runtime.apis.keys()];
  }

  function clearTokenResults(): number {
    let cleared = 0;
    for (const policy of latest?.tokenPolicies.values() ?? []) {
      cleared += policy.cacheSize;
      policy.clearCache();
    }
    return cleared;
  }

  /** Whether the raw path is under the base path the way Express's mount matched it (any case). */
  const baseLower = basePath.toLowerCase();
  function claimsRaw(url: string): boolean {
    if (basePath === '/') return true;
    if (url.length < baseLower.length || url.slice(0, baseLower.length).toLowerCase() !== baseLower) return false;
    const after = url.charCodeAt(baseLower.length);
    return Number.isNaN(after) || after === 47 /* / */ || after === 63 /* ? */;
  }
  function under(path: string): string | undefined {
    if (basePath === '/') return path;
    if (path === basePath) return '/';
    return path.startsWith(basePath) && path.charCodeAt(basePath.length) === 47 ? path.slice(basePath.length) : undefined;
  }

  /**
   * The request's canonical target, decided once before anything reads the URL: refused → 400
   * `ERR_PATH_REFUSED` before any token work; outside the base path in its exact case → 404;
   * otherwise `req.url` (below the base path) and `req.originalUrl` become the canonical form,
   * which the recorder, routing, XACML and the relay all read.
   */
  function decide(req: IncomingMessage, raw: string, target: CanonicalTarget | RefusedTarget): GatewayError | undefined {
    if (isRefused(target)) return new GatewayError('ERR_PATH_REFUSED', { diagnostic: `request target refused: ${target.refused}` });
    const rest = under(target.path);
    if (rest === undefined) {
      return new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `${target.path} is not under the base path ${basePath} (paths are case-sensitive)` });
    }
    const query = target.query === '' && !raw.endsWith('?') ? '' : `?${target.query}`;
    const withOriginal = req as IncomingMessage & { originalUrl?: string };
    const original = withOriginal.originalUrl;
    // A host that mounted the gateway below a path of its own keeps that prefix.
    const mount = typeof original === 'string' && original.endsWith(raw) ? original.slice(0, original.length - raw.length) : '';
    req.url = rest + query;
    withOriginal.originalUrl = mount + target.path + query;
    return undefined;
  }

  // The recorder first (refusals are recorded too), then the API's chain; errors end in the
  // problem+json handler.
  const requestPath: readonly Middleware[] = [record as unknown as Middleware, dispatch];
  const refusalPath = (error: GatewayError): readonly Middleware[] => [record as unknown as Middleware, (_req, _res, next) => next(error)];
  function handler(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void {
    const raw = req.url ?? '/';
    const target = canonicalTarget(raw, targetRules);
    if (!claimsRaw(raw) && (isRefused(target) || under(target.path) === undefined)) {
      if (next !== undefined) {
        next();
        return;
      }
    }
    const outer = next ?? ((err?: unknown) => {
      if (err !== undefined) res.destroy();
    });
    const refusal = decide(req, raw, target);
    runChain(refusal === undefined ? requestPath : refusalPath(refusal), req, res, (err) => {
      if (err !== undefined && err !== null) errorHandler(err, req, res, outer);
      else if (!res.headersSent) errorHandler(new GatewayError('ERR_INTERNAL', { diagnostic: 'the request path ended without an answer' }), req, res, outer);
    });
  }

  const gateway: Gateway = {
    router: Router({ caseSensitive: true }),
    handler,
    adminRouter: Router(),
    store,
    get configState() {
      return { ...cache.state, apis: apisOf(latest) };
    },
    async ready() {
      await cache.get();
    },
    async resetAllCaches() {
      // Token results go in any case: the reset is also how an operator drops a revoked token's result.
      const tokenResultsCleared = clearTokenResults();
      let entry;
      try {
        entry = await cache.reload();
      } catch (err) {
        log('ResetAllCaches: %s', (err as Error)?.message ?? String(err));
        throw err;
      }
      const state = cache.state;
      const result: ResetResult = { loadedAt: entry.loadedAt, apis: apisOf(entry.compiled), tokenResultsCleared };
      if (state.expiresAt !== undefined) result.expiresAt = state.expiresAt;
      log('ResetAllCaches: %d API(s), %d token result(s) cleared', result.apis.length, tokenResultsCleared);
      return result;
    },
    async close() {
      await cache.close();
      for (const policy of latest?.tokenPolicies.values() ?? []) policy.close();
      latest = undefined;
      if (ownDispatcher) await dispatcher.close();
    },
  };

  const router = gateway.router;
  const serverHeader = (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('Server', server);
    next();
  };
  const adminApp = gateway.adminRouter;
  // Health for load balancers and orchestrators: no credentials, nothing but the status.
  const health = (ready: () => boolean) => (_req: Request, res: Response): void => {
    const ok = ready();
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', Server: server });
    res.end(ok ? '{"status":"ok"}' : '{"status":"unavailable"}');
  };
  adminApp.get(`${basePath === '/' ? '' : basePath}/health/live`, health(() => true));
  adminApp.get(`${basePath === '/' ? '' : basePath}/health/ready`, health(() => latest !== undefined));
  if (options.admin !== undefined) {
    adminApp.use(`${basePath === '/' ? '' : basePath}/admin`, serverHeader, adminRouter(gateway, options.admin));
    if (options.console !== false) {
      const { basicAuth, authenticate, realm } = options.admin;
      adminApp.use(
        `${basePath === '/' ? '' : basePath}/console`,
        serverHeader,
        monitoringConsole({
          store,
          ...(basicAuth === undefined ? {} : { basicAuth }),
          ...(authenticate === undefined ? {} : { authenticate }),
          ...(realm === undefined ? {} : { realm }),
        }),
      );
    }
  }
  // One router layer: the handler decides which requests are the gateway's (Express's own mount
  // matching ignores case) and passes the others on.
  router.use((req: Request, res: Response, next: NextFunction) => handler(req, res, next));
  return gateway;
}
