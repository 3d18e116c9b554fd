/**
 * The gateway's Prometheus metrics: one prom-client `Registry` per gateway (never the global one,
 * so that two gateways in one process do not collide), the metric families of
 * docs/observability.md, and the hooks the request path calls. Label values come from the
 * configuration (API, operation, token policy) or from fixed sets (outcome, status, source, result,
 * decision): nothing a client sends becomes a label, and no subject or client unless `clientLabel`
 * asks for the client.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { logger } from '../log.js';
import type { AuditStats } from '../operators/access.js';
import type { RecordTransactionStats } from '../record/record-transaction.js';
import { apiKey, type TransactionRecord, type TransactionStore } from '../record/types.js';
import type { TokenPolicy, TokenPolicyObserver } from '../token/policy.js';
import type { TrafficPolicyResult } from '../traffic/decision.js';
import { CollectedFamily, CounterFamily, HistogramFamily, type CounterSeries, type HistogramSeries } from './families.js';
import { tracedCall, type GatewayTracing } from './tracing.js';

const log = logger('gateway');

/** The `metrics` option of `createGateway`. */
export interface GatewayMetricsOptions {
  /**
   * `GET <basePath>/metrics` on the admin router behind the admin credentials (`true`, the
   * default: it needs `admin`), or without credentials (`false`): for a Prometheus that scrapes the
   * admin listener on an internal port only.
   */
  auth?: boolean;
  /**
   * Add a `client` label, the token's client id (`azp`, else `client_id`), to
   * `gateway_requests_total`. Default `false`: one series per client can be many series. At most
   * 1000 distinct clients are labelled; the others are counted under `client="other"`.
   */
  clientLabel?: boolean;
  /** Node's default process metrics (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`...), unprefixed. Default `true`. */
  processMetrics?: boolean;
}

/** The gateway's metrics: `gateway.metrics`. */
export interface GatewayMetrics {
  /**
   * The gateway's own prom-client registry: mount it in your app (`registry.metrics()` is the
   * Prometheus text, `registry.contentType` its media type) or merge it with yours
   * (`Registry.merge([gateway.metrics.registry, yours])`).
   */
  readonly registry: Registry;
  /** The Prometheus text of every metric of the gateway. */
  text(): Promise<string>;
}

/**
 * `GET <basePath>/metrics`: the Prometheus text of `metrics` (`Cache-Control: no-store`). A failure
 * to collect answers 500 and is logged, nothing else said.
 */
export function metricsHandler(metrics: GatewayMetrics): (req: IncomingMessage, res: ServerResponse) => void {
  return (_req, res) => {
    metrics.text().then(
      (text) => {
        res.writeHead(200, {
          'Content-Type': metrics.registry.contentType,
          'Cache-Control': 'no-store',
          'Content-Length': Buffer.byteLength(text),
        });
        res.end(text);
      },
      (error: unknown) => {
        log('metrics collection failed: %s', error instanceof Error ? error.message : String(error));
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
        res.end('metrics unavailable\n');
      },
    );
  };
}

/** Request duration buckets, seconds: from sub-millisecond cache hits to the relay's timeouts. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Authorization server call buckets, seconds (its timeout defaults to 5 s). */
const SERVER_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'error'] as const;
const MAX_CLIENTS = 1000;

/** The status label: the answer's status, or empty when the client went away before one. */
const statusLabels: string[] = [];
function statusLabel(status: number | null): string {
  if (status === null) return '';
  return (statusLabels[status] ??= String(status));
}

/** What the scrape reads from the gateway: its token policies in force, its store and recorder. */
export interface MetricsSources {
  tokenPolicies(): Iterable<TokenPolicy>;
  readonly store: TransactionStore;
  recorderStats(): Readonly<RecordTransactionStats>;
  /** The operators' audit trail, when the gateway has operators. */
  auditStats?(): AuditStats | undefined;
  /** With Redis, once joined: what was read there and did not verify with the cluster secret, by kind. */
  clusterRejections(): Readonly<Record<string, number>> | undefined;
  /** Requests of the API listener in flight on this instance (what `maxConcurrentRequests` caps). */
  concurrentRequests(): number;
  /** Each dependency's state: 1 up, 0 down. */
  dependencies?(): Array<{ labels: { dependency: string }; value: number }>;
}

/** The PostgreSQL store's write-path counters (any store with this shape queues its records). */
interface QueueingStore {
  readonly counters: { readonly saved: number; readonly queued: number; readonly dropped: Readonly<Record<string, number>> };
}

function queueing(store: TransactionStore): QueueingStore | undefined {
  const counters = (store as Partial<QueueingStore>).counters;
  return counters !== null && typeof counters === 'object' && typeof counters.queued === 'number' && typeof counters.saved === 'number'
    ? (store as unknown as QueueingStore)
    : undefined;
}

const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Makes `metrics.text()` (what `GET <basePath>/metrics` answers) come from `source`: the server
 * of several worker processes answers with the sum over all of them.  @internal
 */
export function exposeMetricsText(metrics: GatewayMetrics, source: () => Promise<string>): void {
  if (metrics instanceof GatewayMetricsRecorder) metrics.exposeText(source);
}

/** The backend's answers of one API, by status class. */
export interface BackendObserver {
  /** One exchange with the backend ended: its status (`undefined` when it failed) and how long it took, seconds. */
  done(status: number | undefined, seconds: number): void;
}

/** The metrics of one gateway, and the hooks of its request path. */
export class GatewayMetricsRecorder implements GatewayMetrics {
  readonly registry = new Registry();
  readonly auth: boolean;
  private readonly clientLabel: boolean;
  private readonly clients = new Set<string>();
  private readonly requests: CounterFamily;
  private readonly requestDuration: HistogramFamily;
  private readonly validations: CounterFamily;
  private readonly bindingRefusals: CounterFamily;
  private readonly serverDuration: HistogramFamily;
  private readonly decisions: CounterFamily;
  private readonly backendDuration: HistogramFamily;
  private readonly trafficDecisions: CounterFamily;
  private readonly tokenObservers = new Map<string, TokenPolicyObserver>();
  /** The traffic decisions' series by API, then policy, then result: no key string built per request. */
  private readonly trafficSeries = new Map<string, Map<string, Partial<Record<TrafficPolicyResult, CounterSeries>>>>();
  private readonly tracer: GatewayTracing;
  /** Where the text comes from: this registry, or the sum over a cluster's workers (see {@link exposeMetricsText}). */
  private source: () => Promise<string> = () => this.registry.metrics();

  /** `options` checked by `createGateway` (gateway/settings.ts). */
  constructor(options: Required<GatewayMetricsOptions>, sources: MetricsSources, tracing: GatewayTracing) {
    this.auth = options.auth;
    this.clientLabel = options.clientLabel;
    const processMetrics = options.processMetrics;
    const registry = this.registry;
    this.requests = new CounterFamily(
      'gateway_requests_total',
      'Exchanges answered, by registered API, operation, outcome (as in the records) and HTTP status.',
      this.clientLabel ? ['api', 'operation', 'outcome', 'status', 'client'] : ['api', 'operation', 'outcome', 'status'],
      registry,
    );
    this.requestDuration = new HistogramFamily(
      'gateway_request_duration_seconds',
      'Time from the request to the end of the answer, by API and outcome.',
      ['api', 'outcome'],
      registry,
      REQUEST_BUCKETS,
    );
    this.validations = new CounterFamily(
      'gateway_token_validations_total',
      'Token validations by token policy, where the answer came from (local_cache, shared_cache, negative_cache, introspection, jwt, userinfo) and result (valid, invalid, unavailable).',
      ['policy', 'source', 'result'],
      registry,
    );
    this.bindingRefusals = new CounterFamily(
      'gateway_token_binding_refusals_total',
      'Sender-constrained tokens refused by token policy, kind of binding (x5t#S256: certificate-bound, RFC 8705; jkt: DPoP-bound, RFC 9449) and reason (no_certificate, unverified_certificate, bad_certificate_header, mismatch, invalid_cnf for x5t#S256; missing_proof, replayed, bearer_for_bound_token and the other DPoP refusals for jkt).',
      ['policy', 'kind', 'reason'],
      registry,
    );
    this.serverDuration = new HistogramFamily(
      'gateway_authorization_server_duration_seconds',
      'Calls to the authorization server by token policy and endpoint (introspection, userinfo, jwks, discovery), failed ones included.',
      ['policy', 'endpoint'],
      registry,
      SERVER_BUCKETS,
    );
    this.decisions = new CounterFamily(
      'gateway_authorization_decisions_total',
      'XACML decisions by API and decision (Permit, Deny, NotApplicable, Indeterminate).',
      ['api', 'decision'],
      registry,
    );
    this.backendDuration = new HistogramFamily(
      'gateway_backend_duration_seconds',
      'Exchanges with backends, from sending the request to the end of the answer, by API and status class (error: no answer).',
      ['api', 'status_class'],
      registry,
      REQUEST_BUCKETS,
    );
    this.trafficDecisions = new CounterFamily(
      'gateway_traffic_decisions_total',
      'Traffic control decisions, one per policy covering a request, by API, policy and result (allowed, limited, warning, store_unavailable).',
      ['api', 'policy', 'result'],
      registry,
    );
    new CollectedFamily(
      'gateway_concurrent_requests',
      'Requests of the API listener in flight on this instance (what maxConcurrentRequests caps).',
      'gauge',
      () => [{ labels: {}, value: sources.concurrentRequests() }],
      registry,
    );
    new CollectedFamily(
      'gateway_dependency_up',
      'Whether each dependency of the gateway can be used now (1) or not (0): postgresql, redis, record_journal, authorization_server:<policy>. A dependency appears once used.',
      'gauge',
      () => sources.dependencies?.() ?? [],
      registry,
    );
    new CollectedFamily(
      'gateway_token_cache_entries',
      'Token results cached by token policy and kind (valid, negative).',
      'gauge',
      () => this.cacheEntries(sources),
      registry,
    );
    new CollectedFamily(
      'gateway_token_cache_bytes',
      'Estimated heap bytes of the valid token results cached, what the requests derived from them included, by token policy (bounded by cacheMaxBytes).',
      'gauge',
      () => this.cacheBytes(sources),
      registry,
    );
    const store = queueing(sources.store);
    new CollectedFamily(
      'gateway_records_saved_total',
      'Transaction records saved (committed to the database, for a store that queues).',
      'counter',
      () => [{ labels: {}, value: store?.counters.saved ?? sources.recorderStats().recorded }],
      registry,
    );
    new CollectedFamily(
      'gateway_records_dropped_total',
      'Transaction records lost, by reason (save_failed: building or saving it failed; queue_full, spill_full, rejected, closed: the store dropped it).',
      'counter',
      () => {
        const out = [{ labels: { reason: 'save_failed' }, value: sources.recorderStats().failed }];
        for (const [reason, value] of Object.entries(store?.counters.dropped ?? {})) out.push({ labels: { reason: snake(reason) }, value });
        return out;
      },
      registry,
    );
    if (store !== undefined) {
      new CollectedFamily(
        'gateway_record_queue_length',
        'Transaction records waiting in memory for the database.',
        'gauge',
        () => [{ labels: {}, value: store.counters.queued }],
        registry,
      );
    }
    if (sources.auditStats !== undefined) {
      const audit = (): AuditStats | undefined => sources.auditStats?.();
      new CollectedFamily(
        'gateway_audit_events_aggregated_total',
        'Refusals of requests without valid credentials counted into a summary audit entry (one per address and window) instead of written one by one.',
        'counter',
        () => [{ labels: {}, value: audit()?.aggregated ?? 0 }],
        registry,
      );
      new CollectedFamily(
        'gateway_audit_events_dropped_total',
        'Audit entries the audit file did not receive, by reason (queue_full: the disk slower than the entries; write_failed: the append failed).',
        'counter',
        () =>
          Object.entries(audit()?.dropped ?? { queue_full: 0, write_failed: 0 }).map(([reason, value]) => ({ labels: { reason }, value })),
        registry,
      );
    }
    new CollectedFamily(
      'gateway_cluster_messages_rejected_total',
      'Entries and messages read from Redis that did not verify with the cluster secret, ignored, by kind (token_result, reset, reset_report, sign_out, registry): written by something other than an instance given the same secret.',
      'counter',
      () => Object.entries(sources.clusterRejections() ?? {}).map(([kind, value]) => ({ labels: { kind }, value })),
      registry,
    );
    if (processMetrics) collectDefaultMetrics({ register: registry });
    this.tracer = tracing;
  }

  text(): Promise<string> {
    return this.source();
  }

  /** Serves another text (the sum over a cluster's workers).  @internal */
  exposeText(source: () => Promise<string>): void {
    this.source = source;
  }

  private cacheEntries(sources: MetricsSources): Array<{ labels: Record<string, string>; value: number }> {
    const byName = new Map<string, { valid: number; negative: number }>();
    for (const policy of sources.tokenPolicies()) {
      const sizes = policy.cacheSizes;
      const entry = byName.get(policy.name) ?? { valid: 0, negative: 0 };
      entry.valid += sizes.valid;
      entry.negative += sizes.negative;
      byName.set(policy.name, entry);
    }
    const out: Array<{ labels: Record<string, string>; value: number }> = [];
    for (const [policy, { valid, negative }] of byName) {
      out.push({ labels: { policy, kind: 'valid' }, value: valid }, { labels: { policy, kind: 'negative' }, value: negative });
    }
    return out;
  }

  private cacheBytes(sources: MetricsSources): Array<{ labels: Record<string, string>; value: number }> {
    const byName = new Map<string, number>();
    for (const policy of sources.tokenPolicies()) byName.set(policy.name, (byName.get(policy.name) ?? 0) + policy.cacheSizes.bytes);
    return [...byName].map(([policy, value]) => ({ labels: { policy }, value }));
  }

  /** The exchange is over and recorded: counts it. `seconds` from the request's arrival. */
  exchangeEnded(record: TransactionRecord, seconds: number): void {
    const api = record.api === undefined ? '' : apiKey(record.api);
    const operation = record.operation ?? '';
    const outcome = record.outcome.code;
    const status = statusLabel(record.status);
    let key = `${api}\u0000${operation}\u0000${outcome}\u0000${status}`;
    let client: string | undefined;
    if (this.clientLabel) {
      client = this.clientOf(record);
      key += `\u0000${client}`;
    }
    const requests =
      this.requests.find(key) ??
      this.requests.add(key, client === undefined ? [api, operation, outcome, status] : [api, operation, outcome, status, client]);
    requests.value++;
    const durationKey = `${api}\u0000${outcome}`;
    (this.requestDuration.find(durationKey) ?? this.requestDuration.add(durationKey, [api, outcome])).observe(seconds);
    const decision = record.authorization?.decision;
    if (decision !== undefined) {
      const decisionKey = `${api}\u0000${decision}`;
      (this.decisions.find(decisionKey) ?? this.decisions.add(decisionKey, [api, decision])).value++;
    }
  }

  private clientOf(record: TransactionRecord): string {
    const id = record.sender.clientId;
    if (id === undefined) return '';
    if (this.clients.has(id)) return id;
    if (this.clients.size >= MAX_CLIENTS) return 'other';
    this.clients.add(id);
    return id;
  }

  /** The observer of the token policies named `policy`: their validations and authorization server calls. */
  tokenObserver(policy: string): TokenPolicyObserver {
    let observer = this.tokenObservers.get(policy);
    if (observer === undefined) {
      // Bound at first use, once per policy: then the request path adds to a series it holds.
      const validations = this.validations;
      const bindingRefusals = this.bindingRefusals;
      const bound = new Map<string, CounterSeries>();
      const calls = new Map<string, HistogramSeries>();
      const serverDuration = this.serverDuration;
      const tracer = this.tracer.tracer;
      observer = {
        validated(source, result) {
          const key = `${source} ${result}`;
          let series = bound.get(key);
          if (series === undefined) bound.set(key, (series = validations.child(policy, source, result)));
          series.value++;
        },
        bindingRefused(kind, reason) {
          bindingRefusals.child(policy, kind, reason).value++;
        },
        async call(endpoint, run) {
          let series = calls.get(endpoint);
          if (series === undefined) calls.set(endpoint, (series = serverDuration.child(policy, endpoint)));
          const started = performance.now();
          try {
            return await tracedCall(tracer, policy, endpoint, run);
          } finally {
            series.observe((performance.now() - started) / 1000);
          }
        },
      };
      this.tokenObservers.set(policy, observer);
    }
    return observer;
  }

  /** Traffic control decided on one policy for a request of `api` (names from the configuration, result from a fixed set). */
  trafficDecided(api: string, policy: string, result: TrafficPolicyResult): void {
    let byPolicy = this.trafficSeries.get(api);
    if (byPolicy === undefined) this.trafficSeries.set(api, (byPolicy = new Map()));
    let byResult = byPolicy.get(policy);
    if (byResult === undefined) byPolicy.set(policy, (byResult = {}));
    (byResult[result] ??= this.trafficDecisions.child(api, policy, result)).value++;
  }

  /** The observer of one API's backend exchanges. */
  backendObserver(api: string): BackendObserver {
    const family = this.backendDuration;
    const series: Array<HistogramSeries | undefined> = new Array(STATUS_CLASSES.length).fill(undefined);
    return {
      done(status, seconds) {
        const index = status === undefined || status < 100 || status > 599 ? 5 : Math.floor(status / 100) - 1;
        (series[index] ??= family.child(api, STATUS_CLASSES[index]!)).observe(seconds);
      },
    };
  }
}
