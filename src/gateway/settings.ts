/**
 * The options of `createGateway`, checked when the gateway is created (a bad one fails at start),
 * and what is settled from them for every API's steps.
 *
 * @module
 */
import { Agent, type Dispatcher } from 'undici';
import type { MessageSet } from '../errors.js';
import { isGatewayLogger, type GatewayLogger } from '../log.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { MemoryTransactionStore } from '../record/memory-store.js';
import type { RecordTransactionOptions } from '../record/record-transaction.js';
import type { TransactionStore } from '../record/types.js';
import type { TokenPolicyOptions } from '../token/policy-options.js';
import type { DpopReplayStore } from '../token/binding/replay.js';
import type { RequestTargetRules } from '../url/request-target.js';
import { defaultNodeId, NODE_ID, NODE_ID_RULE } from '../cluster/node-id.js';
import type { RedisClientLike } from '../cluster/redis.js';
import { clusterSecrets } from '../cluster/seal.js';
import { groupLabelKey } from '../traffic/group-key.js';
import type { AdminAuthOptions } from '../admin/gate.js';
import type { OperatorsOptions } from '../operators/access.js';
import { operatorWorkLimits, type OperatorWorkLimits, type OperatorWorkOptions } from '../configuration/work/pool.js';
import { FileConfigStore, isConfigStore, type ConfigStore } from '../configuration/store.js';
import { fileURLToPath } from 'node:url';
import type { CompileSettings } from './compile.js';
import type { GatewayMetricsOptions } from '../observability/metrics.js';
import { isYamlFile, type ConfigSource } from '../config/load.js';
import type { ResolvedTokenPolicy, TrafficControlConfig } from '../config/types.js';
import { checkedTrafficOption } from './traffic-settings.js';
import { clientAddressOf, compileTrust, type TrustProxy } from '../trust-proxy.js';
import { HOST_NAME } from '../admin/host.js';
import { ListenerTrust } from './listener-trust.js';

/** Options of {@link createGateway}. */
export interface CreateGatewayOptions {
  /**
   * The configuration: the path of a JSON file, or a YAML one (`.yaml`, `.yml`; relative paths in
   * it resolve from its folder), the
   * document as an object, an async loader, or a source that keeps the document with its policies
   * (`PostgresConfigSource`: also where the console saves). Read at first access (or {@link Gateway.ready}),
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
  /**
   * Longest request target (path and query, as sent) in bytes. Default `8192`, as common servers
   * allow: a longer one is answered 414 `ERR_URI_TOO_LONG` before it is read for routing or a token.
   * (Node refuses a request head longer than its `maxHeaderSize`, 16 KiB by default, before that.)
   */
  maxRequestTargetBytes?: number;
  /** Value of the `Server` header of every gateway response. Default `Gateway`. */
  server?: string;
  /** Message set of error details: `it` (Italian, the default), `en` or your own. */
  messages?: 'it' | 'en' | MessageSet;
  /**
   * Lifetime of the cached configuration and compiled policies, in seconds. Default `7200` (two hours).
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
  /**
   * Operators of the admin listener (needs `admin`): users with roles (`viewer`, `operator`,
   * `admin`) from a users file, sign-in sessions with a CSRF token, the audit log. The
   * `admin.basicAuth` user stays an `admin`. See docs/configuration-console.md.
   */
  operators?: OperatorsOptions;
  /**
   * The host name the admin listener answers under (`admin.example.org`): its admin routes, sign-in,
   * configuration console and monitoring console answer 421 to a request that names another host
   * (`Host`, or the `X-Forwarded-Host` of a proxy `trustProxy` trusts), so that the operators'
   * session cookie, which browsers scope by host and not by port, belongs to a name that serves no
   * API. Health and metrics answer under any name (probes and scrapers use an instance's own).
   * Default: none (any host).
   */
  adminHostName?: string;
  /**
   * Where the configuration console (`<basePath>/configuration/`, needs `admin`) reads and saves
   * the configuration and its versions. Default: a `FileConfigStore` on `config` when it is the path
   * of a JSON file (versions in `<file>.versions/`; none for a YAML file, which it would rewrite as
   * JSON); `false`: no configuration console.
   */
  configStore?: ConfigStore | false;
  /**
   * Bounds of the configuration console's heavy work (compiling policies for a check, a what-if
   * or a save, importing OpenAPI documents, comparing versions), which runs in worker threads and
   * never on the event loop that serves the APIs: workers, queue, time and memory budget per job,
   * largest policy and OpenAPI document. See docs/configuration-console.md.
   */
  operatorWork?: OperatorWorkOptions;
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
  /**
   * The cluster secret, required with `redis`: at least 32 characters (`openssl rand -base64 32`),
   * the same on every instance; during a rotation a list whose first secret signs and every one
   * verifies. What the instances share through Redis (token results, resets, the instance list,
   * operators' sign-outs) is signed with it; what does not verify is ignored and counted
   * (`gateway_cluster_messages_rejected_total`), so that another client of the same Redis cannot
   * make a token valid. See docs/deployment.md.
   */
  clusterSecret?: string | readonly string[];
  /** Prefix of the gateway's Redis keys and channels, one per group of instances. Default `eag:`. */
  redisKeyPrefix?: string;
  /**
   * Longest wait for a Redis reply, in milliseconds (with a `redis` URL or client). Past it, Redis
   * counts as down for a second and each instance goes on with its own cache. Default `100`: a
   * request never waits longer on Redis. Raise it for a Redis far away or a crowded host.
   */
  redisCommandTimeoutMs?: number;
  /**
   * This instance's id, on every record it writes and in the node list: up to 200 letters, digits
   * and `._:@-`. Default `<host name>-<pid>`.
   */
  nodeId?: string;
  /** Other options of the `recordTransaction` middleware (outgoing-header recording is set per API). */
  recording?: Omit<RecordTransactionOptions, 'store' | 'recordOutgoingHeaders' | 'idHeaders' | 'clientAddress' | 'observer'>;
  /**
   * Whose `X-Forwarded-*` and `Forwarded` headers the relay continues instead of replacing them
   * with the connection's: Express's `trust proxy` values. Default `false` (nobody's).
   */
  trustProxy?: TrustProxy;
  /**
   * The origin (and path prefix, if any) clients call the gateway at, such as
   * `https://api.example.org`: DPoP proofs' `htu` are checked against it and the request's path
   * (never against the request's `Host`). The configuration file's top-level `publicBaseUrl`, when
   * it has one, wins. A token policy with `dpop` on needs one of them. Default: none.
   */
  publicBaseUrl?: string;
  /**
   * Where the token policies with DPoP on remember proof `jti`s when the gateway has no Redis
   * (with `redis`, they are remembered there). Default: one store in this process's memory, for
   * all its token policies (watched as the dependency `proof_store`).
   * `serve --workers` gives one kept by the primary process.
   */
  dpopReplay?: DpopReplayStore;
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
  /**
   * Prometheus metrics (see docs/observability.md), kept in the gateway's own registry
   * (`gateway.metrics.registry`, never prom-client's global one) and served at
   * `GET <basePath>/metrics` on the admin router: behind the admin credentials by default (then
   * only with `admin`), or without any with `auth: false`, for a Prometheus that scrapes the admin
   * listener on an internal port. `false` collects none. Default: on, behind the admin credentials.
   * (Traces need no option: they go to the OpenTelemetry SDK the host registers, if any.)
   */
  metrics?: boolean | GatewayMetricsOptions;
  /**
   * A structured logger (pino-compatible: `info`/`warn`/`error`/`debug(fields, msg)` and `child`;
   * `pino()` is one) the gateway writes its events to, each with a stable `event` field: every
   * token policy's authorization server discovered, down (with the cause, such as
   * `discovery: HTTP 404` or `invalid_client`) and back; ResetAllCaches (who, which nodes); a
   * configuration refused; operators' sign-ins, refusals and actions; an unexpected error answered
   * 500, with its stack. Never a token, secret or cookie. Default: none (only the `debug`
   * namespaces, and unexpected errors on `console.error`). See docs/deployment.md.
   */
  logger?: GatewayLogger;
  /**
   * The access log: one record (`event: 'access'`) per exchange, with its transaction id, API,
   * operation, method, status, outcome, client id, duration and trace id; never a token, cookie or
   * query string. `true` writes it to {@link CreateGatewayOptions.logger} (at `info`), a logger
   * to that one. Default `false`.
   */
  accessLog?: boolean | GatewayLogger;
  /**
   * Traffic control (rate limits and quotas), the shape of the configuration file's top-level
   * `trafficControl`: the instance cap (`maxConcurrentRequests`), `store`, `onStoreUnavailable`,
   * `headers`, and policies for every API. Applied with the file's section: the policies of both
   * apply (names unique across them), a setting may be given in one of the two only. Default: none.
   * See docs/traffic-control.md.
   */
  trafficControl?: TrafficControlConfig;
}

/** Longest request target by default, in bytes (nginx's and Apache's request line limit is 8 KiB). */
const DEFAULT_MAX_REQUEST_TARGET_BYTES = 8192;

const BASE_PATH = /^\/([A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*)?\/?$/;

function normalizeBasePath(value: string): string {
  return value.length > 1 && value.endsWith('/') ? value.slice(0, -1) : value;
}

/** What {@link gatewaySettings} settles from the options. */
export interface GatewaySettings {
  readonly source: ConfigSource;
  readonly basePath: string;
  readonly configCacheTtlSeconds: number | undefined;
  readonly targetRules: RequestTargetRules;
  readonly maxRequestTargetBytes: number;
  readonly server: string;
  readonly messages: 'it' | 'en' | MessageSet;
  readonly store: TransactionStore;
  readonly nodeId: string;
  /** The cluster secrets, checked (the first signs); `undefined` without one. */
  readonly clusterSecrets: string[] | undefined;
  readonly redisKeyPrefix: string | undefined;
  readonly redisCommandTimeoutMs: number | undefined;
  readonly compileSettings: Omit<CompileSettings, 'tracing' | 'metrics'>;
  /** The metrics' settings, checked; `undefined` with `metrics: false`. */
  readonly metrics: Required<GatewayMetricsOptions> | undefined;
  /** The gateway created the backends' dispatcher (and closes it). */
  readonly ownDispatcher: boolean;
  /** Where the configuration console saves; `undefined` with `configStore: false` or a configuration it cannot write. */
  readonly configStore: ConfigStore | undefined;
  /** The only host name the admin listener's operator routes answer under; `undefined`: any. */
  readonly adminHostName: string | undefined;
  /** The bounds of the configuration console's work in worker threads. */
  readonly operatorWork: OperatorWorkLimits;
  /** Whose forwarded headers are believed: the option's, or the file's in force (`compileSettings.trustProxy` asks it). */
  readonly listenerTrust: ListenerTrust;
  /** The host's structured logger, when given. */
  readonly logger: GatewayLogger | undefined;
  /** Where the access log goes; `undefined`: none. */
  readonly accessLog: GatewayLogger | undefined;
}

/** `logger` and `accessLog`, checked. */
function loggers(check: OptionChecks, options: CreateGatewayOptions): Pick<GatewaySettings, 'logger' | 'accessLog'> {
  const logger = options.logger;
  if (logger !== undefined && !isGatewayLogger(logger))
    check.fail('logger', 'must be a structured logger with info, warn, error, debug and child (pino is one)');
  const access = options.accessLog;
  if (access !== undefined && typeof access !== 'boolean' && !isGatewayLogger(access))
    check.fail('accessLog', 'must be true, false or a structured logger with info, warn, error, debug and child');
  if (access === true && logger === undefined) check.fail('accessLog', 'true needs logger (or give the access log its own logger)');
  return { logger, accessLog: access === true ? logger : access === false ? undefined : access };
}

const GATEWAY_KEYS = optionKeys<CreateGatewayOptions>({
  config: true,
  baseDir: true,
  basePath: true,
  allowEmptySegments: true,
  server: true,
  messages: true,
  configCacheTtlSeconds: true,
  cacheTtlSeconds: true,
  admin: true,
  operators: true,
  configStore: true,
  console: true,
  store: true,
  redis: true,
  redisKeyPrefix: true,
  redisCommandTimeoutMs: true,
  nodeId: true,
  adminHostName: true,
  clusterSecret: true,
  maxRequestTargetBytes: true,
  operatorWork: true,
  recording: true,
  trustProxy: true,
  publicBaseUrl: true,
  dpopReplay: true,
  relay: true,
  tokenPolicyOptions: true,
  metrics: true,
  logger: true,
  accessLog: true,
  trafficControl: true,
});
const GATEWAY_RELAY_KEYS = optionKeys<NonNullable<CreateGatewayOptions['relay']>>({
  keepUnderscoreHeaders: true,
  maxDrainBytes: true,
  connectTimeoutMs: true,
  connections: true,
  keepAliveTimeoutMs: true,
  dispatcher: true,
});
const METRICS_KEYS = optionKeys<GatewayMetricsOptions>({ auth: true, clientLabel: true, processMetrics: true });

/** `publicBaseUrl`: an http(s) URL without query or fragment. */
function checkedPublicBaseUrl(check: OptionChecks, value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    // Said below.
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '')
    check.fail('publicBaseUrl', 'must be an http(s) URL without query or fragment, such as https://api.example.org');
  return value as string;
}

/** `dpopReplay`: a {@link DpopReplayStore}, when given. */
function checkedDpopReplay(check: OptionChecks, value: unknown): DpopReplayStore | undefined {
  if (value !== undefined && (typeof value !== 'object' || value === null || typeof (value as DpopReplayStore).remember !== 'function'))
    check.fail('dpopReplay', 'must be a DpopReplayStore (an object with remember(key, ttlMs))');
  return value as DpopReplayStore | undefined;
}

/** The `metrics` option with its defaults, or `undefined` when metrics are off (`false`). */
function checkedMetrics(check: OptionChecks, given: CreateGatewayOptions['metrics']): GatewaySettings['metrics'] {
  if (given === false) return undefined;
  const metrics = given === true ? {} : check.known(check.object<GatewayMetricsOptions>(given, 'metrics', {}), 'metrics', METRICS_KEYS);
  return {
    auth: check.boolean(metrics.auth, 'metrics.auth', true),
    clientLabel: check.boolean(metrics.clientLabel, 'metrics.clientLabel', false),
    processMetrics: check.boolean(metrics.processMetrics, 'metrics.processMetrics', true),
  };
}

/** Checks the options of {@link createGateway}, throwing `InvalidOptionError` that names the option. */
export function gatewaySettings(options: CreateGatewayOptions): GatewaySettings {
  const check = optionChecks('createGateway');
  check.object(options, '');
  check.known(options, '', GATEWAY_KEYS);
  const source = options.config;
  if (!(
    typeof source === 'string' ||
    source instanceof URL ||
    typeof source === 'function' ||
    (source !== null && typeof source === 'object')
  )) {
    check.fail('config', 'must be a file path, a configuration object or a loader function');
  }
  const basePath = normalizeBasePath(check.string(options.basePath, 'basePath', '/gateway', BASE_PATH, 'a path like /gateway'));
  if (options.configCacheTtlSeconds !== undefined && options.cacheTtlSeconds !== undefined)
    check.fail('cacheTtlSeconds', 'is the old name of configCacheTtlSeconds: give one of them');
  const configCacheTtlSeconds = options.configCacheTtlSeconds ?? options.cacheTtlSeconds;
  const targetRules: RequestTargetRules = { allowEmptySegments: check.boolean(options.allowEmptySegments, 'allowEmptySegments', false) };
  const maxRequestTargetBytes = check.positive(
    options.maxRequestTargetBytes,
    'maxRequestTargetBytes',
    DEFAULT_MAX_REQUEST_TARGET_BYTES,
    true,
  );
  const server = check.headerValue(options.server, 'server', 'Gateway');
  const messages = options.messages ?? 'it';
  const store = options.store ?? new MemoryTransactionStore();
  const nodeId = check.string(options.nodeId, 'nodeId', defaultNodeId(), NODE_ID, NODE_ID_RULE);
  if (options.redis !== undefined && typeof options.redis !== 'string' && (typeof options.redis !== 'object' || options.redis === null))
    check.fail('redis', 'must be a redis:// URL or a node-redis client');
  // Fail closed: without a secret, whatever any Redis client writes would be trusted.
  if (options.redis !== undefined && options.clusterSecret === undefined)
    check.fail(
      'clusterSecret',
      `is required with redis: a secret of at least 32 characters given to every instance (for example: openssl rand -base64 32)`,
    );
  const secrets = options.clusterSecret === undefined ? undefined : clusterSecrets(check, options.clusterSecret, 'clusterSecret');
  const redisKeyPrefix = options.redisKeyPrefix === undefined ? undefined : check.string(options.redisKeyPrefix, 'redisKeyPrefix');
  const redisCommandTimeoutMs =
    options.redisCommandTimeoutMs === undefined
      ? undefined
      : check.positive(options.redisCommandTimeoutMs, 'redisCommandTimeoutMs', 100, true);
  const tokenPolicyOptions = check.optionalFunction<NonNullable<CreateGatewayOptions['tokenPolicyOptions']>>(
    options.tokenPolicyOptions,
    'tokenPolicyOptions',
  );
  const relayOptions = check.known(
    check.object<NonNullable<CreateGatewayOptions['relay']>>(options.relay, 'relay', {}),
    'relay',
    GATEWAY_RELAY_KEYS,
  );
  const connectTimeoutMs = check.positive(relayOptions.connectTimeoutMs, 'relay.connectTimeoutMs', 10_000);
  const connections =
    relayOptions.connections === undefined ? undefined : check.positive(relayOptions.connections, 'relay.connections', 0, true);
  const keepAliveTimeoutMs = check.positive(relayOptions.keepAliveTimeoutMs, 'relay.keepAliveTimeoutMs', 4_000);
  // Compiled once here so that a bad value fails at start; each relay gets the compiled function.
  // The file's top-level trustProxy may replace it when a configuration is put in force.
  const listenerTrust = new ListenerTrust(compileTrust(options.trustProxy, check, 'trustProxy'), options.trustProxy !== undefined);
  const trustProxy = listenerTrust.trust;
  const metrics = checkedMetrics(check, options.metrics);
  const trafficControl = checkedTrafficOption(options.trafficControl, check, options.redis !== undefined);
  const publicBaseUrl = options.publicBaseUrl === undefined ? undefined : checkedPublicBaseUrl(check, options.publicBaseUrl);
  const dpopReplay = checkedDpopReplay(check, options.dpopReplay);
  const compileSettings: GatewaySettings['compileSettings'] = {
    publicBaseUrl,
    basePath,
    dpopReplay,
    trafficOption: trafficControl,
    trafficLabelKey: groupLabelKey(secrets),
    hasRedis: options.redis !== undefined,
    server,
    trustProxy,
    clientAddress: clientAddressOf(trustProxy),
    keepUnderscoreHeaders:
      relayOptions.keepUnderscoreHeaders === undefined
        ? undefined
        : check.boolean(relayOptions.keepUnderscoreHeaders, 'relay.keepUnderscoreHeaders', false),
    maxDrainBytes:
      relayOptions.maxDrainBytes === undefined ? undefined : check.positive(relayOptions.maxDrainBytes, 'relay.maxDrainBytes', 0, true),
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
  const adminHostName =
    options.adminHostName === undefined
      ? undefined
      : check.string(options.adminHostName, 'adminHostName', undefined, HOST_NAME, 'a host name like admin.example.org');
  const given = options.configStore;
  if (given !== undefined && given !== false && !isConfigStore(given))
    check.fail('configStore', 'must be a ConfigStore (current, list, get, save) or false');
  // A store given as the configuration (PostgresConfigSource) is also where the console saves.
  const configStore: ConfigStore | undefined =
    given === false
      ? undefined
      : (given ??
        (isConfigStore(source)
          ? source
          : (typeof source === 'string' || source instanceof URL) && isYamlFile(source)
            ? // The console writes JSON: it would rewrite a YAML file (and drop its comments).
              undefined
            : typeof source === 'string'
              ? new FileConfigStore(source)
              : source instanceof URL
                ? new FileConfigStore(fileURLToPath(source))
                : undefined));
  const operatorWork = operatorWorkLimits(options.operatorWork, check);
  return {
    ...loggers(check, options),
    source,
    basePath,
    configCacheTtlSeconds,
    targetRules,
    maxRequestTargetBytes,
    server,
    messages,
    store,
    nodeId,
    clusterSecrets: secrets,
    redisKeyPrefix,
    redisCommandTimeoutMs,
    compileSettings,
    ownDispatcher,
    metrics,
    configStore,
    adminHostName,
    operatorWork,
    listenerTrust,
  };
}
