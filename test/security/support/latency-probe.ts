/**
 * An unrelated API client, run in a process of its own: a GET of `url` every `intervalMs` for
 * `durationMs`, one at a time over a keep-alive connection from `localAddress`, each given 2 s.
 * Prints `{ latencies, statuses }` as JSON (`null` for a request not answered in time).
 *
 * Its own process, because the latency a client sees is the gateway's delay plus the client's:
 * measured from the test runner, whose heap has grown over the whole suite, a collection pause
 * of the runner counted as the gateway's.
 *
 * Usage: latency-probe.ts <url> <durationMs> <intervalMs> <localAddress>
 */
import { Agent, request } from 'node:http';

const [url, durationArg, intervalArg, localAddress] = process.argv.slice(2);
const durationMs = Number(durationArg);
const intervalMs = Number(intervalArg);
const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: localAddress! });

function get(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url!, { agent, timeout: 2_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', reject);
    req.end();
  });
}

const latencies: Array<number | null> = [];
const statuses: number[] = [];
const deadline = performance.now() + durationMs;
while (performance.now() < deadline) {
  const started = performance.now();
  try {
    statuses.push(await get());
    latencies.push(performance.now() - started);
  } catch {
    latencies.push(null);
  }
  await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
agent.destroy();
process.stdout.write(`${JSON.stringify({ latencies, statuses })}\n`);
