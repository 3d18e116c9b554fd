/**
 * An anonymous client flooding the admin listener's state-changing routes, run in a process of
 * its own (so that the test's probes do not wait behind it): POSTs without credentials, without
 * the console header, with wrong Basic credentials and wrong sign-ins, `concurrency` at a time
 * over keep-alive connections, for `durationMs`, and then on until it has sent `minSent` (if given),
 * for `maxMs` at most: a busy machine gives it less of the CPU. Prints `{ sent, statuses, errors,
 * ms }` as JSON.
 *
 * Usage: admin-flood.ts <admin base URL> <durationMs> <concurrency> [minSent maxMs]
 */
import { Agent, request } from 'node:http';

const [base, durationArg, concurrencyArg, minSentArg, maxArg] = process.argv.slice(2);
const url = new URL(base!);
const durationMs = Number(durationArg);
const concurrency = Number(concurrencyArg);
const minSent = Number(minSentArg ?? 0);
const maxMs = Number(maxArg ?? durationMs);
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
const wrongBasic = `Basic ${Buffer.from('admin:not-the-password').toString('base64')}`;

/** The requests an anonymous client can send, in turn: each is audited by today's admin routes. */
const variants: Array<{ path: string; headers: Record<string, string>; body?: string }> = [
  { path: '/gateway/admin/reset-caches', headers: {} },
  { path: '/gateway/admin/reset-caches', headers: { 'x-gateway-console': '1' } },
  { path: '/gateway/admin/forget', headers: { 'x-gateway-console': '1', authorization: wrongBasic } },
  {
    path: '/gateway/operators/session',
    headers: { 'x-gateway-console': '1', 'content-type': 'application/json' },
    body: '{"username":"admin","password":"guess"}',
  },
];

const statuses: Record<string, number> = {};
let sent = 0;
let errors = 0;
const started = Date.now();
const going = (): boolean => {
  const elapsed = Date.now() - started;
  return elapsed < durationMs || (sent < minSent && elapsed < maxMs);
};

function post(i: number): Promise<void> {
  const variant = variants[i % variants.length]!;
  return new Promise((resolve) => {
    const req = request(
      { host: url.hostname, port: url.port, method: 'POST', path: variant.path, headers: variant.headers, agent },
      (res) => {
        statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
        res.resume();
        res.on('end', resolve);
        res.on('error', () => resolve());
      },
    );
    req.on('error', () => {
      errors++;
      resolve();
    });
    req.end(variant.body);
  });
}

async function worker(): Promise<void> {
  while (going()) {
    await post(sent++);
    // A dead gateway refuses connections at once: do not spin.
    if (errors > 0 && errors % 100 === 0) await new Promise((r) => setTimeout(r, 10));
  }
}

await Promise.all(Array.from({ length: concurrency }, worker));
agent.destroy();
process.stdout.write(`${JSON.stringify({ sent, statuses, errors, ms: Date.now() - started })}\n`);
