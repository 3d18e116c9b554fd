#!/usr/bin/env node
/**
 * `express-access-gateway serve --config <file>`: the gateway as its own server. `--help` prints
 * the usage (settings.ts); `--version` the version. Logs are JSON lines on stdout (logging.ts).
 * Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 2 for bad usage or an invalid configuration
 * (the field path in the log), 1 for anything else that stops the start (with `--workers`: a worker
 * slot that keeps failing to start, supervisor.ts). SIGHUP reloads.
 * `--check-config` checks the configuration and its authorization servers, then exits 0 or 2.
 *
 * @module
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createGateway, type Gateway } from '../gateway/create-gateway.js';
import { logConfigRefused } from '../gateway/logging.js';
import { ConfigError } from '../config/errors.js';
import type { PostgresConfigSource } from '../configuration/postgres-source.js';
import type { GatewayLogger } from '../log.js';
import { startTracingExport, type TracingExport } from '../observability/sdk.js';
import { exposeMetricsText } from '../observability/metrics.js';
import { EnvironmentError, instanceSettings, postgresConfigSource } from './environment.js';
import { serveLoggers } from './logging.js';
import { serveGateway, type GatewayServer } from './serve.js';
import { settingsOf, SHORT_USAGE, USAGE, UsageError, type ServeSettings } from './settings.js';
import { packageVersion } from './version.js';
import { exitAfterStartFailure, onReloadFromPrimary, superviseWorkers, workerSlot } from './supervisor.js';
import { workerMetricsText } from './worker-metrics.js';
import { workerSignOuts } from './worker-sessions.js';
import { workerProofs } from './worker-proofs.js';

/** What a SIGHUP does now: nothing until the gateway serves (but never Node's default, exiting). */
interface Hangup {
  run: (() => void) | undefined;
  /** Reads the TLS files again, alone: a worker told so while another resets every instance through Redis. */
  tls?: (() => void) | undefined;
}

/** What a serving process has to close at the end, in order. */
interface Closing {
  tracing: TracingExport | undefined;
  store: { close(): Promise<void> } | undefined;
  source: PostgresConfigSource | undefined;
}

async function closeAll(closing: Closing): Promise<void> {
  await closing.store?.close().catch(() => undefined);
  await closing.source?.close().catch(() => undefined);
  // Spans still queued go to the collector before the exit.
  await closing.tracing?.shutdown().catch(() => undefined);
}

function startTracingRecord(log: GatewayLogger, tracing: TracingExport | undefined): void {
  if (tracing === undefined) return;
  log.info(
    { event: 'tracing', endpoint: tracing.endpoint, serviceName: tracing.serviceName },
    `exporting spans to ${tracing.endpoint} (OTLP/HTTP JSON) as ${tracing.serviceName}`,
  );
  if (tracing.ignoredProtocol !== undefined)
    log.warn(
      { event: 'tracing', protocol: tracing.ignoredProtocol },
      `OTEL_EXPORTER_OTLP_PROTOCOL=${tracing.ignoredProtocol} is not supported: spans are sent as http/json`,
    );
}

/** The gateway of one serving process. */
async function gatewayOf(settings: ServeSettings, adminPassword: string, log: GatewayLogger, access: GatewayLogger, closing: Closing) {
  const instance = await instanceSettings(process.env, workerSlot());
  closing.store = instance.store;
  try {
    closing.source = settings.configSource === 'postgres' ? await postgresConfigSource(process.env, settings.configFile) : undefined;
  } catch (err) {
    if (err instanceof ConfigError) logConfigRefused(log, err, 'the import of the first configuration');
    throw err;
  }
  const source = closing.source;
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
    logger: log,
    accessLog: settings.accessLog ? access : false,
    // Workers without Redis remember DPoP proofs in the primary, so that no two accept one proof.
    ...(cluster.isWorker && instance.options.redis === undefined ? { dpopReplay: workerProofs() } : {}),
    ...instance.options,
  });
  const configuration = source === undefined ? settings.configFile : source.label;
  return { gateway, summary: `${instance.summary}; configuration from ${configuration}`, nodeId: gateway.nodeId };
}

/** ResetAllCaches on a SIGHUP, one at a time (a signal during a reload runs one more after it). */
function reloadOnHangup(gateway: Gateway, log: GatewayLogger): () => void {
  let running = false;
  let again = false;
  const reload = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    log.info({ event: 'reload', signal: 'SIGHUP' }, 'SIGHUP: reading the configuration again');
    // The gateway logs the reset, or the configuration refused (the one in force stays).
    gateway
      .resetAllCaches({ by: 'SIGHUP' })
      .catch((err: unknown) => {
        if (!(err instanceof ConfigError))
          log.error(
            { event: 'reload', error: (err as Error)?.message ?? String(err) },
            'SIGHUP: the reload failed; the configuration in force stays',
          );
      })
      .finally(() => {
        running = false;
        if (again) {
          again = false;
          reload();
        }
      });
  };
  return reload;
}

/**
 * Reads the TLS files again (SIGHUP), logging the outcome; `undefined` without TLS. Files that
 * cannot be used are refused as a bad configuration file is (`config_error`): the ones in force stay.
 */
function tlsReloader(server: GatewayServer, log: GatewayLogger): (() => void) | undefined {
  if (!server.url.startsWith('https:')) return undefined;
  return () => {
    server.reloadTls().then(
      () => log.info({ event: 'tls_reload' }, 'TLS certificate, key and client CA read again'),
      (err: unknown) =>
        log.error(
          { event: 'config_error', when: 'the TLS reload (SIGHUP)', error: (err as Error)?.message ?? String(err) },
          'the TLS files cannot be used; the ones in force stay',
        ),
    );
  };
}

/** One process serving the gateway until SIGTERM/SIGINT; SIGHUP reloads. */
async function serveOne(settings: ServeSettings, adminPassword: string, loggers: ReturnType<typeof serveLoggers>, hangup: Hangup) {
  const { log, access } = loggers;
  const who = cluster.isWorker ? `worker ${process.pid}` : `pid ${process.pid}`;
  const closing: Closing = { tracing: undefined, store: undefined, source: undefined };
  let gateway: Gateway | undefined;
  let server;
  try {
    // Started before the gateway, so that its first exchanges are traced.
    closing.tracing = await startTracingExport(process.env, packageVersion());
    startTracingRecord(log, closing.tracing);
    const made = await gatewayOf(settings, adminPassword, log, access, closing);
    gateway = made.gateway;
    log.info(
      {
        event: 'start',
        version: packageVersion(),
        nodeId: made.nodeId,
        port: settings.port,
        adminPort: settings.adminPort === false ? null : settings.adminPort,
        workers: settings.workers,
      },
      `${who}: ${made.summary}`,
    );
    // A scrape reaches one worker: it answers the sum over all of them.
    if (cluster.isWorker && gateway.metrics !== undefined) exposeMetricsText(gateway.metrics, workerMetricsText(gateway.metrics.registry));
    await gateway.ready();
    server = await serveGateway(gateway, {
      port: settings.port,
      host: settings.host,
      adminPort: settings.adminPort,
      adminHost: settings.adminHost,
      gracePeriodMs: settings.gracePeriodMs,
      ...(settings.tls === undefined ? {} : { tls: settings.tls }),
    });
  } catch (err) {
    await gateway?.close().catch(() => undefined);
    await closeAll(closing);
    throw err;
  }
  // Serving even when a token policy fails its check: health/ready says 503 until it passes, and
  // `ready` waits for it, so that an alert keyed on the event never sees an instance that is not
  // (docs/deployment.md, "Readiness: the token policies' checks").
  const urls = { url: server.url, ...(server.adminUrl === undefined ? {} : { adminUrl: server.adminUrl }) };
  const checked = gateway.health().ready ? '' : '; not ready until the token policies logged not_ready pass their checks';
  log.info(
    { event: 'listening', ...urls },
    `${who} serving APIs at ${server.url}${server.adminUrl === undefined ? '' : `, admin and console at ${server.adminUrl}`}${checked}`,
  );
  void gateway.whenReady().then(() => log.info({ event: 'ready', ...urls }, `${who} ready: health/ready answers 200`));
  const reloadTls = tlsReloader(server, log);
  const reset = reloadOnHangup(gateway, log);
  hangup.run = () => {
    reset();
    reloadTls?.();
  };
  hangup.tls = reloadTls;
  const stop = (signal: NodeJS.Signals): void => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    log.info({ event: 'shutdown', signal, gracePeriodMs: settings.gracePeriodMs }, `${signal}: stopping (exchanges in flight may finish)`);
    // Records still queued for the database are written (or spilled) before the exit.
    server
      .stop()
      .then(() => closeAll(closing))
      .then(
        () => {
          log.info({ event: 'stopped' }, `${who} stopped`);
          process.exit(0);
        },
        (err: unknown) => {
          log.error({ event: 'stopped', error: (err as Error)?.message ?? String(err) }, `${who} stopped with a failure`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** Why the start failed, logged; the exit code it means, and the cause. */
function startFailed(log: GatewayLogger, err: unknown): { code: number; cause: string } {
  const usage = err instanceof ConfigError || err instanceof EnvironmentError;
  const cause = err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err);
  log.error({ event: 'not_ready', cause }, `${err instanceof EnvironmentError ? '' : 'cannot start: '}${cause}`);
  return { code: usage ? 2 : 1, cause };
}

async function main(argv: string[]): Promise<void> {
  // Installed first: Node's default for SIGHUP is to exit, and a reload must never stop the gateway.
  // A worker reloads when its primary says so (supervisor.ts), never on a SIGHUP of its own.
  const hangup: Hangup = { run: undefined };
  process.on('SIGHUP', () => {
    if (!cluster.isWorker) hangup.run?.();
  });
  if (cluster.isWorker) onReloadFromPrimary((configuration) => (configuration ? hangup.run : hangup.tls)?.());
  if (argv[0] === 'users') {
    const { usersMain } = await import('../operators/cli.js');
    process.exit(await usersMain(argv.slice(1)));
  }
  let settings: ReturnType<typeof settingsOf>;
  try {
    settings = settingsOf(argv, process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // One line an operator acts on; the 100 lines of --help would push it off the screen.
    process.stderr.write(`express-access-gateway: ${err.message}; see express-access-gateway --help\n`);
    process.exit(2);
  }
  if (settings === 'usage') {
    process.stderr.write(`${SHORT_USAGE}\n`);
    process.exit(2);
  }
  if (settings === 'help' || settings === 'version') {
    process.stdout.write(`${settings === 'help' ? USAGE : packageVersion()}\n`);
    return;
  }
  if (settings.checkConfig) {
    const { checkConfigMain } = await import('./check-config.js');
    process.exit(await checkConfigMain(settings, (text) => process.stdout.write(text)));
  }
  const loggers = serveLoggers(settings.logLevel, settings.logFormat);
  let adminPassword = process.env.ADMIN_PASSWORD;
  if (adminPassword === undefined || adminPassword === '') {
    adminPassword = randomBytes(12).toString('base64url');
    // On the terminal, not in a log record: the logs never hold a secret.
    if (cluster.isPrimary)
      process.stderr.write(`express-access-gateway: ADMIN_PASSWORD is not set; the admin password of this run is ${adminPassword}\n`);
  }
  if (cluster.isPrimary && settings.workers > 1) {
    superviseWorkers(settings, adminPassword, loggers.log, hangup);
    return;
  }
  try {
    await serveOne(settings, adminPassword, loggers, hangup);
  } catch (err) {
    // A worker tells the primary why, so that the primary's log says it when it gives up.
    const { code, cause } = startFailed(loggers.log, err);
    exitAfterStartFailure(cause, code);
  }
}

void main(process.argv.slice(2));
