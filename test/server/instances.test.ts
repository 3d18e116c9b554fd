/**
 * Several gateway instances behaving as one: three `express-access-gateway serve` processes on
 * loopback sharing the machine's Redis and PostgreSQL (each through a TCP proxy the test controls,
 * so that a server can be cut off without stopping it), the demo authorization server counting
 * its introspection calls.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig, TransactionRecord } from '../../src/index.js';
import { echoBackend, editJson, exampleCopy } from '../gateway/helpers.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { serveOnFreePorts } from '../security/support/serve-ports.js';
import { dropSharedState, stop, type Served } from './support.js';

const PASSWORD = 'instances-admin';
const basic = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
const adminHeaders = { authorization: basic, 'x-gateway-console': '1' };
const DENY_ALL = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="deny-all"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/><Rule RuleId="deny" Effect="Deny"/></Policy>`;

interface Instance {
  readonly id: string;
  readonly api: string;
  readonly admin: string;
  served: Served;
}

/** What the echo backend answers: a request that got through. */
const RELAYED = 201;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function get(instance: Instance, token: string): Promise<number> {
  const res = await fetch(`${instance.api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('several instances behave as one (Redis and PostgreSQL)', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const schema = `gw_instances_${suffix}`;
  const keyPrefix = `eagtest-${suffix}:`;
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;
  const instances: Instance[] = [];

  async function start(id: string): Promise<Instance> {
    const { served, api, admin } = await serveOnFreePorts(['serve', '--config', copy.configFile], {
      ADMIN_PASSWORD: PASSWORD,
      GATEWAY_NODE_ID: id,
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      REDIS_KEY_PREFIX: keyPrefix,
      // What the instances share on Redis is signed with it.
      GATEWAY_CLUSTER_SECRET: 'instances-test-cluster-secret-0123456789',
      // Redis on loopback answers in well under a millisecond; on a crowded test machine a starved
      // process may read the reply after the default 100 ms, and would rightly go on without Redis,
      // which is not what these tests look at (Redis cut by the proxy fails at once, not by timeout).
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      // One secret: a session opened on one instance holds on the others, and so does its sign-out.
      GATEWAY_SESSION_SECRET: 'instances-test-session-secret-0123456789',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxy.port}/test`,
      DATABASE_SCHEMA: schema,
      // Shown only when a test fails (see afterEach): what each instance saw of Redis and PostgreSQL.
      DEBUG: 'express-access-gateway:*',
    });
    return { id, api, admin, served };
  }

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
    [redisProxy, pgProxy] = await Promise.all([startTcpProxy({ port: 6379 }), startTcpProxy({ port: 5432 })]);
    // Started one after the other would hide a migration race: all three at once.
    instances.push(...(await Promise.all(['A', 'B', 'C'].map(start))));
  });

  after(async () => {
    await Promise.all(instances.map((instance) => stop(instance.served)));
    await dropSharedState(schema, keyPrefix);
    await Promise.all([redisProxy?.close(), pgProxy?.close(), as?.stop(), echo?.stop(), copy?.remove()]);
  });

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const instance of instances)
      process.stderr.write(`--- instance ${instance.id}, last output:\n${instance.served.output().slice(-4000)}\n`);
  });

  const [a, b, c] = [() => instances[0]!, () => instances[1]!, () => instances[2]!];

  it('a token validated through A is not introspected again by B and C', async () => {
    const token = await as.issueToken('client1', 'client1-secret');
    const before = as.stats.introspections;
    expect(await get(a(), token)).to.equal(RELAYED);
    expect(await get(b(), token)).to.equal(RELAYED);
    expect(await get(c(), token)).to.equal(RELAYED);
    expect(as.stats.introspections - before).to.equal(1);
  });

  it('50 concurrent requests with one fresh token over three instances: exactly one introspection', async () => {
    const token = await as.issueToken('client2', 'client2-secret');
    const before = as.stats.introspections;
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => get(instances[i % 3]!, token)));
    expect(
      statuses.every((s) => s === RELAYED),
      statuses.join(','),
    ).to.equal(true);
    expect(as.stats.introspections - before).to.equal(1);
  });

  it('ResetAllCaches on A: B and C apply the changed policy before A answers (told through Redis), and the answer lists the three', async () => {
    const token = await as.issueToken('client1', 'client1-secret');
    for (const instance of instances) expect(await get(instance, token)).to.equal(RELAYED);
    const original = path.join(copy.dir, 'policies', 'petstore.xml');
    await writeFile(path.join(copy.dir, 'policies', 'deny-all.xml'), DENY_ALL);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.apis[0]!.authorization = { mode: 'xacml-Policy', policy: 'policies/deny-all.xml' };
    });
    try {
      const res = await fetch(`${a().admin}/gateway/admin/reset-caches`, { method: 'POST', headers: adminHeaders });
      expect(res.status).to.equal(200);
      const answer = (await res.json()) as { cluster: { nodes: Array<{ nodeId: string; applied: boolean }>; missing: string[] } };
      expect(answer.cluster.nodes.map((n) => n.nodeId).sort()).to.deep.equal(['A', 'B', 'C']);
      // B and C reported their reset to A while A waited for them (resetWaitMs, 2 s by A's clock, a
      // wall-clock time this test's would only stretch on a busy machine): told through Redis at
      // once, not at a heartbeat. And they refuse the next request.
      expect(answer.cluster.nodes.every((n) => n.applied)).to.equal(true);
      expect(answer.cluster.missing).to.deep.equal([]);
      for (const instance of [b(), c()]) expect(await get(instance, token)).to.equal(403);
      const status = (await (await fetch(`${c().admin}/gateway/admin/status`, { headers: adminHeaders })).json()) as {
        cluster: { nodes: Array<{ id: string }> };
      };
      expect(status.cluster.nodes.map((n) => n.id).sort()).to.deep.equal(['A', 'B', 'C']);
    } finally {
      await editJson<GatewayConfig>(copy.configFile, (config) => {
        config.apis[0]!.authorization = { mode: 'xacml-Policy', policy: path.relative(copy.dir, original) };
      });
      const res = await fetch(`${b().admin}/gateway/admin/reset-caches`, { method: 'POST', headers: adminHeaders });
      expect(res.status).to.equal(200);
    }
    for (const instance of instances) expect(await get(instance, token)).to.equal(RELAYED);
  });

  it('an operator signed out on A is refused by B and C once it is published on Redis, and by an instance started later', async () => {
    const signIn = await fetch(`${a().admin}/gateway/operators/session`, {
      method: 'POST',
      headers: { 'x-gateway-console': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    expect(signIn.status).to.equal(200);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const { csrfToken } = (await signIn.json()) as { csrfToken: string };
    const status = async (instance: Instance) =>
      (await fetch(`${instance.admin}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } })).status;
    expect([await status(a()), await status(b()), await status(c())]).to.deep.equal([200, 200, 200]);
    const signOut = await fetch(`${a().admin}/gateway/operators/session`, {
      method: 'DELETE',
      headers: { cookie, 'x-gateway-console': '1', 'x-csrf-token': csrfToken },
    });
    expect(signOut.status).to.equal(204);
    // Published on Redis, heard within milliseconds on a quiet machine; nothing else would tell B
    // and C (no sign-out is read again but when an instance subscribes): 5 s is for a busy machine.
    const started = Date.now();
    let statuses: number[] = [];
    while (Date.now() - started < 5000) {
      statuses = [await status(a()), await status(b()), await status(c())];
      if (statuses.every((s) => s === 401)) break;
      await sleep(50);
    }
    expect(statuses).to.deep.equal([401, 401, 401]);
    // An instance started after the sign-out knows it too (read from Redis when it joins).
    const late = await start('D');
    try {
      expect(await status(late)).to.equal(401);
    } finally {
      await stop(late.served);
    }
  });

  it("records of all three instances are read from C's console, with their node ids", async () => {
    const token = await as.issueToken('client1', 'client1-secret');
    const ids: string[] = [];
    for (const instance of instances) {
      const res = await fetch(`${instance.api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      ids.push(res.headers.get('gateway-transaction-id')!);
    }
    // Written off the request path: within the store's flush delay (a little later on a busy machine).
    const nodes: string[] = [];
    for (const id of ids) {
      let res = await fetch(`${c().admin}/gateway/console/api/transactions/${id}`, { headers: adminHeaders });
      for (let i = 0; i < 50 && res.status === 404; i++) {
        await res.arrayBuffer();
        await sleep(200);
        res = await fetch(`${c().admin}/gateway/console/api/transactions/${id}`, { headers: adminHeaders });
      }
      expect(res.status, id).to.equal(200);
      nodes.push(((await res.json()) as TransactionRecord).nodeId!);
    }
    expect(nodes).to.deep.equal(['A', 'B', 'C']);
  });

  it('PostgreSQL unreachable for 30 s under load, then back: every answer unaffected, every record present once', async () => {
    const token = await as.issueToken('client2', 'client2-secret');
    const sent: string[] = [];
    const send = async (instance: Instance): Promise<void> => {
      const res = await fetch(`${instance.api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      expect(res.status).to.equal(RELAYED);
      sent.push(res.headers.get('gateway-transaction-id')!);
    };
    pgProxy.cut();
    const until = Date.now() + 30_000;
    while (Date.now() < until) await Promise.all(instances.map(send));
    pgProxy.restore();
    const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await client.connect();
    try {
      let found = 0;
      for (let i = 0; i < 100 && found < sent.length; i++) {
        await sleep(200);
        const { rows } = await client.query(
          `SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "${schema}".gateway_transactions WHERE id = ANY($1)`,
          [sent],
        );
        found = rows[0].n;
        expect(rows[0].d).to.equal(rows[0].n);
      }
      expect(sent.length).to.be.above(100);
      expect(found).to.equal(sent.length);
    } finally {
      await client.end();
    }
  });

  it('Redis unreachable under load: every answer still right, no 5xx; sharing resumes once it is back', async () => {
    const good = await as.issueToken('client1', 'client1-secret');
    const statuses: number[] = [];
    redisProxy.cut();
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const round = await Promise.all(instances.flatMap((instance) => [get(instance, good), get(instance, 'not-a-token-at-all')]));
      statuses.push(...round);
    }
    expect(statuses.filter((s, i) => (i % 2 === 0 ? s !== RELAYED : s !== 401))).to.deep.equal([]);
    redisProxy.restore();
    // Sharing back: within a few seconds, a fresh token on A is a shared hit on B.
    let shared = false;
    for (let attempt = 0; attempt < 20 && !shared; attempt++) {
      await sleep(500);
      const fresh = await as.issueToken('client1', 'client1-secret');
      const before = as.stats.introspections;
      expect(await get(a(), fresh)).to.equal(RELAYED);
      expect(await get(b(), fresh)).to.equal(RELAYED);
      shared = as.stats.introspections - before === 1;
    }
    expect(shared).to.equal(true);
  });

  it('an instance killed under load leaves the others unaffected', async () => {
    const token = await as.issueToken('client2', 'client2-secret');
    const victim = b();
    const load = (async () => {
      const statuses: number[] = [];
      const until = Date.now() + 2000;
      while (Date.now() < until) statuses.push(...(await Promise.all([get(a(), token), get(c(), token)])));
      return statuses;
    })();
    await sleep(500);
    victim.served.child.kill('SIGKILL');
    const statuses = await load;
    expect(statuses.length).to.be.above(10);
    expect(statuses.every((s) => s === RELAYED)).to.equal(true);
    // The others still answer ResetAllCaches, and say that B is gone once its heartbeat expires
    // (3 s: asked again until then, for 15 s on a busy machine).
    await sleep(3000);
    let nodes: string[] = [];
    for (let i = 0; i < 25; i++) {
      const res = await fetch(`${a().admin}/gateway/admin/reset-caches`, { method: 'POST', headers: adminHeaders });
      expect(res.status).to.equal(200);
      nodes = ((await res.json()) as { cluster: { nodes: Array<{ nodeId: string }> } }).cluster.nodes.map((n) => n.nodeId).sort();
      if (nodes.length === 2) break;
      await sleep(500);
    }
    expect(nodes).to.deep.equal(['A', 'C']);
  });
});
