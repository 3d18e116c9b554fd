/**
 * What the gateway writes to a host's structured logger (`createGateway({ logger })`): the health
 * of each token policy's authorization server, as its calls succeed and fail, and the access log.
 * Without a logger none of this runs (only the `debug` namespaces trace).
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from '../config/errors.js';
import { GatewayError } from '../errors.js';
import { errorFields, type GatewayLogger } from '../log.js';
import type { DependencyStates } from '../observability/dependencies.js';
import { apiKey, type TransactionRecord } from '../record/types.js';
import { classifyClientError } from '../token/classify.js';
import type { AuthorizationServerEndpoint, TokenPolicy, TokenPolicyObserver } from '../token/policy.js';

/** The health of one token policy's authorization server, as its last call left it. */
export interface AuthorizationServerStatus {
  /** The token policy. */
  readonly policy: string;
  /** `unknown` before its first call. */
  readonly state: 'unknown' | 'up' | 'down';
  /** Why it is down (`discovery: HTTP 404`, `introspection: ... (HTTP 401, invalid_client)`). */
  readonly cause?: string;
  /** Epoch milliseconds of the last change. */
  readonly since: number;
}

interface Health {
  state: 'unknown' | 'up' | 'down';
  cause: string | undefined;
  /** The endpoint whose failure put it down. */
  endpoint?: AuthorizationServerEndpoint | undefined;
  since: number;
}

/** Why a call failed, when it is the server's (or the gateway's credentials') fault rather than the token's. */
function serverFault(err: unknown, policy: string, endpoint: AuthorizationServerEndpoint): string | undefined {
  const error = err instanceof GatewayError ? err : classifyClientError(err, policy, endpoint);
  if (error.code === 'ERR_TOKEN_INVALID' || error.code === 'ERR_TOKEN_EXPIRED') return undefined;
  return error.diagnostic ?? error.code;
}

/** What the gateway does while a token policy's authorization server cannot be used. */
const WITHOUT_SERVER = 'tokens not cached get 503 (a cached result within staleIfErrorSeconds still serves)';

/**
 * Watches the calls of each token policy to its authorization server and logs each change of its
 * health: discovered, down (with the cause), back. A policy kept across reloads keeps its state,
 * and one a reload replaces passes it on to the new policy of its name.
 */
export class AuthorizationServerWatch {
  readonly #log: GatewayLogger;
  readonly #health = new Map<TokenPolicy, Health>();
  readonly #onUp: ((policy: TokenPolicy) => void) | undefined;
  readonly #states: DependencyStates | undefined;

  /**
   * `onUp`: told when a policy's server answers after a failure or for the first time (its check
   * runs again). `states`: where each server's state is kept too (its records are this watch's own).
   */
  constructor(log: GatewayLogger, onUp?: (policy: TokenPolicy) => void, states?: DependencyStates) {
    this.#log = log;
    this.#onUp = onUp;
    this.#states = states;
  }

  /** The health of each policy watched (what a readiness check can read). */
  status(): AuthorizationServerStatus[] {
    return [...this.#health].map(([policy, { state, cause, since }]) => ({
      policy: policy.name,
      state,
      ...(cause === undefined ? {} : { cause }),
      since,
    }));
  }

  /** Forgets the policies no longer in force. */
  retain(live: Iterable<TokenPolicy>): void {
    const keep = new Set(live);
    const names = new Set([...keep].map((policy) => policy.name));
    for (const policy of this.#health.keys()) {
      if (keep.has(policy)) continue;
      this.#health.delete(policy);
      if (!names.has(policy.name)) this.#states?.forget(`authorization_server:${policy.name}`);
    }
  }

  /** `inner` (metrics, traces), with each call's end watched. */
  observer(policy: TokenPolicy, inner: TokenPolicyObserver): TokenPolicyObserver {
    let health = this.#health.get(policy);
    if (health === undefined) this.#health.set(policy, (health = this.#successorHealth(policy.name)));
    const watched = health;
    return {
      validated: (source, result) => inner.validated(source, result),
      bindingRefused: (kind, reason) => inner.bindingRefused?.(kind, reason),
      call: async (endpoint, run) => {
        let value;
        try {
          value = await inner.call(endpoint, run);
        } catch (err) {
          const cause = serverFault(err, policy.name, endpoint);
          if (cause === undefined) this.#up(policy, watched, endpoint);
          else this.#down(policy, watched, endpoint, cause);
          throw err;
        }
        // The key set's fetch resolves with any answer: jose reads the status.
        if (endpoint === 'jwks' && value instanceof Response && !value.ok)
          this.#down(policy, watched, endpoint, `jwks: HTTP ${value.status}`);
        else if (endpoint === 'discovery') this.#discovered(policy, watched, value as { issuer?: unknown });
        else this.#up(policy, watched, endpoint);
        return value;
      },
    };
  }

  /**
   * The health a new policy starts with: that of a policy of the same name it replaces (a reload
   * compiles a new one when, say, its client secret changed) while that one's server is down, so
   * that its first call answered says the server is back (`authorization_server_up`), once.
   */
  #successorHealth(name: string): Health {
    for (const [policy, health] of this.#health) if (policy.name === name && health.state === 'down') return { ...health };
    return { state: 'unknown', cause: undefined, since: Date.now() };
  }

  #discovered(policy: TokenPolicy, health: Health, metadata: { issuer?: unknown }): void {
    const issuer = typeof metadata?.issuer === 'string' ? metadata.issuer : undefined;
    this.#log.info(
      { event: 'authorization_server_discovered', policy: policy.name, ...(issuer === undefined ? {} : { issuer }) },
      `token policy ${policy.name}: metadata of ${issuer ?? 'the authorization server'} discovered`,
    );
    this.#up(policy, health, 'discovery');
  }

  #up(policy: TokenPolicy, health: Health, endpoint: AuthorizationServerEndpoint): void {
    if (health.state === 'up') return;
    // Metadata read again proves nothing of the endpoint that failed (a refused client secret).
    if (health.state === 'down' && endpoint === 'discovery' && health.endpoint !== 'discovery') return;
    this.#states?.up(`authorization_server:${policy.name}`, { quiet: true });
    const downMs = Date.now() - health.since;
    const back = health.state === 'down';
    Object.assign(health, { state: 'up', cause: undefined, endpoint: undefined, since: Date.now() });
    if (back)
      this.#log.info(
        { event: 'authorization_server_up', policy: policy.name, endpoint, downMs },
        `token policy ${policy.name}: authorization server back (${endpoint} answered)`,
      );
    this.#onUp?.(policy);
  }

  #down(policy: TokenPolicy, health: Health, endpoint: AuthorizationServerEndpoint, cause: string): void {
    if (health.state === 'down' && health.cause === cause) return;
    Object.assign(health, { state: 'down', cause, endpoint, since: Date.now() });
    this.#states?.down(`authorization_server:${policy.name}`, cause, WITHOUT_SERVER, { quiet: true });
    this.#log.error(
      { event: 'authorization_server_down', policy: policy.name, endpoint, cause },
      `token policy ${policy.name}: authorization server unavailable: ${cause}`,
    );
  }
}

/** Logs a configuration that could not be loaded: its issues (path and message), or the failure. */
export function logConfigRefused(events: GatewayLogger, err: unknown, when: string): void {
  if (err instanceof ConfigError) {
    events.error(
      { event: 'config_error', when, source: err.source, issues: err.issues },
      `configuration refused at ${when}${err.source === undefined ? '' : ` (${err.source})`}:\n${err.issues.map((issue) => `  ${issue.path === '' ? '(document)' : issue.path}: ${issue.message}`).join('\n')}`,
    );
  } else {
    events.error(
      { event: 'config_error', when, err: errorFields(err) },
      `configuration not loaded at ${when}: ${(err as Error)?.message ?? String(err)}`,
    );
  }
}

/**
 * The path of a record's URL: the canonical path the gateway routed on (docs/gateway.md), without
 * the query, which may carry a token (`access_token`) or other secrets.
 */
function pathOf(record: TransactionRecord): string {
  const query = record.url.indexOf('?');
  return query === -1 ? record.url : record.url.slice(0, query);
}

/** One access log record: what the exchange was and how it ended, never a token, cookie or query string. */
export function accessRecord(record: TransactionRecord): Record<string, unknown> {
  return {
    event: 'access',
    transactionId: record.id,
    ...(record.api === undefined ? {} : { api: apiKey(record.api) }),
    ...(record.operation === undefined ? {} : { operation: record.operation }),
    method: record.method,
    path: pathOf(record),
    // As trustProxy resolved it: the client behind the proxies the gateway believes.
    ...(record.clientAddress === undefined ? {} : { clientAddress: record.clientAddress }),
    status: record.status,
    outcome: record.outcome.code,
    ...(record.errorCode === undefined ? {} : { errorCode: record.errorCode }),
    ...(record.sender.clientId === undefined ? {} : { clientId: record.sender.clientId }),
    durationMs: record.durationMs,
    ...(record.traceId === undefined ? {} : { traceId: record.traceId }),
    ...(record.aborted ? { aborted: true } : {}),
  };
}

/** Writes each exchange's access record to `log`. */
export function accessLog(log: GatewayLogger): (record: TransactionRecord) => void {
  return (record) => log.info(accessRecord(record), `${record.method} ${pathOf(record)} ${record.status ?? '-'}`);
}

/** Logs what a configuration just loaded holds that is likely wrong (warnings, with their path). */
export function logConfigWarnings(events: GatewayLogger, warnings: readonly ConfigIssue[]): void {
  for (const { path, message } of warnings)
    events.warn({ event: 'config_warning', path, message }, `configuration warning: ${path}: ${message}`);
}
