/**
 * The worker threads that run operators' heavy work (see `jobs.ts`), so that no policy, document
 * or operator can hold the event loop that serves APIs: a bounded number of workers (one by
 * default: API serving keeps the other core), a bounded queue (503 `ERR_OPERATOR_WORK_BUSY` past
 * it), a time and a memory budget per job (the worker is terminated and replaced; 422
 * `ERR_OPERATOR_WORK_OVER_BUDGET` naming the budget), and size caps on the documents the
 * configuration API hands them.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../../errors.js';
import { logger } from '../../log.js';
import { optionKeys, type OptionChecks } from '../../options.js';
import type { JobKind, Jobs } from './jobs.js';
import { transferablesOf } from './transfer.js';
import { moduleFile } from '../../page-assets/files.js';

const log = logger('configuration');

/**
 * Bounds of the configuration console's heavy work: compiling policies (a check, a what-if, the
 * checks of every save), importing OpenAPI documents, comparing versions. It runs in worker
 * threads, never on the event loop that serves the APIs.
 */
export interface OperatorWorkOptions {
  /** Worker threads running jobs at once. Default `1`: API serving keeps the other core. */
  workers?: number;
  /** Jobs waiting for a worker; past them an operator gets 503 `ERR_OPERATOR_WORK_BUSY` with `Retry-After`. Default `4`. */
  maxQueued?: number;
  /**
   * Longest a job may run, in milliseconds: past it the worker is terminated and replaced, and the
   * operator gets 422 `ERR_OPERATOR_WORK_OVER_BUDGET` naming the budget. Default `10000`.
   */
  timeoutMs?: number;
  /** Heap of a worker, in MiB: a job that needs more is stopped as over time. Default `512`. */
  maxMemoryMb?: number;
  /** Largest XACML policy text (bytes of UTF-8) a check, what-if or save takes; larger: 413. Default 2 MiB. */
  maxPolicyBytes?: number;
  /** Largest OpenAPI document (bytes of UTF-8) an import takes; larger: 413. Default 2 MiB. */
  maxOpenApiBytes?: number;
  /**
   * Longest, in milliseconds, that compiling one API's policy (with its references) may take when a
   * save checks it; slower: the save is refused (422, naming the time). The policies in force are
   * compiled again on the thread that serves the APIs when ResetAllCaches (or the configuration's
   * expiry) puts a version in force, so this bounds that pause. Default `100`.
   */
  maxCompileMs?: number;
}

/** {@link OperatorWorkOptions} with their defaults applied.  @internal */
export type OperatorWorkLimits = Readonly<Required<OperatorWorkOptions>>;

const MIB = 1024 * 1024;
const OPERATOR_WORK_KEYS = optionKeys<OperatorWorkOptions>({
  workers: true,
  maxQueued: true,
  timeoutMs: true,
  maxMemoryMb: true,
  maxPolicyBytes: true,
  maxOpenApiBytes: true,
  maxCompileMs: true,
});

/** Checks `operatorWork` options, naming a bad one as `<factory>: options.<at>.<name>`.  @internal */
export function operatorWorkLimits(value: unknown, check: OptionChecks, at = 'operatorWork'): OperatorWorkLimits {
  const o = check.known(check.object<OperatorWorkOptions>(value, at, {}), at, OPERATOR_WORK_KEYS);
  return {
    workers: check.positive(o.workers, `${at}.workers`, 1, true),
    maxQueued: check.nonNegative(o.maxQueued, `${at}.maxQueued`, 4, true),
    timeoutMs: check.positive(o.timeoutMs, `${at}.timeoutMs`, 10_000, true),
    maxMemoryMb: check.positive(o.maxMemoryMb, `${at}.maxMemoryMb`, 512, true),
    maxPolicyBytes: check.positive(o.maxPolicyBytes, `${at}.maxPolicyBytes`, 2 * MIB, true),
    maxOpenApiBytes: check.positive(o.maxOpenApiBytes, `${at}.maxOpenApiBytes`, 2 * MIB, true),
    maxCompileMs: check.positive(o.maxCompileMs, `${at}.maxCompileMs`, 100, true),
  };
}

/** The worker's entry, beside this file (named from the package's root: see moduleFile). */
const ENTRY = moduleFile('configuration/work/worker.js');

/**
 * How a worker starts: from `worker.js`; or, when this file runs from the TypeScript sources
 * (tests, `npm start`), from a script that registers the TypeScript loader in the worker (a
 * worker thread does not inherit the loader the process was started with) and imports `worker.ts`.
 */
function workerEntry(): { entry: URL | string; eval: boolean } {
  if (!import.meta.url.endsWith('.ts')) return { entry: ENTRY, eval: false };
  // tsx's loader API, its ES module build (the one that registers the hooks in this thread).
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const source = new URL('./worker.ts', import.meta.url).href;
  return {
    entry: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`,
    eval: true,
  };
}

/**
 * An idle worker is ended after this long, giving its memory back (a compiled policy's automata
 * live outside the heap the worker's limit counts); the next job starts another.
 */
const IDLE_MS = 10_000;

interface Job {
  readonly kind: JobKind;
  readonly input: unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** One worker thread and the job it runs. */
interface Slot {
  readonly worker: Worker;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
  idleTimer?: NodeJS.Timeout;
}

/** What a worker posts: that it is ready, or a job's answer. */
type WorkerMessage = { ready: true } | { ok: true; value: unknown } | { ok: false; message: string };

/** Runs operators' jobs in worker threads, within {@link OperatorWorkLimits}.  @internal */
export class OperatorWorkPool {
  readonly limits: OperatorWorkLimits;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  #closed = false;

  constructor(limits: OperatorWorkLimits) {
    this.limits = limits;
  }

  /**
   * Runs a job: now when a worker is free, else after the jobs queued before it. Rejects with a
   * {@link GatewayError} `ERR_OPERATOR_WORK_BUSY` when the queue is full, `ERR_OPERATOR_WORK_OVER_BUDGET`
   * past the time or memory budget, an `AbortError` when `signal` aborts while the job waits.
   */
  run<K extends JobKind>(kind: K, input: Jobs[K]['input'], signal?: AbortSignal): Promise<Jobs[K]['output']> {
    return new Promise((resolve, reject) => {
      if (this.#closed) return reject(new Error('operator work: the gateway is closed'));
      if (signal?.aborted === true) return reject(signal.reason);
      const job: Job = {
        kind,
        input,
        resolve: resolve as (value: unknown) => void,
        reject,
        signal,
        // A job still waiting is dropped when its operator has gone.
        onAbort: () => {
          const at = this.#queue.indexOf(job);
          if (at === -1) return;
          this.#queue.splice(at, 1);
          reject(signal!.reason);
        },
      };
      const slot = this.#freeSlot();
      if (slot !== undefined) return this.#start(slot, job);
      if (this.#queue.length >= this.limits.maxQueued) {
        return reject(
          new GatewayError('ERR_OPERATOR_WORK_BUSY', {
            diagnostic: `${this.limits.workers} job(s) running, ${this.#queue.length} waiting`,
          }),
        );
      }
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.#queue.push(job);
    });
  }

  /** Ends every worker; jobs running or waiting are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error('operator work: the gateway is closed');
    for (const job of this.#queue.splice(0)) job.reject(closed);
    await Promise.all([...this.#slots].map((slot) => this.#end(slot, closed)));
  }

  /** A worker without a job (started when fewer than `workers` run), or `undefined`. */
  #freeSlot(): Slot | undefined {
    for (const slot of this.#slots) if (slot.job === undefined) return slot;
    if (this.#slots.size < this.limits.workers) return this.#spawn();
    return undefined;
  }

  #spawn(): Slot {
    const { entry, eval: isScript } = workerEntry();
    const worker = new Worker(entry, { eval: isScript, resourceLimits: { maxOldGenerationSizeMb: this.limits.maxMemoryMb } });
    const slot: Slot = { worker, ready: false };
    this.#slots.add(slot);
    worker.on('message', (message: WorkerMessage) => {
      if ('ready' in message) {
        slot.ready = true;
        if (slot.job !== undefined) this.#post(slot);
        return;
      }
      const job = this.#finish(slot);
      if (job === undefined) return;
      if (message.ok) job.resolve(message.value);
      else job.reject(new Error(message.message));
      this.#next(slot);
    });
    worker.on('error', (err: Error & { code?: string }) => {
      // The worker is gone: out of memory, or its entry failed to load.
      const outOfMemory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      if (!outOfMemory) log('a worker failed: %s', err.message);
      void this.#end(
        slot,
        outOfMemory
          ? new GatewayError('ERR_OPERATOR_WORK_OVER_BUDGET', { params: { limit: `${this.limits.maxMemoryMb} MiB of memory` } })
          : err,
      );
    });
    worker.on('exit', () => void this.#end(slot, new Error('operator work: the worker stopped')));
    return slot;
  }

  #start(slot: Slot, job: Job): void {
    clearTimeout(slot.idleTimer);
    slot.job = job;
    slot.worker.ref();
    if (slot.ready) this.#post(slot);
  }

  /** Hands the job to its worker, and starts the clock: the budget counts the work, not the worker's start. */
  #post(slot: Slot): void {
    const job = slot.job!;
    slot.timer = setTimeout(() => {
      log('a %s job went past its budget of %d ms: its worker is replaced', job.kind, this.limits.timeoutMs);
      void this.#end(slot, new GatewayError('ERR_OPERATOR_WORK_OVER_BUDGET', { params: { limit: `${this.limits.timeoutMs} ms` } }));
    }, this.limits.timeoutMs);
    try {
      slot.worker.postMessage({ kind: job.kind, input: job.input }, transferablesOf(job.input));
    } catch (err) {
      // An input structured clone cannot carry: a bug of the caller, answered as such.
      this.#finish(slot);
      job.reject(err);
      this.#next(slot);
    }
  }

  /** Clears the slot's job and clock; returns the job. */
  #finish(slot: Slot): Job | undefined {
    clearTimeout(slot.timer);
    const job = slot.job;
    slot.job = undefined;
    slot.worker.unref();
    return job;
  }

  /** The next waiting job on this worker, or an idle worker that ends after a while. */
  #next(slot: Slot): void {
    const job = this.#queue.shift();
    if (job !== undefined) {
      job.signal?.removeEventListener('abort', job.onAbort);
      this.#start(slot, job);
      return;
    }
    slot.idleTimer = setTimeout(() => void this.#end(slot, new Error('idle')), IDLE_MS);
    slot.idleTimer.unref();
  }

  /** Ends a worker (its job, if any, rejected with `reason`); a waiting job gets a new worker. */
  async #end(slot: Slot, reason: unknown): Promise<void> {
    if (!this.#slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    this.#finish(slot)?.reject(reason);
    await slot.worker.terminate();
    if (this.#closed) return;
    const job = this.#queue.shift();
    if (job === undefined) return;
    job.signal?.removeEventListener('abort', job.onAbort);
    this.#start(this.#freeSlot()!, job);
  }
}
