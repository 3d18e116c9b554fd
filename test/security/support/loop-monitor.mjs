// The event-loop monitor of the latency tests' gateway processes (see loop-delay.ts, which says why
// it leaves out the machine's share of each turn). Plain JavaScript, so that a process that runs
// without tsx (`serve`, the built command) can load it: loop-monitor-preload.mjs.
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { createHistogram } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

/** The monitor's resolution, ms: prom-client's default (`eventLoopMonitoringPrecision`). */
export const RESOLUTION_MS = 10;

/**
 * The scheduler's account of this process's threads (Linux: `/proc/self/task/<tid>/schedstat`, in
 * ns: time on a CPU, time waiting for one): a function that answers, since its previous call, the
 * main thread's time on a CPU and waiting for one, and the longest any other thread of the process
 * waited for one, in ms; `undefined` where that cannot be read (not Linux, or not the main thread,
 * whose id is the process's: a worker thread's is not known here).
 */
function schedulerAccount() {
  if (!isMainThread) return undefined;
  const main = String(process.pid);
  const buffer = Buffer.alloc(256);
  // An open file per thread, read again from its start at each sample.
  const files = new Map();
  const stat = (tid) => {
    try {
      let fd = files.get(tid);
      if (fd === undefined) files.set(tid, (fd = openSync(`/proc/self/task/${tid}/schedstat`, 'r')));
      const [cpu, wait] = buffer
        .toString('latin1', 0, readSync(fd, buffer, 0, buffer.length, 0))
        .split(' ')
        .map(Number);
      return Number.isFinite(cpu) && Number.isFinite(wait) ? { cpu, wait } : undefined;
    } catch {
      return undefined; // a thread that ended meanwhile
    }
  };
  if (stat(main) === undefined) return undefined;
  let tids = [];
  let listed = 0;
  const sample = () => {
    // The threads listed again every tenth sample: they come and go rarely.
    if (listed++ % 10 === 0) {
      tids = readdirSync('/proc/self/task');
      for (const [tid, fd] of files) {
        if (!tids.includes(tid)) {
          files.delete(tid);
          closeSync(fd);
        }
      }
    }
    const now = new Map();
    for (const tid of tids) {
      const figures = stat(tid);
      if (figures !== undefined) now.set(tid, figures);
    }
    return now;
  };
  let seen = sample();
  return () => {
    const now = sample();
    const delta = (tid, field) => ((now.get(tid)?.[field] ?? 0) - (seen.get(tid)?.[field] ?? 0)) / 1e6;
    let othersWait = 0;
    for (const tid of now.keys()) if (tid !== main) othersWait = Math.max(othersWait, delta(tid, 'wait'));
    const figures = { cpu: delta(main, 'cpu'), wait: delta(main, 'wait'), othersWait };
    seen = now;
    return figures;
  };
}

/**
 * The gateway's own share of an interval of its loop: all of it but the main thread's waits for a
 * CPU, and but the time it was blocked (neither on a CPU nor waiting for one) while another of its
 * threads waited for a CPU, up to that wait: the threads of a process wait on each other's locks
 * (the allocator's, the memory map's, the thread pool's), and one that holds a lock while it waits
 * for a CPU holds up the others. Its time on a CPU is always its own.
 */
function ownShare(interval, { cpu, wait, othersWait }) {
  const blocked = Math.max(0, interval - cpu - wait);
  return interval - wait - Math.min(blocked, othersWait);
}

/** Starts monitoring this thread's event loop; each `read()` answers the window since the previous one. */
export function monitorLoop() {
  const account = schedulerAccount();
  let own = createHistogram();
  let raw = createHistogram();
  let last = performance.now();
  // Histograms of microseconds (they hold integers from 1).
  const us = (ms) => Math.max(1, Math.round(ms * 1000));
  const interval = () => {
    const now = performance.now();
    const ms = now - last;
    last = now;
    return { ms, own: account === undefined ? ms : ownShare(ms, account()) };
  };
  setInterval(() => {
    const { ms, own: mine } = interval();
    raw.record(us(ms));
    own.record(us(mine));
  }, RESOLUTION_MS).unref();
  return {
    read() {
      // The turn in progress (this read's) counts too: a loop held until now shows.
      const current = interval();
      const figures = {
        maxMs: Math.max(own.max / 1000, current.own),
        p99Ms: own.percentile(99) / 1000,
        rawMaxMs: Math.max(raw.max / 1000, current.ms),
      };
      own = createHistogram();
      raw = createHistogram();
      return figures;
    },
  };
}

/**
 * In a gateway process: a request handler that answers the process's event-loop delay since its
 * previous request as JSON (`{ maxMs, p99Ms, rawMaxMs }`), and starts a new window.
 */
export function loopDelayHandler() {
  const monitor = monitorLoop();
  return (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(monitor.read()));
  };
}
