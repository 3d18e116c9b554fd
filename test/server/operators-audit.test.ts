/**
 * The operators' audit of a real `serve` with its audit file, as docs/configuration-console.md
 * ("The audit log") promises it: every failed sign-in is logged, on the GET routes a script reads
 * with HTTP Basic (the console's records, the audit itself, the configuration, the metrics) as on
 * the others, the first of an address at once and the rest counted; SIGTERM writes the
 * `refused-requests` summary of what was counted.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { AuditEntry } from '../../src/operators/audit.js';
import { openConfig } from '../gateway/helpers.js';
import { freePort, serve, stop, type Served } from './support.js';

const PASSWORD = 'audit-admin-password';
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** One GET over node:http from a chosen local address (the audit and the throttle go by the client's address). */
function get(url: string, localAddress: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("serve: the operators' audit of failed sign-ins", function () {
  this.timeout(60_000);
  let dir: string;
  let served: Served | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'operators-audit-'));
  });
  after(async () => {
    await stop(served);
    await rm(dir, { recursive: true, force: true });
  });

  it('logs failed Basic sign-ins on the GET routes (the first of an address at once), and SIGTERM writes the summary of the others', async () => {
    const config = path.join(dir, 'gateway.config.json');
    const auditFile = path.join(dir, 'audit.jsonl');
    await writeFile(config, JSON.stringify(openConfig('http://127.0.0.1:1')));
    const adminPort = await freePort();
    served = serve(['serve', '--config', config, '--port', '0', '--admin-port', String(adminPort), '--audit-file', auditFile], {
      ADMIN_PASSWORD: PASSWORD,
      LOG_FORMAT: 'json',
    });
    await served.waitFor(/serving APIs at/);
    const admin = `http://127.0.0.1:${adminPort}/gateway`;
    const wrong = { authorization: basic('admin', 'not the password'), 'x-gateway-console': '1' };
    const routes = ['console/api/transactions', 'operators/audit', 'configuration/api/config', 'metrics'];
    // Each route's first failure from an address of its own: each is logged as it is.
    for (const [i, route] of routes.entries())
      expect((await get(`${admin}/${route}`, `127.0.0.${10 + i}`, wrong)).status, route).to.equal(401);
    // Two more from the first address: counted, for the summary.
    for (const route of routes.slice(0, 2)) expect((await get(`${admin}/${route}`, '127.0.0.10', wrong)).status, route).to.equal(401);

    const read = await get(`${admin}/operators/audit?limit=50`, '127.0.0.2', {
      authorization: basic('admin', PASSWORD),
      'x-gateway-console': '1',
    });
    expect(read.status).to.equal(200);
    const { items } = JSON.parse(read.body) as { items: AuditEntry[] };
    const refused = items.filter((e) => e.action === 'sign-in' && e.result === 'refused');
    expect(refused.map((e) => [e.address, e.target, e.status]).sort()).to.deep.equal(
      routes.map((route, i) => [`127.0.0.${10 + i}`, route, 401]).sort(),
    );
    for (const entry of refused) {
      expect(entry.actor).to.equal(null);
      expect(entry.detail).to.equal(`GET ${entry.target!} without valid credentials`);
    }
    expect(JSON.stringify(items)).to.not.include('not the password');

    served.child.kill('SIGTERM');
    expect(await served.exited()).to.equal(0);
    const lines = (await readFile(auditFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditEntry);
    const summaries = lines.filter((e) => e.action === 'refused-requests');
    expect(summaries).to.have.length(1);
    expect(summaries[0]).to.include({ actor: null, address: '127.0.0.10', result: 'refused' });
    expect(summaries[0]!.detail).to.match(/^3 refused requests from 127\.0\.0\.10 between .* \(the first logged on its own\): sign-in 3$/);
    // The structured log says it too.
    expect(served.output()).to.match(/"event":"operator_refused"[^\n]*"action":"refused-requests"/);
  });
});
