/**
 * An unrelated API client, run in a process of its own: a GET of `url` every `intervalMs` until its
 * standard input ends, one at a time over a keep-alive connection from `localAddress`, each given
 * 2 s. Prints `{ latencies, statuses }` as JSON (`null` for a request not answered in time).
 *
 * Its own process, because the latency a client sees is the gateway's delay plus the client's:
 * measured from the test runner, whose heap has grown over the whole suite, a collection pause
 * of the runner counted as the gateway's.
 *
 * Usage: latency-probe.ts <url> <intervalMs> <localAddress>
 */
import { Agent } from 'node:http';
import { statusOfGet } from '../../support/status-of-get.js';

const [url, intervalArg, localAddress] = process.argv.slice(2);
const intervalMs = Number(intervalArg);
let stopping = false;
process.stdin.on('end', () => (stopping = true)).resume();
const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: localAddress! });

const latencies: Array<number | null> = [];
const statuses: number[] = [];
while (!stopping) {
  const started = performance.now();
  try {
    statuses.push(await statusOfGet(url!, agent, 2_000));
    latencies.push(performance.now() - started);
  } catch {
    latencies.push(null);
  }
  await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
agent.destroy();
process.stdout.write(`${JSON.stringify({ latencies, statuses })}\n`);
