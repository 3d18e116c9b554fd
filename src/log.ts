import createDebug from 'debug';

/** The areas that log, each under the `express-access-gateway:<area>` debug namespace. */
export type LogArea =
  | 'token'
  | 'xacml'
  | 'authorize'
  | 'forward'
  | 'record'
  | 'record:postgres'
  | 'console'
  | 'gateway'
  | 'relay'
  | 'config'
  | 'cluster'
  | 'operators'
  | 'configuration';

/**
 * A logger: a `debug` function, typed here so that the published declarations need no `@types/debug`.
 * Never pass a token value to it.
 */
export interface Logger {
  (formatter: string, ...args: unknown[]): void;
  /** Whether the namespace is enabled (check it before building costly arguments). */
  readonly enabled: boolean;
}

/** A `debug` logger for one area. Enable with `DEBUG=express-access-gateway:*`. */
export function logger(area: LogArea): Logger {
  return createDebug(`express-access-gateway:${area}`);
}

/** A structured record's fields: JSON values, with `event` naming what happened. */
export type LogFields = Record<string, unknown>;

/**
 * A structured logger, pino-compatible (`pino()` is one): each method takes the record's fields
 * first, then its message. `child` gives a logger whose records carry `bindings`.
 *
 * Every record the gateway writes has a stable `event` (see {@link LogEvent}) and a `msg`, and
 * never a token, secret, cookie or query string value.
 */
export interface GatewayLogger {
  /** A failure that needs an operator: a configuration refused, an unexpected error. */
  error(fields: LogFields, msg?: string): void;
  /** Something degraded: an authorization server down, an operator refused. */
  warn(fields: LogFields, msg?: string): void;
  /** The life of the gateway: start, ready, resets, sign-ins, the access log. */
  info(fields: LogFields, msg?: string): void;
  /** Detail for diagnosis. */
  debug(fields: LogFields, msg?: string): void;
  /** A logger whose records also carry `bindings`. */
  child(bindings: LogFields): GatewayLogger;
}

/**
 * The `event` of the gateway's structured records. Stable: dashboards and alerts key on them.
 *
 * - `start`, `listening`, `ready`, `not_ready`, `shutdown`, `stopped`: the life of a `serve` process
 *   (`listening` once its ports are open, `ready` once its readiness check passes, later if need be);
 * - `config_error`: a configuration refused (at start or at a reload), with its `issues`;
 * - `config_warning`: a configuration loaded holds something likely wrong (`path`, `message`);
 * - `not_ready` with a `policy`, `token_policy_ready`: a token policy failed its check (`cause`), passed it again;
 * - `reload`, `reset`: a SIGHUP, a ResetAllCaches (who, which nodes);
 * - `authorization_server_discovered`, `authorization_server_down`, `authorization_server_up`:
 *   each token policy's authorization server, at each change of its health (with the `cause`);
 * - `dependency_down`, `dependency_up`: PostgreSQL, Redis, the record journal, at each change of
 *   their availability (`dependency`, and `cause` and `action` when down, `downMs` when back);
 * - `operator_sign_in`, `operator_refused`, `operator_action`: the operators of the admin listener;
 * - `worker_exit`, `worker_started`: `--workers`' processes;
 * - `unexpected_error`: an exception answered 500;
 * - `access`: one exchange (the access log).
 */
export type LogEvent =
  | 'start'
  | 'listening'
  | 'ready'
  | 'not_ready'
  | 'shutdown'
  | 'stopped'
  | 'config_error'
  | 'config_warning'
  | 'token_policy_ready'
  | 'reload'
  | 'reset'
  | 'authorization_server_discovered'
  | 'authorization_server_down'
  | 'authorization_server_up'
  | 'dependency_down'
  | 'dependency_up'
  | 'operator_sign_in'
  | 'operator_refused'
  | 'operator_action'
  | 'worker_exit'
  | 'worker_started'
  | 'unexpected_error'
  | 'tracing'
  | 'access';

const LOGGER_METHODS = ['error', 'warn', 'info', 'debug', 'child'] as const;

/** Whether `value` has the methods of a {@link GatewayLogger}. */
export function isGatewayLogger(value: unknown): value is GatewayLogger {
  return (
    value !== null &&
    typeof value === 'object' &&
    LOGGER_METHODS.every((name) => typeof (value as Record<string, unknown>)[name] === 'function')
  );
}

/**
 * An error as a record's field: its name, message and stack, with `secret` (the request's token,
 * should an error quote it) replaced by `[redacted]`.
 */
export function errorFields(err: unknown, secret?: string): LogFields {
  const hide = (text: string): string => (secret === undefined || secret === '' ? text : text.split(secret).join('[redacted]'));
  if (!(err instanceof Error)) return { type: typeof err, message: hide(String(err)) };
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    message: hide(err.message),
    ...(typeof code === 'string' ? { code } : {}),
    ...(err.stack === undefined ? {} : { stack: hide(err.stack) }),
  };
}
