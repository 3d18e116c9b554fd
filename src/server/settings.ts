/**
 * The settings of `express-access-gateway serve`: each from its flag, else from its environment
 * variable, else the default (a flag wins over the environment). `--help` prints {@link USAGE}.
 *
 * @module
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import proxyAddr from 'proxy-addr';
import { HOST_NAME } from '../admin/host.js';
import { commandLineProblem, nearestKey } from '../options.js';

export const USAGE = `Usage: express-access-gateway serve --config <file> [options]
       express-access-gateway serve --config-source postgres [--config <file>] [options]
       express-access-gateway --version

Serves the gateway of a configuration file (JSON, or YAML when it ends in .yaml or .yml; or of the
configuration kept in PostgreSQL): the APIs on one port, the admin routes, the monitoring console
and health checks on another (their own origin). Logs are JSON lines on stdout.

Options (each also from the environment variable in brackets; the flag wins):
  --config <file>         [GATEWAY_CONFIG] the configuration file (required with the file source);
                          relative paths in it resolve from its folder. With --config-source postgres:
                          imported, with its policies, as the first version when the database holds none
  --config-source <s>     [GATEWAY_CONFIG_SOURCE] file (the default: --config, versions beside it) or
                          postgres (the table gateway_configuration in DATABASE_URL's DATABASE_SCHEMA,
                          shared by every instance; the configuration console saves there)
  --port <n>              [PORT] port of the APIs (default 8080)
  --host <address>        [HOST] interface of the APIs (default 127.0.0.1; 0.0.0.0 in a container)
  --admin-port <n>        [ADMIN_PORT] port of admin, console and health (default 8081; 0 serves none)
  --admin-host <address>  [ADMIN_HOST] interface of admin, console and health (default 127.0.0.1,
                          whatever --host says: expose it on purpose, to the operators' network only)
  --admin-host-name <name>
                          [ADMIN_HOST_NAME] the host name operators reach the admin listener by
                          (admin.example.org): its routes answer 421 under any other, so that the
                          session cookie belongs to a name that serves no API (health and metrics
                          answer under any)
  --trust-proxy <list>    [TRUST_PROXY, or GATEWAY_TRUST_PROXY] addresses or subnets (comma-separated;
                          loopback, uniquelocal...) of the proxies whose X-Forwarded-For/-Host/-Proto
                          are believed: a TLS-terminating proxy's X-Forwarded-Proto: https makes the
                          session cookie Secure (default none)
  --tls-cert <pem>        [TLS_CERT_FILE] certificate (chain) of both listeners, PEM: they speak HTTPS
                          (with --tls-key; both read again on SIGHUP)
  --tls-key <pem>         [TLS_KEY_FILE] its private key, PEM
  --tls-client-ca <pem>   [TLS_CLIENT_CA_FILE] CA certificates the APIs' listener asks clients for a
                          certificate against: the certificate of certificate-bound tokens (RFC 8705)
  --tls-client-auth <m>   [TLS_CLIENT_AUTH] optional (the default: a client without a verified
                          certificate is served, its certificate-bound tokens refused) or required
                          (the TLS handshake fails without one)
  --workers <n|auto>      [WORKERS] processes sharing the ports (node:cluster; auto = one per core;
                          default 1); a worker that dies is replaced after 1 s, doubled for each
                          failed start in a row up to 30 s; 5 failed starts of one worker within
                          120 s stop the gateway (exit 1)
  --grace-period <ms>     [GRACE_PERIOD_MS] how long a stop lets exchanges in flight finish (default 10000)
  --users <file>          [GATEWAY_USERS_FILE] operators with roles (viewer, operator, admin) besides
                          "admin"; edit it with
                          express-access-gateway users add --file <file> --username <name> --role <role>
  --audit-file <file>     [GATEWAY_AUDIT_FILE] JSON-lines file the operators' audit log is appended to
  --metrics <mode>        [GATEWAY_METRICS] GET /gateway/metrics on the admin port: auth (admin
                          credentials, the default), open (no credentials: for a scrape on an internal
                          port) or off (none collected)
  --log-level <level>     [LOG_LEVEL] error, warn, info (the default) or debug
  --log-format <format>   [LOG_FORMAT] json (the default: one JSON object a line, with "event" and
                          "msg") or pretty (one readable line each, for a terminal)
  --access-log            [GATEWAY_ACCESS_LOG=1] one line per exchange: transaction id, API,
                          operation, method, status, outcome, client id, duration, trace id
                          (never a token, cookie or query string)
  --check-config          [GATEWAY_CHECK_CONFIG=1] check the configuration, then exit without serving:
                          its policies compiled and each token policy's authorization server reached
                          (discovery, and the gateway's client authentication by an introspection of
                          a made-up token); prints "configuration ok" and each result (exit 0), or
                          each problem with its path or policy (exit 2); warnings are printed too;
                          with --tls-*, whether the certificate, key and client CA can be used
  --version               the version, then exit
  -h, --help              this text

Environment:
  ADMIN_PASSWORD          password of the user "admin" (role admin) of the admin routes, the consoles
                          (a random one is generated and printed when unset)
  GATEWAY_SESSION_SECRET  signs the operators' sessions (32+ characters), so that every instance
                          given it accepts them (--workers makes one for its workers)
  GATEWAY_NODE_ID         this instance's id, on every record and in the node list (default <host>-<pid>;
                          with --workers, worker n and its replacements: <id>-w<n>)
  REDIS_URL               Redis shared by the instances: token results shared, ResetAllCaches
                          reaching every instance, the live instances in GET /gateway/admin/status
  GATEWAY_CLUSTER_SECRET  required with REDIS_URL: signs what the instances share there (32+
                          characters, the same on every instance; openssl rand -base64 32); during
                          a rotation several, separated by commas, the first signing
  REDIS_KEY_PREFIX        prefix of the gateway's Redis keys, one per group of instances (default eag:)
  REDIS_COMMAND_TIMEOUT_MS
                          longest wait for a Redis reply, ms, before going on without Redis (default 1000)
  DATABASE_URL            PostgreSQL for the transaction records (table created and migrated at start),
                          and for the configuration with --config-source postgres
  DATABASE_SCHEMA         schema of the records and configuration tables (default public)
  RECORD_JOURNAL          with DATABASE_URL: on (default), each answer's record written to a local
                          journal before the answer's last byte leaves, replayed at the next start
                          after a crash; fsync: each write also synced to the disk; off
  RECORD_JOURNAL_DIR      directory of the journal, the process's own and writable by it alone
                          (default: express-access-gateway-journal-<uid> in the temporary directory)
  RECORD_JOURNAL_ON_UNAVAILABLE
                          while the journal cannot be written (a full disk): answer (default: answers
                          go out unjournaled, said at error) or refuse (503 until it can be written)
  GATEWAY_SECRET_*        the client secrets that token policies name with clientSecretEnv (no other
                          variable can be named)
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                          an OTLP/HTTP collector: the gateway's spans are exported to it (service
                          name OTEL_SERVICE_NAME, default express-access-gateway; the other OTEL_*
                          variables apply; OTEL_SDK_DISABLED=true exports none)
  DEBUG                   developer tracing, for example DEBUG=express-access-gateway:*

Health (admin port, no credentials): GET /gateway/health/live, GET /gateway/health/ready (503 while
a token policy's authorization server cannot be used as configured: the log's not_ready says which
and why; checked again every 5 to 30 s).
SIGHUP: read the configuration again and forget the cached token results (ResetAllCaches: on every
instance with REDIS_URL); an invalid configuration is logged and the one in force stays. The TLS
files are read again too (new connections use them; unusable ones are logged and the ones in force stay).
SIGTERM or SIGINT: stop accepting, let exchanges in flight finish (up to the grace period), exit 0.
Exit codes: 0 stopped, 2 bad usage or invalid configuration, 1 any other start failure (with
--workers: a worker failing to start 5 times within 120 s).`;

/** Levels of `--log-level`. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The settings of one `serve` run. */
export interface ServeSettings {
  /** The configuration file; with the postgres source, the file imported when the database holds none. */
  readonly configFile: string | undefined;
  readonly configSource: 'file' | 'postgres';
  readonly port: number;
  readonly host: string;
  readonly adminPort: number | false;
  readonly adminHost: string;
  readonly adminHostName: string | undefined;
  readonly trustProxy: string[] | undefined;
  /** HTTPS (`--tls-*`): absolute file paths; `undefined`: plain HTTP. */
  readonly tls:
    { readonly cert: string; readonly key: string; readonly clientCa?: string; readonly clientAuth: 'optional' | 'required' } | undefined;
  readonly workers: number;
  readonly gracePeriodMs: number;
  readonly usersFile: string | undefined;
  readonly auditFile: string | undefined;
  readonly metrics: 'auth' | 'open' | 'off';
  readonly logLevel: LogLevel;
  readonly logFormat: 'json' | 'pretty';
  readonly accessLog: boolean;
  /** `--check-config`: check the configuration and exit, without serving. */
  readonly checkConfig: boolean;
}

/** The first lines of {@link USAGE}: what the command prints when run without arguments. */
export const SHORT_USAGE = `${USAGE.slice(0, USAGE.indexOf('\n\n'))}

express-access-gateway --help lists every option.`;

/** Bad usage: the command exits 2 with the problem in one line and a pointer to `--help`. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The commands of `express-access-gateway`. */
const COMMANDS = ['serve', 'users'];

const OPTIONS = {
  config: { type: 'string' },
  'config-source': { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  'admin-port': { type: 'string' },
  'admin-host': { type: 'string' },
  'admin-host-name': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-client-ca': { type: 'string' },
  'tls-client-auth': { type: 'string' },
  workers: { type: 'string' },
  'grace-period': { type: 'string' },
  users: { type: 'string' },
  'audit-file': { type: 'string' },
  metrics: { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'access-log': { type: 'boolean' },
  'check-config': { type: 'boolean' },
  version: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A flag's value, else its environment variable's (an empty variable counts as unset). */
type Lookup = (flag: keyof typeof OPTIONS, ...variables: string[]) => { value: string; from: string } | undefined;

function lookupOf(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): Lookup {
  return (flag, ...variables) => {
    const given = values[flag];
    if (typeof given === 'string') return { value: given, from: `--${flag}` };
    for (const name of variables) {
      const value = env[name];
      if (value !== undefined && value !== '') return { value, from: name };
    }
    return undefined;
  };
}

function integer(found: { value: string; from: string } | undefined, fallback: number, min: number, max: number): number {
  if (found === undefined) return fallback;
  const { value, from } = found;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new UsageError(`${from} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value.slice(0, 40))}`);
  return Number(value);
}

function oneOf<T extends string>(found: { value: string; from: string } | undefined, allowed: readonly T[], fallback: T): T {
  if (found === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(found.value)) {
    const list = `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)!}`;
    throw new UsageError(`${found.from} must be ${list}, got ${JSON.stringify(found.value.slice(0, 40))}`);
  }
  return found.value as T;
}

/** `GATEWAY_ACCESS_LOG`, `GATEWAY_CHECK_CONFIG` and their kind: 1/true/yes/on, 0/false/no/off. */
function switchOf(flag: boolean | undefined, env: NodeJS.ProcessEnv, name: string): boolean {
  if (flag === true) return true;
  const value = env[name];
  if (value === undefined || value === '') return false;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new UsageError(`${name} must be 1 or 0 (true or false), got ${JSON.stringify(value.slice(0, 40))}`);
}

function fileOption(found: { value: string } | undefined): string | undefined {
  return found === undefined ? undefined : path.resolve(found.value);
}

/** Addresses and subnets only: a hop count would believe any client's `X-Forwarded-*` headers. */
function trustedProxies(found: { value: string; from: string } | undefined): string[] | undefined {
  if (found === undefined || found.value.trim() === '') return undefined;
  const list = found.value.split(',').map((item) => item.trim());
  const refuse = (): never => {
    throw new UsageError(`${found.from} must list addresses or subnets (10.0.0.0/8, loopback), got ${JSON.stringify(found.value)}`);
  };
  if (list.some((item) => item === '' || /^\d+$/.test(item))) refuse();
  try {
    proxyAddr.compile(list);
  } catch {
    refuse();
  }
  return list;
}

/** `--tls-*`: the certificate and key together, the client CA and its mode only with them. */
function tlsOf(lookup: Lookup): ServeSettings['tls'] {
  const cert = lookup('tls-cert', 'TLS_CERT_FILE');
  const key = lookup('tls-key', 'TLS_KEY_FILE');
  const clientCa = lookup('tls-client-ca', 'TLS_CLIENT_CA_FILE');
  const clientAuth = lookup('tls-client-auth', 'TLS_CLIENT_AUTH');
  if (cert === undefined && key === undefined) {
    const stray = clientCa ?? clientAuth;
    if (stray !== undefined) throw new UsageError(`${stray.from} needs --tls-cert and --tls-key (TLS_CERT_FILE, TLS_KEY_FILE)`);
    return undefined;
  }
  if (cert === undefined || key === undefined)
    throw new UsageError(
      `${(cert ?? key)!.from} needs ${cert === undefined ? '--tls-cert (TLS_CERT_FILE)' : '--tls-key (TLS_KEY_FILE)'} too`,
    );
  if (clientAuth !== undefined && clientCa === undefined)
    throw new UsageError(`${clientAuth.from} needs --tls-client-ca (TLS_CLIENT_CA_FILE)`);
  return {
    cert: fileOption(cert)!,
    key: fileOption(key)!,
    ...(clientCa === undefined ? {} : { clientCa: fileOption(clientCa)! }),
    clientAuth: oneOf(clientAuth, ['optional', 'required'], 'optional'),
  };
}

/** Where the configuration comes from, checked. */
function configOf(lookup: Lookup, env: NodeJS.ProcessEnv): Pick<ServeSettings, 'configFile' | 'configSource'> {
  const configSource = oneOf(lookup('config-source', 'GATEWAY_CONFIG_SOURCE'), ['file', 'postgres'], 'file');
  const config = lookup('config', 'GATEWAY_CONFIG');
  if (configSource === 'postgres' && !env.DATABASE_URL) throw new UsageError('--config-source postgres needs DATABASE_URL');
  if (configSource === 'file' && config === undefined) throw new UsageError('--config <file> is required (or GATEWAY_CONFIG)');
  return { configFile: fileOption(config), configSource };
}

/**
 * The settings of `argv` (the arguments after the command's name) and `env`: `help` or `version`
 * when asked for.
 *
 * `usage` without any argument.
 *
 * @throws UsageError for an unknown flag, a missing command or a value that cannot be used.
 */
export function settingsOf(argv: string[], env: NodeJS.ProcessEnv): ServeSettings | 'help' | 'version' | 'usage' {
  if (argv.length === 0) return 'usage';
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    throw new UsageError(commandLineProblem(err, argv, OPTIONS));
  }
  const { values, positionals } = parsed;
  if (values.help === true) return 'help';
  if (values.version === true) return 'version';
  const [command, ...extra] = positionals;
  if (command === undefined) throw new UsageError('the command serve is missing (express-access-gateway serve --config <file> [options])');
  if (command !== 'serve') {
    const nearest = nearestKey(command, COMMANDS);
    throw new UsageError(
      `unknown command ${JSON.stringify(command.slice(0, 40))}${nearest === undefined ? ` (commands: ${COMMANDS.join(', ')})` : ` (did you mean ${nearest}?)`}`,
    );
  }
  if (extra.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(extra[0]!.slice(0, 40))} after serve (flags start with --)`);
  const lookup = lookupOf(values, env);
  const workers = lookup('workers', 'WORKERS');
  const adminHostName = lookup('admin-host-name', 'ADMIN_HOST_NAME');
  if (adminHostName !== undefined && !HOST_NAME.test(adminHostName.value))
    throw new UsageError(`${adminHostName.from} must be a host name like admin.example.org, got ${JSON.stringify(adminHostName.value)}`);
  const adminPort = integer(lookup('admin-port', 'ADMIN_PORT'), 8081, 0, 65_535);
  return {
    ...configOf(lookup, env),
    port: integer(lookup('port', 'PORT'), 8080, 0, 65_535),
    host: lookup('host', 'HOST')?.value ?? '127.0.0.1',
    adminPort: adminPort === 0 ? false : adminPort,
    adminHost: lookup('admin-host', 'ADMIN_HOST')?.value ?? '127.0.0.1',
    adminHostName: adminHostName?.value,
    trustProxy: trustedProxies(lookup('trust-proxy', 'TRUST_PROXY', 'GATEWAY_TRUST_PROXY')),
    tls: tlsOf(lookup),
    workers: workers?.value === 'auto' ? availableParallelism() : integer(workers, 1, 1, 256),
    gracePeriodMs: integer(lookup('grace-period', 'GRACE_PERIOD_MS'), 10_000, 0, 3_600_000),
    usersFile: fileOption(lookup('users', 'GATEWAY_USERS_FILE')),
    auditFile: fileOption(lookup('audit-file', 'GATEWAY_AUDIT_FILE')),
    metrics: oneOf(lookup('metrics', 'GATEWAY_METRICS'), ['auth', 'open', 'off'], 'auth'),
    logLevel: oneOf(lookup('log-level', 'LOG_LEVEL'), LOG_LEVELS, 'info'),
    logFormat: oneOf(lookup('log-format', 'LOG_FORMAT'), ['json', 'pretty'], 'json'),
    accessLog: switchOf(values['access-log'], env, 'GATEWAY_ACCESS_LOG'),
    checkConfig: switchOf(values['check-config'], env, 'GATEWAY_CHECK_CONFIG'),
  };
}
