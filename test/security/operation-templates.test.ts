/**
 * Issue 25, finding 2: operation templates are matched on every request before the token check,
 * and OpenAPI imports order templates against each other. Played as an anonymous client of
 * `express-access-gateway serve` (the built command, a child process) with a
 * `/days/{year}-{month}-{day}` operation: the gateway's own event-loop delay while the attack is
 * answered (support/loop-delay.ts; its control is in xacml-redos.test.ts), and an unrelated client
 * meanwhile; and
 * as an admin importing a vendor's OpenAPI document through the configuration API.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { expectNotDelayed, latencyDuring } from '../authorize/helpers/gateway-process.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from '../configuration/helpers.js';
import { stop, type Served } from '../server/support.js';
import { backendProcess, type BackendProcess } from './support/backend-process.js';
import { loopMonitorEnv, type LoopDelaySource, type LoopMonitorEnv } from './support/loop-delay.js';
import { serveOnFreePorts } from './support/serve-ports.js';

const CALENDAR = '/gateway/Ente/Calendar/v1';
const ECHO = '/gateway/Ente/Echo/v1';
const BASIC = `Basic ${Buffer.from('admin:templates-admin').toString('base64')}`;

interface Problem {
  status: number;
  gateway_status: string;
  detail: string;
}

describe('security: operation templates cannot stall the gateway (issue 25, finding 2)', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: BackendProcess;
  let dir: string;
  let configFile: string;
  let served: Served;
  let api: string;
  let admin: string;
  let monitor: LoopMonitorEnv | undefined;
  let loopDelay: LoopDelaySource;

  before(async () => {
    // The echo in a process of its own: a collection pause of the test runner is not the gateway's delay.
    [as, echo] = await Promise.all([startDemoAuthServer({ port: 0 }), backendProcess('echo')]);
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-templates-'));
    configFile = path.join(dir, 'gateway.config.json');
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Calendar',
          version: 1,
          backend: { url: `${echo.url}/calendar` },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
          operations: [
            { name: 'getDay', method: 'GET', path: '/days/{year}-{month}-{day}' },
            { name: 'listDays', method: 'GET', path: '/days' },
          ],
        },
        { provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url } },
      ],
    };
    await writeFile(configFile, JSON.stringify(config));
  });
  after(async () => {
    await Promise.all([as?.stop(), echo?.stop(), dir && rm(dir, { recursive: true, force: true })]);
  });
  // A gateway per test: on a vulnerable gateway the attack freezes it for minutes.
  beforeEach(async () => {
    monitor = await loopMonitorEnv();
    ({ served, api, admin } = await serveOnFreePorts(
      ['serve', '--config', configFile],
      { ADMIN_PASSWORD: 'templates-admin', ...monitor.env },
      40_000,
    ));
    loopDelay = await monitor.source();
  });
  afterEach(async () => {
    if (served?.child.exitCode === null) served.child.kill('SIGKILL');
    await stop(served);
    await monitor?.remove();
  });

  const unrelated = () => `${api}${ECHO}/ping`;

  for (const dashes of [2_400, 4_000, 8_000]) {
    it(`an anonymous request of ${dashes} '-' in the templated segment is answered 404 at once; an unrelated API request is not delayed by more than 100 ms`, async () => {
      const target = `${api}${CALENDAR}/days/${'-'.repeat(dashes)}/x`;
      const report = await latencyDuring((signal) => fetch(target, { signal }), unrelated(), { warmUp: true, loopDelay });
      expectNotDelayed(report, 100);
      expect(
        report.statuses.every((s) => s === 201),
        `statuses ${report.statuses.join(', ')}`,
      ).to.equal(true);
      expect(report.attack).to.have.property('status', 404);
      expect(JSON.parse((report.attack as { body: string }).body)).to.include({ status: 404, gateway_status: 'protocol:GATEWAY-1377' });
      const seen = await echo.seen();
      expect(
        seen.some((one) => one.url === '/ping'),
        'the unrelated requests reached the backend',
      ).to.equal(true);
      expect(seen.some((one) => one.url.includes('---'))).to.equal(false);
    });
  }

  it('the template still takes its requests: a matching segment of thousands of `-` is routed (400: no token), a date too', async () => {
    const long = await fetch(`${api}${CALENDAR}/days/${'-'.repeat(8_000)}`);
    expect(long.status).to.equal(400);
    expect(((await long.json()) as Problem).gateway_status).to.equal('protocol:GATEWAY-1366');
    const token = await as.issueToken('client1', 'client1-secret');
    const day = await fetch(`${api}${CALENDAR}/days/2024-01-02`, { headers: { authorization: `Bearer ${token}` } });
    expect(day.status).to.equal(201);
    expect(((await day.json()) as { url: string }).url).to.equal('/calendar/days/2024-01-02');
    expect((await fetch(`${api}${CALENDAR}/days/2024-01`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(404);
  });

  it('a request target over 8 KiB is answered 414 problem+json before routing or any token work, and recorded; 8 KiB exactly is read', async () => {
    const prefix = `${CALENDAR}/days/`;
    const path8k = `${prefix}${'-'.repeat(8192 - prefix.length)}`;
    const within = await fetch(`${api}${path8k}`);
    expect(within.status).to.equal(400); // routed, then no token
    await within.arrayBuffer();
    for (const over of [`${path8k}-`, `${CALENDAR}/days/2024-01-02?q=${'x'.repeat(9000)}`, `${ECHO}/${'a'.repeat(9000)}`]) {
      const res = await fetch(`${api}${over}`, { headers: { authorization: 'Bearer not-looked-at' } });
      expect(res.status, over.slice(0, 40)).to.equal(414);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(res.headers.get('gateway-transaction-id')).to.be.a('string');
      const problem = (await res.json()) as Problem;
      expect(problem).to.include({
        status: 414,
        gateway_status: 'protocol:GATEWAY-414',
        detail: "L'indirizzo della richiesta supera la lunghezza massima consentita",
      });
    }
    expect((await echo.seen()).some((seen) => seen.url.length > 8000)).to.equal(false);
    // Records are stored when each answer ends: a moment later.
    let refused: Array<string | undefined> = [];
    for (let i = 0; i < 50 && refused.length < 3; i++) {
      const records = await fetch(`${admin}/gateway/console/api/transactions`, {
        headers: { authorization: BASIC, 'x-gateway-console': '1' },
      });
      const { items } = (await records.json()) as { items: Array<{ status: number; errorCode?: string }> };
      refused = items.filter((r) => r.status === 414).map((r) => r.errorCode);
      if (refused.length < 3) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refused).to.deep.equal(['ERR_URI_TOO_LONG', 'ERR_URI_TOO_LONG', 'ERR_URI_TOO_LONG']);
  });
});

describe('security: an OpenAPI import cannot stall the gateway (issue 25, finding 2)', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  const IMPORT = '/gateway/configuration/api/apis/Ente/PetStore/1/operations/openapi';

  /** An OpenAPI 3.1 document of the given paths, each with its `{...}` parameters declared. */
  function document(paths: Array<[string, string[]]>): string {
    const ok = { responses: { '200': { description: 'ok' } } };
    const items: Record<string, unknown> = {};
    for (const [template, methods] of paths) {
      const names = [...template.matchAll(/\{([^}/]+)\}/g)].map((m) => m[1]!);
      const item: Record<string, unknown> = {
        parameters: names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      };
      for (const method of methods) item[method] = { operationId: `${method}:${template}`, ...ok };
      items[template] = item;
    }
    return JSON.stringify({ openapi: '3.1.0', info: { title: 'Vendor', version: '1' }, paths: items });
  }

  before(async () => {
    // The operators' work of this gateway runs in this test process's worker threads: on a crowded
    // machine the import of 6,000 operations can go past the default budget of 10 s.
    pet = await startPetstore({ operatorWork: { timeoutMs: 45_000 } });
    ada = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
  });
  after(() => pet?.stop());

  it('imports a vendor document of 6,000 operations, each concrete path before the template that would take its requests', async function () {
    // Ordering them compared every pair, with two regular expressions each: 27 s of the event loop.
    this.timeout(60_000);
    const paths: Array<[string, string[]]> = [];
    for (let i = 0; i < 2000; i++) paths.push([`/resource${i}/{id}`, ['get', 'delete']], [`/resource${i}/search`, ['get']]);
    const res = await ada.json(IMPORT, 'POST', { text: document(paths), mode: 'replace', dryRun: true });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { changes: { added: string[] } };
    expect(body.changes.added).to.have.length(6000);
    const saved = await ada.json(IMPORT, 'POST', { text: document(paths.slice(0, 600)), mode: 'replace' });
    expect(saved.status).to.equal(200);
    const names = (await pet.onDisk()).apis[0]!.operations!.map((op) => op.name);
    expect(names.slice(0, 3)).to.deep.equal(['get:/resource0/search', 'get:/resource0/{id}', 'delete:/resource0/{id}']);
  });

  it('refuses with 422 a document whose templates overlap by the thousand, instead of comparing them all', async function () {
    this.timeout(60_000);
    const paths: Array<[string, string[]]> = [];
    for (let i = 0; i < 6000; i++) paths.push([`/a{x}${i}`, ['get']]);
    const res = await ada.json(IMPORT, 'POST', { text: document(paths), mode: 'replace', dryRun: true });
    expect(res.status).to.equal(422);
    const problem = (await res.json()) as { detail: string; issues: Array<{ path: string; message: string }> };
    expect(problem.detail).to.match(/path templates overlap too much to be ordered/);
    expect(problem.issues[0]).to.include({ path: 'paths' });
    // The gateway goes on serving.
    expect((await pet.putPetAs('client1')).status).to.equal(200);
  });
});
