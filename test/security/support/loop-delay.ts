/**
 * How long a gateway kept its requests waiting, measured in the gateway process itself: the
 * longest delay of its event loop over a window, less the machine's share of it.
 *
 * A request that arrives while the loop is held waits that long before the gateway reads it. A
 * client's own timing adds the scheduling of every process of the machine (its own, the backend's,
 * another test file's under `--parallel`, whatever else the machine runs); so does the plain
 * event-loop delay (Node's `monitorEventLoopDelay`, prom-client's `nodejs_eventloop_lag_*` at
 * /gateway/metrics): on a 2-core machine running two CPU-bound processes beside the test, the
 * gateway's main thread was seen waiting 143 ms for a CPU in one 154 ms turn in which it used 2 ms
 * of CPU, and blocked for 100 ms in another, neither on a CPU nor waiting for one, while its
 * operators' worker thread (which holds locks the main thread takes too) waited for a CPU.
 *
 * So the monitor (loop-monitor.mjs) samples the loop every 10 ms (a timer, as Node's does) and, on
 * Linux, reads the scheduler's account of each thread of the process (`/proc/self/task/<tid>/
 * schedstat`: time on a CPU, time waiting for one). The gateway's own delay in an interval is the
 * interval less the main thread's waits for a CPU, and less the time it was blocked while another
 * of its threads waited for a CPU (up to that wait): its time on a CPU always counts, so work on the
 * event loop is never left out. Elsewhere it is the interval. A figure is an interval, so it is
 * never below the 10 ms of the timer, and a loop held for 300 ms of CPU shows as about 300 ms.
 *
 * The gateway processes of the latency tests run the monitor: theirs by `loopDelayHandler` at a
 * route of their own, `serve` by loop-monitor-preload.mjs given by {@link loopMonitorEnv}. Also
 * here: the bounds of the unrelated client of those tests, a process of its own (what it sees holds
 * the machine's scheduling, so its bounds allow for a busy machine and still fail when the gateway
 * holds its loop for two seconds), and a stopwatch of the test process's own time, for code under test
 * that runs in the test's process.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';

/** The event-loop delay of a window, ms. */
export interface LoopDelay {
  /** The longest turn, less the time the thread waited for a CPU in it (`Infinity`: the read was not answered). */
  readonly maxMs: number;
  /** The 99th percentile of those. */
  readonly p99Ms: number;
  /** The longest turn as Node measures it (the machine's share included). */
  readonly rawMaxMs: number;
}

/** Reads a gateway's event-loop delay since the previous read, and starts a new window. */
export type LoopDelaySource = () => Promise<LoopDelay>;

export { loopDelayHandler } from './loop-monitor.mjs';

/**
 * The most the unrelated client may see of one request (its whole exchange, in a process of its
 * own) on a busy machine: a gateway that holds its loop for two seconds fails it. (On a 2-core
 * machine running two CPU-bound processes beside the test, the client saw at most 220 ms; with
 * other test runs besides, up to 2 s, while the gateway's own delay stayed under 100 ms.)
 */
export const PROBE_WORST_MS = 2000;
/** The most nine requests in ten may take as the client sees them (with at least ten requests). */
export const PROBE_P90_MS = 500;

/** The event-loop delay {@link loopDelayHandler} answers at `url`. */
export function routeLoopDelay(url: string, timeoutMs = 60_000): LoopDelaySource {
  return async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      return (await res.json()) as LoopDelay;
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') return { maxMs: Infinity, p99Ms: Infinity, rawMaxMs: Infinity };
      throw err;
    }
  };
}

/** What a process started with {@link loopMonitorEnv}'s variables needs, and how to read its monitor. */
export interface LoopMonitorEnv {
  /** The variables to start the gateway process with (beside its own). */
  readonly env: Record<string, string>;
  /** Its event-loop delay, once it runs (waits for its monitor to say where it answers). */
  source(timeoutMs?: number): Promise<LoopDelaySource>;
  /** Removes the folder of the monitor's address. */
  remove(): Promise<void>;
}

/**
 * For a gateway process this test does not write (`serve`): `NODE_OPTIONS` that load
 * loop-monitor-preload.mjs in it, which writes where the monitor answers to a file of a folder of
 * its own.
 */
export async function loopMonitorEnv(): Promise<LoopMonitorEnv> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eag-loop-monitor-'));
  const file = path.join(dir, 'url');
  const preload = new URL('loop-monitor-preload.mjs', import.meta.url).href;
  const options = [process.env['NODE_OPTIONS'], `--import ${preload}`];
  return {
    env: { NODE_OPTIONS: options.filter((o) => o !== undefined && o !== '').join(' '), LOOP_MONITOR_FILE: file },
    async source(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const url = await readFile(file, 'utf8').catch(() => '');
        if (url.endsWith('\n')) return routeLoopDelay(url.trim());
        if (Date.now() > deadline) throw new Error(`the gateway's loop monitor did not start within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** What the unrelated client saw, ms (`Infinity`: not answered in time). */
export interface ProbeFigures {
  readonly count: number;
  readonly median: number;
  readonly p90: number;
  readonly worst: number;
}

export function probeFigures(latencies: readonly number[]): ProbeFigures {
  const sorted = [...latencies].sort((a, b) => a - b);
  const rank = (q: number): number => sorted[Math.max(0, Math.ceil(sorted.length * q) - 1)] ?? NaN;
  return { count: sorted.length, median: rank(0.5), p90: rank(0.9), worst: sorted.at(-1) ?? NaN };
}

/** Whether the client's figures are within {@link PROBE_WORST_MS} and (with ten requests or more) {@link PROBE_P90_MS}. */
export function probeWithinBounds(figures: ProbeFigures): boolean {
  return figures.worst <= PROBE_WORST_MS && (figures.count < 10 || figures.p90 <= PROBE_P90_MS);
}

/** One line of figures: the gateway's loop and the client's requests. */
export function describeFigures(loop: LoopDelay, probe: ProbeFigures): string {
  const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : String(v));
  return (
    `gateway event-loop delay max ${ms(loop.maxMs)} ms (p99 ${ms(loop.p99Ms)}; with the waits for a CPU ${ms(loop.rawMaxMs)}); ` +
    `unrelated client: ${probe.count} requests, median ${ms(probe.median)}, p90 ${ms(probe.p90)}, worst ${ms(probe.worst)} ms`
  );
}

/** Milliseconds this process's main thread has waited for a CPU so far (Linux); `undefined` elsewhere. */
function waitedForCpu(): number | undefined {
  if (!isMainThread) return undefined;
  try {
    const wait = Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
    return Number.isFinite(wait) ? wait : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A stopwatch of this process's own time, for code under test that runs in the test's process: the
 * time since it was started, less the time this thread waited for a CPU meanwhile (Linux; the whole
 * time elsewhere), which is the machine's share (other processes had the cores), not the code's.
 * Time the code spent on a CPU, or waiting for a timer, a socket or a lock, counts.
 */
export function ownStopwatch(): () => number {
  const started = performance.now();
  const waited = waitedForCpu();
  return () => {
    const elapsed = performance.now() - started;
    const now = waitedForCpu();
    return waited === undefined || now === undefined ? elapsed : Math.max(0, elapsed - (now - waited));
  };
}
