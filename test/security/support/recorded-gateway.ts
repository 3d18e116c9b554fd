/**
 * The example's gateway in a process of its own, its memory store holding `RECORDS` recorded
 * transactions of the last 30 minutes ({@link trafficRecords}; none without it): `CONFIG=<file>` is
 * its configuration, `USERS=<file>` its operators (`{ users }`, optional), `ADMIN_PASSWORD` the
 * admin's. Prints `{"url":...,"adminUrl":...,"loopDelayUrl":...}` on one line when it serves: the
 * last answers its event-loop delay (loop-delay.ts), on a listener of its own.
 *
 * With `POLICY_CHECK_ON_THE_LOOP=1`, the control of the latency tests: a third listener of this
 * process (`workUrl`) answers `POST /check` (a policy as text) by checking the policy as the
 * operators' check does, but on this process's event loop, the one that serves the APIs, instead
 * of a worker thread: what a gateway that did its operators' work on the APIs' thread would do.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway, MemoryTransactionStore, serveGateway } from '../../../src/index.js';
import { policyIssues } from '../../../src/configuration/policy-check.js';
import { loopDelayHandler } from './loop-delay.js';
import { trafficRecords } from './traffic-records.js';

const listening = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};
const loopDelayUrl = await listening(createServer(loopDelayHandler()));

const count = Number(process.env.RECORDS ?? 0);
const store = new MemoryTransactionStore({ maxRecords: count + 10_000, maxBytes: 1024 * 1024 * 1024 });
for (const record of trafficRecords(count, Date.now())) store.save(record);
const { users } =
  process.env.USERS === undefined ? { users: undefined } : (JSON.parse(readFileSync(process.env.USERS, 'utf8')) as { users: never });
const gateway = createGateway({
  config: process.env.CONFIG!,
  store,
  admin: { basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD! } },
  ...(users === undefined ? {} : { operators: { users } }),
});
await gateway.ready();
const server = await serveGateway(gateway, { port: 0, adminPort: 0 });
let workUrl: string | undefined;
if (process.env.POLICY_CHECK_ON_THE_LOOP === '1') {
  const work = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      // What the operators' checkPolicy job runs in its worker thread.
      const issues = policyIssues(text, [], 'policy.xml', 'text');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ valid: issues.length === 0, issues }));
    });
  });
  workUrl = await listening(work);
}
process.stdout.write(`${JSON.stringify({ url: server.url, adminUrl: server.adminUrl, loopDelayUrl, workUrl })}\n`);
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
