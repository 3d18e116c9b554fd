/**
 * Traffic control over real `express-access-gateway serve` processes: three instances sharing the
 * machine's Redis (a key prefix of this test's own), the demo authorization server, a backend that
 * counts what it has in flight. One set of processes serves every test of the file.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig, TransactionRecord } from '../../src/index.js';
import { editJson, exampleCopy, listen } from '../gateway/helpers.js';
import { createClient } from 'redis';
import { freePort, serve, stop, type Served } from './support.js';

const PASSWORD = 'traffic-admin';
const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'x-gateway-console': '1' };

interface Instance {
  readonly id: string;
  readonly api: string;
  readonly admin: string;
  readonly served: Served;
}

/** A backend: answers 200 at once, or holds `/slow` until released; counts the most it had in flight. */
async function countingBackend(): Promise<{ url: string; server: Server; inFlight: number; most: number; release(): void }> {
  const held: ServerResponse[] = [];
  const state = {
    url: '',
    server: undefined as unknown as Server,
    inFlight: 0,
    most: 0,
    release() {
      for (const res of held.splice(0)) res.end('released');
    },
  };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.inFlight++;
    state.most = Math.max(state.most, state.inFlight);
    res.on('close', () => state.inFlight--);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    if (req.url?.startsWith('/slow') === true) held.push(res);
    else res.end('ok');
  });
  state.url = await listen(state.server);
  return state;
}

interface Answer {
  status: number;
  headers: Headers;
  body: string;
  ms: number;
}

async function call(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(url, { headers });
  const body = await res.text();
  return { status: res.status, headers: res.headers, body, ms: Date.now() - started };
}

describe('traffic control over three serve instances on Redis', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const keyPrefix = `eagtest-traffic-${suffix}:`;
  let as: DemoAuthServer;
  let backend: Awaited<ReturnType<typeof countingBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  const instances: Instance[] = [];
  const tokens: Record<string, string> = {};

  async function start(id: string): Promise<Instance> {
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve(['serve', '--config', copy.configFile, '--port', String(port), '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: PASSWORD,
      GATEWAY_NODE_ID: id,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      GATEWAY_CLUSTER_SECRET: 'traffic-test-cluster-secret-0123456789',
      // A starved process on a crowded machine must not take Redis for down (that is not what is tested here).
      REDIS_COMMAND_TIMEOUT_MS: '2000',
    });
    await served.waitFor(/serving APIs at/);
    return { id, api: `http://127.0.0.1:${port}/gateway`, admin: `http://127.0.0.1:${adminPort}/gateway`, served };
  }

  before(async () => {
    [as, backend, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), countingBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
      config.apis[0]!.trafficControl = {
        policies: [
          { name: 'per-client', metric: 'requests', limit: 20, windowSeconds: 600, groupBy: ['clientId'], operations: ['getPetById'] },
        ],
      };
      config.apis.push({
        provider: 'Ente',
        name: 'Open',
        version: 1,
        backend: { url: backend.url },
        trafficControl: { policies: [{ name: 'watch', metric: 'requests', limit: 2, windowSeconds: 600, mode: 'warningOnly' }] },
      });
      config.trafficControl = { maxConcurrentRequests: 25, onStoreUnavailable: 'deny' };
    });
    instances.push(...(await Promise.all(['A', 'B', 'C'].map(start))));
    for (const id of ['client1', 'client2']) tokens[id] = await as.issueToken(id, `${id}-secret`);
  });

  after(async () => {
    backend?.release();
    await Promise.all(instances.map((instance) => stop(instance.served)));
    // What the instances left in Redis: their registry and the counts, under this test's prefix.
    const redis = createClient({ url: 'redis://127.0.0.1:6379' });
    await redis.connect();
    for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
    await redis.close();
    await Promise.all([as?.stop(), new Promise((resolve) => backend?.server.close(resolve)), copy?.remove()]);
  });

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const instance of instances)
      process.stderr.write(`--- instance ${instance.id}, last output:\n${instance.served.output().slice(-4000)}\n`);
  });

  const pet = (instance: Instance, client: string) =>
    call(`${instance.api}/Ente/PetStore/v1/pet/10`, { authorization: `Bearer ${tokens[client]!}` });

  it('60 concurrent requests of one client over three instances, limit 20: exactly 20 answered, 40 refused with Retry-After and RateLimit', async () => {
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => pet(instances[i % 3]!, 'client1')));
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 200),
      statuses.join(','),
    ).to.have.length(20);
    expect(
      statuses.filter((s) => s === 429),
      statuses.join(','),
    ).to.have.length(40);
    for (const answer of answers) {
      expect(answer.headers.get('ratelimit-policy')).to.equal('"per-client";q=20;w=600');
      expect(answer.headers.get('x-ratelimit-limit')).to.equal('20');
      if (answer.status === 200) continue;
      expect(answer.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(JSON.parse(answer.body)).to.include({ status: 429, gateway_status: 'protocol:GATEWAY-1371' });
      const retryAfter = Number(answer.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, 600);
      expect(answer.headers.get('ratelimit')).to.equal(`"per-client";r=0;t=${retryAfter}`);
      expect(answer.headers.get('x-ratelimit-remaining')).to.equal('0');
    }
    const remaining = answers.filter((a) => a.status === 200).map((a) => Number(a.headers.get('x-ratelimit-remaining')));
    expect(remaining.sort((x, y) => x - y)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i));
  });

  it('groups by client id: client1 is refused on every instance, client2 has its own 20', async () => {
    for (const instance of instances) expect((await pet(instance, 'client1')).status).to.equal(429);
    const second = await Promise.all(Array.from({ length: 21 }, (_, i) => pet(instances[i % 3]!, 'client2')));
    expect(second.filter((a) => a.status === 200)).to.have.length(20);
    expect(second.filter((a) => a.status === 429)).to.have.length(1);
  });

  it('the records of limited requests name the policy and group (monitoring API, trafficPolicy filter)', async () => {
    const found: TransactionRecord[] = [];
    for (const instance of instances) {
      const res = await fetch(`${instance.admin}/console/api/transactions?outcomeGroup=limited&trafficPolicy=per-client&limit=500`, {
        headers: adminHeaders,
      });
      expect(res.status).to.equal(200);
      found.push(...((await res.json()) as { items: TransactionRecord[] }).items);
    }
    // 40 + 3 of client1, 1 of client2.
    expect(found).to.have.length(44);
    for (const record of found) {
      expect(record.outcome.code).to.equal('RATE_LIMITED');
      expect(record.errorCode).to.equal('ERR_RATE_LIMITED');
      expect(record.traffic).to.deep.include({ result: 'limited', policy: 'per-client', group: `clientId=${record.sender.clientId}` });
    }
    expect(found.filter((r) => r.sender.clientId === 'client2')).to.have.length(1);
  });

  it('warningOnly never refuses, but records the warning and counts it', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => call(`${instances[i % 3]!.api}/Ente/Open/v1/anything`)));
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
    let warned = 0;
    let warnings = 0;
    for (const instance of instances) {
      const res = await fetch(`${instance.admin}/console/api/transactions?trafficPolicy=watch&api=Ente/Open/v1`, { headers: adminHeaders });
      const items = ((await res.json()) as { items: TransactionRecord[] }).items;
      warned += items.filter((r) => r.traffic?.warnings?.includes('watch') === true).length;
      const metrics = await (await fetch(`${instance.admin}/metrics`, { headers: adminHeaders })).text();
      const line = /^gateway_traffic_decisions_total\{api="Ente\/Open\/v1",policy="watch",result="warning"\} (\d+)$/m.exec(metrics);
      warnings += Number(line?.[1] ?? 0);
    }
    // Shared in Redis: the first two of the six are within the limit, the four after it are past it.
    expect(warned).to.equal(4);
    expect(warnings).to.equal(4);
  });

  it('the instance cap: the backend never has more than 25 in flight from one instance; the rest is 429 ERR_INSTANCE_BUSY at once', async () => {
    const a = instances[0]!;
    const slow = Array.from({ length: 25 }, () => call(`${a.api}/Ente/Open/v1/slow`));
    for (let i = 0; i < 400 && backend.inFlight < 25; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(backend.inFlight).to.equal(25);
    const refused = await Promise.all(Array.from({ length: 5 }, () => call(`${a.api}/Ente/Open/v1/fast`)));
    for (const answer of refused) {
      expect(answer.status).to.equal(429);
      expect(JSON.parse(answer.body)).to.include({ gateway_status: 'integration:GATEWAY-1372' });
      expect(answer.headers.get('retry-after')).to.equal('1');
      expect(answer.ms, 'refused at once, not queued').to.be.below(1000);
    }
    expect(backend.most).to.equal(25);
    // The other instances have their own cap; the admin listener is not counted.
    expect((await call(`${instances[1]!.api}/Ente/Open/v1/fast`)).status).to.equal(200);
    expect((await call(`${a.admin}/health/live`)).status).to.equal(200);
    const metrics = await (await fetch(`${a.admin}/metrics`, { headers: adminHeaders })).text();
    expect(/^gateway_concurrent_requests (\d+)$/m.exec(metrics)?.[1]).to.equal('25');
    backend.release();
    expect((await Promise.all(slow)).every((answer) => answer.status === 200)).to.equal(true);
    expect((await call(`${a.api}/Ente/Open/v1/fast`)).status).to.equal(200);
  });

  it('bad traffic control is refused at load: serve exits 2 naming each path; store "redis" without Redis too', async () => {
    const bad = path.join(copy.dir, 'bad-traffic.json');
    await writeFile(
      bad,
      JSON.stringify({
        apis: [
          {
            provider: 'Ente',
            name: 'X',
            version: 1,
            backend: { url: 'http://127.0.0.1:1' },
            trafficControl: {
              policies: [
                { name: 'zero', metric: 'requests', limit: 0, windowSeconds: 1 },
                { name: 'negative', metric: 'requests', limit: -5, windowSeconds: 1 },
                { name: 'half', metric: 'concurrentRequests', limit: 2.5 },
                { name: 'grouped', metric: 'requests', limit: 1, windowSeconds: 1, groupBy: ['tenant'] },
                { name: 'zero', metric: 'concurrentRequests', limit: 1 },
              ],
            },
          },
        ],
      }),
    );
    const served = serve(['serve', '--config', bad, '--port', '0', '--admin-port', '0']);
    expect(await served.exited()).to.equal(2);
    const output = served.output();
    for (const issue of [
      'apis[0].trafficControl.policies[0].limit: must be a positive integer',
      'apis[0].trafficControl.policies[1].limit: must be a positive integer',
      'apis[0].trafficControl.policies[2].limit: must be a positive integer',
      'apis[0].trafficControl.policies[3].groupBy[0]: must be clientId, subject, issuer, clientAddress, api, operation',
    ])
      expect(output).to.include(issue);
    // The duplicate name is a rule beside the schema: said once the shapes are right.
    const duplicate = path.join(copy.dir, 'duplicate.json');
    await writeFile(
      duplicate,
      JSON.stringify({
        trafficControl: { store: 'redis', policies: [{ name: 'twice', metric: 'concurrentRequests', limit: 1 }] },
        apis: [
          {
            provider: 'Ente',
            name: 'X',
            version: 1,
            backend: { url: 'http://127.0.0.1:1' },
            trafficControl: { policies: [{ name: 'twice', metric: 'concurrentRequests', limit: 1 }] },
          },
        ],
      }),
    );
    const twice = serve(['serve', '--config', duplicate, '--port', '0', '--admin-port', '0']);
    expect(await twice.exited()).to.equal(2);
    expect(twice.output()).to.include('apis[0].trafficControl.policies[0].name: "twice" is already the name of another policy');
    // Without REDIS_URL: the file's store "redis" cannot be had.
    await editJson<Record<string, unknown>>(duplicate, (document) => {
      delete (document['apis'] as Array<Record<string, unknown>>)[0]!['trafficControl'];
    });
    const noRedis = serve(['serve', '--config', duplicate, '--port', '0', '--admin-port', '0']);
    expect(await noRedis.exited()).to.equal(2);
    expect(noRedis.output()).to.include('trafficControl.store: is redis, and the gateway has no Redis');
  });
});
