// Loaded into a gateway process that a test does not write (`serve`), by `--import` in the
// `NODE_OPTIONS` of loop-delay.ts's `loopMonitorEnv`: runs the event-loop monitor on the process's
// main thread, answering at a listener of its own on loopback, and writes that listener's URL and a
// newline to the file `LOOP_MONITOR_FILE` names. Nothing in worker threads, nor in the processes
// this one starts (the variable is removed).
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { isMainThread } from 'node:worker_threads';
import { loopDelayHandler } from './loop-monitor.mjs';

const file = process.env['LOOP_MONITOR_FILE'];
delete process.env['LOOP_MONITOR_FILE'];
if (isMainThread && file !== undefined) {
  const server = createServer(loopDelayHandler());
  server.listen(0, '127.0.0.1', () => {
    writeFileSync(file, `http://127.0.0.1:${server.address().port}\n`);
  });
  // The gateway stops as it would without it.
  server.unref();
}
