/**
 * The unrelated client of {@link ./gateway-process.ts}'s `latencyDuring`, in a process of its own:
 * GETs `url` one at a time, the next 10 ms after the previous started (or as soon as it is
 * answered, if later), each given `patienceMs`, until its standard input ends. Writes a line per
 * request: `<ms> <status>`, or `timeout`.
 *
 * Its own process, because the latency a client sees is the gateway's delay plus the client's:
 * timed from the test runner, whose heap grows over the whole suite (and which may be sending the
 * attack itself), a collection pause of the runner counted as the gateway's.
 *
 * Usage: latency-probe-main.ts <url> <patienceMs>
 */
import { Agent } from 'node:http';
import { statusOfGet } from '../../support/status-of-get.js';

const [url, patienceArg] = process.argv.slice(2);
const patienceMs = Number(patienceArg);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let stopping = false;
process.stdin.on('end', () => (stopping = true)).resume();

async function probe(): Promise<void> {
  const started = performance.now();
  try {
    const status = await statusOfGet(url!, agent, patienceMs);
    process.stdout.write(`${(performance.now() - started).toFixed(2)} ${status}\n`);
  } catch {
    process.stdout.write('timeout\n');
  }
}

while (!stopping) await Promise.all([probe(), new Promise((resolve) => setTimeout(resolve, 10))]);
agent.destroy();
