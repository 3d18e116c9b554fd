/**
 * The primary of `serve --workers <n>`: forks one worker per slot, starts a slot's worker again
 * when it dies (after a back-off, restarts.ts), stops when a slot keeps failing to start, and stops
 * the workers on a signal. A worker keeps its slot's number across restarts, and with it its node id.
 *
 * @module
 */
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import type { GatewayLogger } from '../log.js';
import { RESTART_POLICY, SlotRestarts, type RestartDecision } from './restarts.js';
import type { ServeSettings } from './settings.js';
import { packageVersion } from './version.js';
import { answerWorkerMetrics } from './worker-metrics.js';
import { relayWorkerSignOuts } from './worker-sessions.js';
import { answerWorkerProofs } from './worker-proofs.js';

/** The variable that gives a worker its slot (1 to n); read in workers only. */
const SLOT_VARIABLE = 'GATEWAY_WORKER_SLOT';

const START_FAILED = 'express-access-gateway:start-failed';

interface StartFailed {
  type: typeof START_FAILED;
  cause: string;
}

/** In a worker: its slot (1 to n), the same for every worker that replaces it; else `undefined`. */
export function workerSlot(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const slot = Number(process.env[SLOT_VARIABLE]);
  return Number.isInteger(slot) && slot >= 1 ? slot : cluster.worker?.id;
}

/** In a worker whose start failed: tells the primary why, then exits with `code`. */
export function exitAfterStartFailure(cause: string, code: number): void {
  if (!cluster.isWorker || process.send === undefined) process.exit(code);
  const exit = (): never => process.exit(code);
  // The message may be lost if the channel is gone: the exit must not wait for it long.
  setTimeout(exit, 1_000).unref();
  process.send({ type: START_FAILED, cause: cause.slice(0, 500) } satisfies StartFailed, undefined, {}, exit);
}

const RELOAD = 'express-access-gateway:reload';

/** A SIGHUP the primary relays: the configuration and the TLS files, or (`configuration` false) the TLS files alone. */
interface Reload {
  type: typeof RELOAD;
  configuration: boolean;
}

/**
 * In a worker: calls `reload` when the primary relays a SIGHUP. A worker ignores a SIGHUP of its
 * own (cli.ts): one sent to the whole process group (`kill -HUP -<pgid>`, `pkill -HUP`) reaches
 * every worker besides the primary, and would reload each twice.
 */
export function onReloadFromPrimary(reload: (configuration: boolean) => void): void {
  process.on('message', (message: unknown) => {
    const asked = message as Partial<Reload> | undefined;
    if (asked?.type === RELOAD) reload(asked.configuration !== false);
  });
}

function isStartFailed(message: unknown): message is StartFailed {
  return (message as StartFailed | undefined)?.type === START_FAILED && typeof (message as StartFailed).cause === 'string';
}

/** One slot: its worker now (or none while it waits to start again), and its failures. */
interface Slot {
  readonly number: number;
  worker: Worker | undefined;
  /** When its worker listened, ms. */
  listenedAt: number | undefined;
  /** Why its latest worker failed to start, as the worker said. */
  cause: string | undefined;
  restarts: SlotRestarts;
  timer: NodeJS.Timeout | undefined;
}

/** What a SIGHUP does: set here for the primary. */
interface Hangup {
  run: (() => void) | undefined;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Logs a worker's death and what follows it. */
function logDeath(log: GatewayLogger, slot: Slot, worker: Worker, exit: { code: number; signal: string }, decision: RestartDecision): void {
  const pid = worker.process.pid;
  const how = exit.signal || `exit ${exit.code}`;
  const fields = {
    event: 'worker_exit',
    pid,
    slot: slot.number,
    code: exit.code,
    signal: exit.signal || null,
    ...(slot.cause === undefined ? {} : { cause: slot.cause }),
  };
  const why = slot.cause === undefined ? '' : `: ${slot.cause}`;
  if (decision.giveUp) {
    const { startLimit, startLimitWindowMs } = RESTART_POLICY;
    log.error(
      { ...fields, failures: decision.failures, withinMs: decision.withinMs, startLimit, startLimitWindowMs },
      `worker ${pid} (slot ${slot.number}) died (${how})${why}; slot ${slot.number} failed to start ${decision.failures} times in ` +
        `${seconds(decision.withinMs)} (the limit is ${startLimit} within ${seconds(startLimitWindowMs)}): stopping`,
    );
    return;
  }
  log.error(
    { ...fields, failures: decision.failures, restartInMs: decision.delayMs },
    `worker ${pid} (slot ${slot.number}) died (${how})${why}; starting another in ${seconds(decision.delayMs)} (failure ${decision.failures} in a row)`,
  );
}

/** The primary of `--workers n`: forks the workers, replaces those that die, stops them all on a signal. */
export function superviseWorkers(settings: ServeSettings, adminPassword: string, log: GatewayLogger, hangup: Hangup): void {
  // The workers accept their connections from the shared socket themselves. Node's round-robin
  // scheduling accepts them here and hands each to a worker, keeping it open until that worker
  // says it took it: one handed to a worker that has just died stays open, unanswered, until its
  // client gives up. Accepted by the worker, it dies with the worker, and the system resets it.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  // The workers share the port of the admin listener: they sign sessions with one secret.
  const sessionSecret = process.env.GATEWAY_SESSION_SECRET || randomBytes(32).toString('base64url');
  const slots: Slot[] = [];
  const live = () => Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
  const slotOf = (worker: Worker) => slots.find((slot) => slot.worker === worker);
  const fork = (slot: Slot): Worker => {
    slot.timer = undefined;
    slot.listenedAt = undefined;
    slot.worker = cluster.fork({
      ADMIN_PASSWORD: adminPassword,
      GATEWAY_SESSION_SECRET: sessionSecret,
      [SLOT_VARIABLE]: String(slot.number),
    });
    return slot.worker;
  };
  const exitWhenAllGone = (): void => {
    if (live().length > 0) return;
    log.info({ event: 'stopped' }, `pid ${process.pid} stopped`);
    process.exit(process.exitCode ?? 0);
  };
  const stopAll = (code: number | undefined): void => {
    stopping = true;
    if (code !== undefined) process.exitCode = code;
    for (const slot of slots) clearTimeout(slot.timer);
    for (const worker of live()) worker.process.kill('SIGTERM');
    exitWhenAllGone();
  };
  cluster.on('listening', (worker) => {
    const slot = slotOf(worker);
    if (slot !== undefined && slot.listenedAt === undefined) slot.listenedAt = Date.now();
  });
  cluster.on('message', (worker, message: unknown) => {
    const slot = slotOf(worker);
    if (slot !== undefined && isStartFailed(message)) slot.cause = message.cause;
  });
  cluster.on('exit', (worker, code, signal) => {
    const pid = worker.process.pid;
    const slot = slotOf(worker);
    if (slot !== undefined) slot.worker = undefined;
    if (stopping || slot === undefined) {
      if (stopping) exitWhenAllGone();
      return;
    }
    // Exit code 2: the configuration is invalid; forking again would fail the same way.
    if (code === 2) {
      log.error({ event: 'worker_exit', pid, slot: slot.number, code }, `worker ${pid} refused the configuration; stopping`);
      stopAll(2);
      return;
    }
    const now = Date.now();
    const decision = slot.restarts.died(now, slot.listenedAt === undefined ? undefined : now - slot.listenedAt);
    logDeath(log, slot, worker, { code, signal }, decision);
    if (decision.giveUp) {
      stopAll(1);
      return;
    }
    slot.cause = undefined;
    slot.timer = setTimeout(() => {
      const replacement = fork(slot);
      log.info(
        { event: 'worker_started', pid: replacement.process.pid, replaces: pid, slot: slot.number },
        `worker ${replacement.process.pid} started in place of ${pid} (slot ${slot.number})`,
      );
    }, decision.delayMs);
  });
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    log.info({ event: 'shutdown', signal, workers: live().length }, `${signal}: stopping the workers`);
    stopAll(undefined);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // With Redis one worker's ResetAllCaches reaches every instance, its siblings included.
  hangup.run = () => {
    const workers = live();
    const told = process.env.REDIS_URL ? workers.slice(0, 1) : workers;
    log.info({ event: 'reload', signal: 'SIGHUP', workers: told.length }, `SIGHUP: ${told.length} worker(s) told to reload`);
    for (const worker of workers) {
      const configuration = told.includes(worker);
      // With TLS, a worker not told to reset (Redis resets every instance) still reads its TLS files.
      if (configuration || settings.tls !== undefined) worker.send({ type: RELOAD, configuration } satisfies Reload);
    }
  };
  answerWorkerMetrics();
  relayWorkerSignOuts();
  answerWorkerProofs();
  log.info(
    {
      event: 'start',
      version: packageVersion(),
      port: settings.port,
      adminPort: settings.adminPort === false ? null : settings.adminPort,
      workers: settings.workers,
    },
    `pid ${process.pid}: starting ${settings.workers} workers`,
  );
  for (let number = 1; number <= settings.workers; number++) {
    const slot: Slot = {
      number,
      worker: undefined,
      listenedAt: undefined,
      cause: undefined,
      restarts: new SlotRestarts(),
      timer: undefined,
    };
    slots.push(slot);
    fork(slot);
  }
}
