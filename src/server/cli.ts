#!/usr/bin/env node
/**
 * `express-access-gateway serve --config <file>`: the gateway as its own server. `--help` prints
 * the usage below. Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 2 for bad usage or an invalid
 * configuration (the field path on stderr), 1 for anything else that stops the start.
 *
 * @module
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import proxyAddr from 'proxy-addr';
import { createGateway } from '../gateway/create-gateway.js';
import { HOST_NAME } from '../admin/host.js';
import { ConfigError } from '../config/errors.js';
import type { PostgresConfigSource } from '../configuration/postgres-source.js';
import { EnvironmentError, instanceSettings, postgresConfigSource } from './environment.js';
import { relayWorkerSignOuts, workerSignOuts } from './worker-sessions.js';
import { exposeMetricsText } from '../observability/metrics.js';
import { serveGateway } from './serve.js';
import { answerWorkerMetrics, workerMetricsText } from './worker-metrics.js';

const USAGE = `Usage: express-access-gateway serve --config <file> [options]
       express-access-gateway serve --config-source postgres [--config <file>] [options]

Serves the gateway of a configuration file (or of the configuration kept in PostgreSQL): the APIs
on one port, the admin routes, the monitoring console and health checks on another (their own origin).

Options:
  --config <file>         the configuration file (required with the file source); relative paths in it
                          resolve from its folder. With --config-source postgres: imported, with its
                          policies, as the first version when the database holds none yet
  --config-source <s>     file (the default: --config, versions beside it) or postgres (the table
                          gateway_configuration in DATABASE_URL's DATABASE_SCHEMA, shared by every
                          instance; the configuration console saves there)
  --port <n>              port of the APIs (default 8080)
  --host <address>        interface of the APIs (default 127.0.0.1; 0.0.0.0 in a container)
  --admin-port <n>        port of admin, console and health (default 8081; 0 serves none)
  --admin-host <address>  interface of admin, console and health (default 127.0.0.1, whatever --host
                          says: expose it on purpose, to the operators' network only)
  --admin-host-name <name>
                          the host name operators reach the admin listener by (admin.example.org):
                          its routes answer 421 under any other, so that the session cookie belongs to
                          a name that serves no API (health and metrics answer under any)
  --trust-proxy <list>    addresses or subnets (comma-separated; loopback, uniquelocal...) of the
                          proxies whose X-Forwarded-For/-Host/-Proto are believed: a TLS-terminating
                          proxy's X-Forwarded-Proto: https makes the session cookie Secure (default none)
  --workers <n|auto>      processes sharing the ports (node:cluster; auto = one per core; default 1);
                          a worker that dies is replaced
  --grace-period <ms>     how long a stop lets exchanges in flight finish (default 10000)
  --users <file>          operators with roles (viewer, operator, admin) besides "admin"; edit it with
                          express-access-gateway users add --file <file> --username <name> --role <role>
  --audit-file <file>     JSON-lines file the operators' audit log is appended to
  --metrics <mode>        GET /gateway/metrics on the admin port: auth (admin credentials, the default),
                          open (no credentials: for a scrape on an internal port) or off (none collected)
  -h, --help              this text

Environment:
  ADMIN_PASSWORD          password of the user "admin" (role admin) of the admin routes, the consoles
                          (a random one is generated and printed when unset)
  GATEWAY_USERS_FILE      the users file, when --users is not given
  GATEWAY_AUDIT_FILE      the audit file, when --audit-file is not given
  GATEWAY_METRICS         the metrics mode, when --metrics is not given
  GATEWAY_CONFIG_SOURCE   the configuration source, when --config-source is not given
  GATEWAY_TRUST_PROXY     the trusted proxies, when --trust-proxy is not given
  GATEWAY_SESSION_SECRET  signs the operators' sessions (32+ characters), so that every instance
                          given it accepts them (--workers makes one for its workers)
  GATEWAY_NODE_ID         this instance's id, on every record and in the node list (default <host>-<pid>)
  REDIS_URL               Redis shared by the instances: token results shared, ResetAllCaches
                          reaching every instance, the live instances in GET /gateway/admin/status
  GATEWAY_CLUSTER_SECRET  required with REDIS_URL: signs what the instances share there (32+
                          characters, the same on every instance; openssl rand -base64 32); during
                          a rotation several, separated by commas, the first signing
  REDIS_KEY_PREFIX        prefix of the gateway's Redis keys, one per group of instances (default eag:)
  REDIS_COMMAND_TIMEOUT_MS
                          longest wait for a Redis reply, ms, before going on without Redis (default 100)
  DATABASE_URL            PostgreSQL for the transaction records (table created and migrated at start),
                          and for the configuration with --config-source postgres
  DATABASE_SCHEMA         schema of the records and configuration tables (default public)
  GATEWAY_SECRET_*        the client secrets that token policies name with clientSecretEnv (no other
                          variable can be named)
  DEBUG                   debug output, for example DEBUG=express-access-gateway:*

Health (admin port, no credentials): GET /gateway/health/live, GET /gateway/health/ready.
SIGTERM or SIGINT: stop accepting, let exchanges in flight finish (up to the grace period), exit 0.
Exit codes: 0 stopped, 2 bad usage or invalid configuration, 1 any other start failure.`;

/** The settings of one `serve` run. */
interface ServeSettings {
  /** The configuration file; with the postgres source, the file imported when the database holds none. */
  readonly configFile: string | undefined;
  readonly configSource: 'file' | 'postgres';
  readonly port: number;
  readonly host: string;
  readonly adminPort: number | false;
  readonly adminHost: string;
  readonly adminHostName: string | undefined;
  readonly trustProxy: string[] | undefined;
  readonly workers: number;
  readonly gracePeriodMs: number;
  readonly usersFile: string | undefined;
  readonly auditFile: string | undefined;
  readonly metrics: 'auth' | 'open' | 'off';
}

class UsageError extends Error {}

function integer(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return Number(value);
}

function fileOption(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : path.resolve(value);
}

function settingsOf(argv: string[]): ServeSettings | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      'config-source': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'admin-port': { type: 'string' },
      'admin-host': { type: 'string' },
      'admin-host-name': { type: 'string' },
      'trust-proxy': { type: 'string' },
      workers: { type: 'string' },
      'grace-period': { type: 'string' },
      users: { type: 'string' },
      'audit-file': { type: 'string' },
      metrics: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return 'help';
  if (positionals.length !== 1 || positionals[0] !== 'serve')
    throw new UsageError(`expected the command "serve", got ${JSON.stringify(positionals.join(' '))}`);
  const configSource = values['config-source'] ?? process.env.GATEWAY_CONFIG_SOURCE ?? 'file';
  if (configSource !== 'file' && configSource !== 'postgres')
    throw new UsageError(`--config-source must be file or postgres, got ${JSON.stringify(configSource)}`);
  if (configSource === 'postgres' && !process.env.DATABASE_URL) throw new UsageError('--config-source postgres needs DATABASE_URL');
  if (configSource === 'file' && (values.config === undefined || values.config === '')) throw new UsageError('--config <file> is required');
  const adminPort = integer(values['admin-port'], 'admin-port', 8081, 0, 65_535);
  const workers = values.workers === 'auto' ? availableParallelism() : integer(values.workers, 'workers', 1, 1, 256);
  const metrics = values.metrics ?? process.env.GATEWAY_METRICS ?? 'auth';
  if (metrics !== 'auth' && metrics !== 'open' && metrics !== 'off')
    throw new UsageError(`--metrics must be auth, open or off, got ${JSON.stringify(metrics)}`);
  const adminHostName = values['admin-host-name'];
  if (adminHostName !== undefined && !HOST_NAME.test(adminHostName))
    throw new UsageError(`--admin-host-name must be a host name like admin.example.org, got ${JSON.stringify(adminHostName)}`);
  const trusted = values['trust-proxy'] ?? process.env.GATEWAY_TRUST_PROXY;
  const trustProxy = trusted === undefined || trusted.trim() === '' ? undefined : trusted.split(',').map((item) => item.trim());
  if (trustProxy !== undefined) checkTrusted(trustProxy, trusted!);
  return {
    configFile: values.config === undefined || values.config === '' ? undefined : path.resolve(values.config),
    configSource,
    port: integer(values.port, 'port', 8080, 0, 65_535),
    host: values.host ?? '127.0.0.1',
    adminPort: values['admin-port'] === '0' ? false : adminPort,
    adminHost: values['admin-host'] ?? '127.0.0.1',
    adminHostName,
    trustProxy,
    workers,
    gracePeriodMs: integer(values['grace-period'], 'grace-period', 10_000, 0, 3_600_000),
    usersFile: fileOption(values.users ?? process.env.GATEWAY_USERS_FILE),
    auditFile: fileOption(values['audit-file'] ?? process.env.GATEWAY_AUDIT_FILE),
    metrics,
  };
}

/** Addresses and subnets only: a hop count would believe any client's `X-Forwarded-*` headers. */
function checkTrusted(list: string[], given: string): void {
  const refuse = (): never => {
    throw new UsageError(`--trust-proxy must list addresses or subnets (10.0.0.0/8, loopback), got ${JSON.stringify(given)}`);
  };
  if (list.some((item) => item === '' || /^\d+$/.test(item))) refuse();
  try {
    proxyAddr.compile(list);
  } catch {
    refuse();
  }
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** One process serving the gateway until SIGTERM/SIGINT. */
async function serveOne(settings: ServeSettings, adminPassword: string): Promise<void> {
  const instance = await instanceSettings(process.env, cluster.worker?.id);
  let source: PostgresConfigSource | undefined;
  try {
    source = settings.configSource === 'postgres' ? await postgresConfigSource(process.env, settings.configFile) : undefined;
  } catch (err) {
    await instance.store?.close().catch(() => undefined);
    throw err;
  }
  const gateway = createGateway({
    ...(source === undefined ? { config: settings.configFile!, baseDir: path.dirname(settings.configFile!) } : { config: source }),
    admin: { basicAuth: { username: 'admin', password: adminPassword } },
    operators: {
      ...(settings.usersFile === undefined ? {} : { usersFile: settings.usersFile }),
      ...(settings.auditFile === undefined ? {} : { auditFile: settings.auditFile }),
      ...(process.env.GATEWAY_SESSION_SECRET
        ? { sessions: { secret: process.env.GATEWAY_SESSION_SECRET, ...(cluster.isWorker ? { revocations: workerSignOuts() } : {}) } }
        : {}),
    },
    metrics: settings.metrics === 'off' ? false : { auth: settings.metrics === 'auth' },
    ...(settings.adminHostName === undefined ? {} : { adminHostName: settings.adminHostName }),
    ...(settings.trustProxy === undefined ? {} : { trustProxy: settings.trustProxy }),
    ...instance.options,
  });
  // A scrape reaches one worker: it answers the sum over all of them.
  if (cluster.isWorker && gateway.metrics !== undefined) exposeMetricsText(gateway.metrics, workerMetricsText(gateway.metrics.registry));
  try {
    await gateway.ready();
  } catch (err) {
    await gateway.close().catch(() => undefined);
    await instance.store?.close().catch(() => undefined);
    await source?.close().catch(() => undefined);
    throw err;
  }
  const server = await serveGateway(gateway, {
    port: settings.port,
    host: settings.host,
    adminPort: settings.adminPort,
    adminHost: settings.adminHost,
    gracePeriodMs: settings.gracePeriodMs,
  });
  const who = cluster.isWorker ? `worker ${process.pid}` : `pid ${process.pid}`;
  say(
    `express-access-gateway: ${who} serving APIs at ${server.url}${server.adminUrl === undefined ? '' : `, admin and console at ${server.adminUrl}`}`,
  );
  say(
    `express-access-gateway: ${who}: ${instance.summary}; configuration from ${source === undefined ? settings.configFile : source.label}`,
  );
  const stop = (): void => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    // Records still queued for the database are written (or spilled) before the exit.
    server
      .stop()
      .then(() => instance.store?.close())
      .then(() => source?.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** The primary of `--workers n`: forks the workers, replaces those that die, stops them all on a signal. */
function superviseWorkers(settings: ServeSettings, adminPassword: string): void {
  let stopping = false;
  // The workers share the port of the admin listener: they sign sessions with one secret.
  const sessionSecret = process.env.GATEWAY_SESSION_SECRET || randomBytes(32).toString('base64url');
  const fork = (): void => void cluster.fork({ ADMIN_PASSWORD: adminPassword, GATEWAY_SESSION_SECRET: sessionSecret });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    // Exit code 2: the configuration is invalid; forking again would fail the same way.
    if (code === 2) {
      process.stderr.write(`express-access-gateway: worker ${worker.process.pid} refused the configuration; stopping\n`);
      stopping = true;
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      process.exitCode = 2;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(2);
      return;
    }
    process.stderr.write(`express-access-gateway: worker ${worker.process.pid} died (${signal ?? `exit ${code}`}); starting another\n`);
    fork();
  });
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  answerWorkerMetrics();
  relayWorkerSignOuts();
  for (let i = 0; i < settings.workers; i++) fork();
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'users') {
    const { usersMain } = await import('../operators/cli.js');
    process.exit(await usersMain(argv.slice(1)));
  }
  let settings: ServeSettings | 'help';
  try {
    settings = settingsOf(argv);
  } catch (err) {
    process.stderr.write(`express-access-gateway: ${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (settings === 'help') {
    say(USAGE);
    return;
  }
  let adminPassword = process.env.ADMIN_PASSWORD;
  if (adminPassword === undefined || adminPassword === '') {
    adminPassword = randomBytes(12).toString('base64url');
    if (cluster.isPrimary) say(`express-access-gateway: ADMIN_PASSWORD is not set; the admin password of this run is ${adminPassword}`);
  }
  if (cluster.isPrimary && settings.workers > 1) {
    superviseWorkers(settings, adminPassword);
    return;
  }
  try {
    await serveOne(settings, adminPassword);
  } catch (err) {
    if (err instanceof ConfigError) {
      const issues = err.issues.map((issue) => `  ${issue.path === '' ? '(document)' : issue.path}: ${issue.message}`).join('\n');
      process.stderr.write(`express-access-gateway: invalid configuration ${err.source ?? settings.configFile ?? ''}:\n${issues}\n`);
      process.exit(2);
    }
    if (err instanceof EnvironmentError) {
      process.stderr.write(`express-access-gateway: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`express-access-gateway: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

void main(process.argv.slice(2));
