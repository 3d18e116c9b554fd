/**
 * Anything that can write to the gateway's Redis (often reachable, often without a password) is
 * not an instance: two `express-access-gateway serve` instances on the machine's Redis, given one
 * cluster secret, and a plain Redis client of the attacker's. What it writes (a "valid" result
 * for a token the authorization server refuses, a genuine result copied under another token's
 * key, a reset, a sign-out, a node) is ignored and counted in
 * `gateway_cluster_messages_rejected_total{kind}`; what the instances share still works.
 */
import { hash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createClient } from 'redis';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { echoBackend, editJson, exampleCopy } from '../gateway/helpers.js';
import { dropSharedState, stop, type Served } from '../server/support.js';
import { serveOnFreePorts } from './support/serve-ports.js';

const PASSWORD = 'redis-forgery-admin';
const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'x-gateway-console': '1' };
/** What the echo backend answers: a request that got through. */
const RELAYED = 201;

interface Instance {
  readonly id: string;
  readonly api: string;
  readonly admin: string;
  readonly served: Served;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('security: what another Redis client writes is not trusted (forged token results, resets, sign-outs, nodes)', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const keyPrefix = `eagtest-forgery-${suffix}:`;
  const schema = `gw_forgery_${suffix}`;
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let attacker: ReturnType<typeof createClient>;
  const instances: Instance[] = [];
  const a = (): Instance => instances[0]!;
  const b = (): Instance => instances[1]!;

  async function start(id: string): Promise<Instance> {
    const { served, api, admin } = await serveOnFreePorts(['serve', '--config', copy.configFile], {
      ADMIN_PASSWORD: PASSWORD,
      GATEWAY_NODE_ID: id,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      GATEWAY_CLUSTER_SECRET: 'redis-forgery-test-cluster-secret-0123456789',
      GATEWAY_SESSION_SECRET: 'redis-forgery-test-session-secret-0123456789',
      DEBUG: 'express-access-gateway:cluster',
    });
    return { id, api, admin, served };
  }

  async function get(instance: Instance, token: string): Promise<number> {
    const res = await fetch(`${instance.api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    return res.status;
  }

  /** `gateway_cluster_messages_rejected_total{kind}` of an instance (0 when absent). */
  async function rejected(instance: Instance, kind: string): Promise<number> {
    const text = await (await fetch(`${instance.admin}/gateway/metrics`, { headers: adminHeaders })).text();
    const line = text.split('\n').find((l) => l.startsWith(`gateway_cluster_messages_rejected_total{kind="${kind}"} `));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  }

  async function status(
    instance: Instance,
  ): Promise<{ cluster: { appliedGeneration?: number; generation?: number; nodes?: Array<{ id: string }> } }> {
    return (await (await fetch(`${instance.admin}/gateway/admin/status`, { headers: adminHeaders })).json()) as never;
  }

  /** Waits until `check` holds (polling), up to `ms`. */
  async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
      await sleep(50);
    }
  }

  /** The shared result keys of the one token policy, as an attacker reading Redis finds them. */
  async function resultKeys(): Promise<string[]> {
    const keys: string[] = [];
    for await (const batch of attacker.scanIterator({ MATCH: `${keyPrefix}tok:*`, COUNT: 500 }))
      keys.push(...batch.filter((key) => !key.endsWith(':lock')));
    return keys;
  }

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
    attacker = createClient({ url: 'redis://127.0.0.1:6379' });
    attacker.on('error', () => undefined);
    await attacker.connect();
    instances.push(await start('A'), await start('B'));
  });

  after(async () => {
    for (const instance of instances) await stop(instance.served);
    await attacker?.close();
    await dropSharedState(schema, keyPrefix);
    await Promise.all([as?.stop(), echo?.stop(), copy?.remove()]);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed')
      for (const instance of instances) process.stdout.write(`--- ${instance.id}\n${instance.served.output().slice(-20_000)}\n`);
  });

  it('a "valid" token result written by another Redis client, or a genuine one copied under another token\'s key, is ignored: 401 (was 200), counted', async () => {
    // A genuine result in Redis, as any request leaves one.
    const genuine = await as.issueToken('client1', 'client1-secret');
    expect(await get(a(), genuine)).to.equal(RELAYED);
    const genuineKey = (await resultKeys()).find((key) => key.endsWith(`:${hash('sha256', genuine, 'base64url')}`));
    expect(genuineKey, 'the genuine result in Redis').to.be.a('string');
    const stem = genuineKey!.slice(0, genuineKey!.lastIndexOf(':') + 1);
    const keyOf = (token: string): string => `${stem}${hash('sha256', token, 'base64url')}`;
    const before = await rejected(b(), 'token_result');

    // Tokens the authorization server never issued: refused by it, and by B until something is written.
    const forged = `forged-${randomBytes(8).toString('hex')}`;
    const copied = `copied-${randomBytes(8).toString('hex')}`;
    const text = (await attacker.get(genuineKey!))!;
    // Written from scratch: a valid result's JSON, unsigned (as the instances wrote it before they
    // signed); and the genuine entry, whole, copied under another token's key.
    await attacker.set(keyOf(forged), text.slice(text.indexOf('{')), { PX: 60_000 });
    await attacker.set(keyOf(copied), text, { PX: 60_000 });

    expect(await get(b(), forged), 'a token result written by another Redis client').to.equal(401);
    expect(await get(b(), copied), "a genuine result copied under another token's key").to.equal(401);
    // Each refusal read at least once, and the instance shares its own (refusal) results as before.
    expect((await rejected(b(), 'token_result')) - before).to.be.at.least(2);
    expect(await get(b(), genuine), 'the genuine result is still shared').to.equal(RELAYED);
  });

  it('a reset published, or the generation raised with a forged last reset, by another Redis client resets nothing; counted', async () => {
    const token = await as.issueToken('client1', 'client1-secret');
    expect(await get(b(), token)).to.equal(RELAYED);
    const applied = (await status(b())).cluster.appliedGeneration;
    expect(applied).to.be.a('number');
    const introspections = as.stats.introspections;
    const before = await rejected(b(), 'reset');
    const generation = Number(await attacker.get(`${keyPrefix}gen`)) + 1;
    const message = JSON.stringify({ resetId: `forged-${randomBytes(4).toString('hex')}`, generation, origin: 'attacker' });

    // Published on the reset channel, then the generation raised with the last reset forged.
    await attacker.publish(`${keyPrefix}reset`, message);
    await attacker.set(`${keyPrefix}reset:last`, message, { PX: 60_000 });
    await attacker.incr(`${keyPrefix}gen`);
    // Heard (counted as refused, or taken as a reset), then two heartbeats: a node that took the
    // raised generation for a missed reset would have reset by then.
    await eventually(
      async () => (await rejected(b(), 'reset')) - before >= 2 || (await status(b())).cluster.appliedGeneration !== applied,
      5000,
      'the forged resets heard',
    );
    await sleep(2500);
    expect((await status(b())).cluster.appliedGeneration, 'B applied no reset').to.equal(applied);
    expect((await rejected(b(), 'reset')) - before, 'forged resets counted').to.be.at.least(2);
    // B's own cache still holds the token: no introspection (a reset would have cleared it).
    expect(await get(b(), token)).to.equal(RELAYED);
    expect(as.stats.introspections - introspections, 'introspections after the forged resets').to.equal(0);
  });

  it('a sign-out published or kept by another Redis client signs nobody out (an operator stays signed in on B); counted', async () => {
    const signIn = await fetch(`${a().admin}/gateway/operators/session`, {
      method: 'POST',
      headers: { 'x-gateway-console': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    expect(signIn.status).to.equal(200);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const sessionStatus = async (instance: Instance) =>
      (await fetch(`${instance.admin}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } })).status;
    expect(await sessionStatus(b())).to.equal(200);
    // The session's id, as a relayed page or a log could show it (the cookie's signed payload holds it).
    const { n: id } = JSON.parse(Buffer.from(cookie.split('=')[1]!.split('.')[0]!, 'base64url').toString('utf8')) as { n: string };
    const until = Date.now() + 3_600_000;
    const before = await rejected(b(), 'sign_out');

    await attacker.publish(`${keyPrefix}sessions:signed-out`, JSON.stringify({ id, until }));
    await attacker.zAdd(`${keyPrefix}sessions:signed-out:ids`, { score: until, value: id });
    // Heard: counted as refused, or taken as a sign-out.
    await eventually(
      async () => (await rejected(b(), 'sign_out')) - before >= 1 || (await sessionStatus(b())) !== 200,
      5000,
      'the forged sign-out heard',
    );
    expect(await sessionStatus(b()), 'B after a forged sign-out').to.equal(200);
    expect((await rejected(b(), 'sign_out')) - before, 'forged sign-outs counted').to.be.at.least(1);
    // An instance that joins reads the kept sign-outs: not the forged one.
    const late = await start('C');
    try {
      await eventually(
        async () => (await rejected(late, 'sign_out')) >= 1 || (await sessionStatus(late)) !== 200,
        5000,
        'the forged kept sign-out read by C',
      );
      expect(await sessionStatus(late), 'C, started after the forged sign-out').to.equal(200);
    } finally {
      await stop(late.served);
      instances.splice(2);
    }
  });

  it('a node written into the registry by another Redis client is not listed (nor waited for at a reset); counted', async () => {
    const before = await rejected(a(), 'registry');
    const now = Date.now();
    await attacker.set(`${keyPrefix}node:ghost`, JSON.stringify({ id: 'ghost', startedAt: now, heartbeatAt: now }), { PX: 60_000 });
    await attacker.zAdd(`${keyPrefix}nodes`, { score: now, value: 'ghost' });
    const nodes = (await status(a())).cluster.nodes!.map((node) => node.id);
    expect(nodes).to.include('A').and.include('B').and.not.include('ghost');
    expect((await rejected(a(), 'registry')) - before).to.be.at.least(1);
  });

  it('what the instances share still works with one secret: a result written by A is a hit on B, a reset from A reaches B', async () => {
    const token = await as.issueToken('client2', 'client2-secret');
    const introspections = as.stats.introspections;
    expect(await get(a(), token)).to.equal(RELAYED);
    expect(await get(b(), token)).to.equal(RELAYED);
    expect(as.stats.introspections - introspections, 'one introspection for both instances').to.equal(1);
    const applied = (await status(b())).cluster.appliedGeneration!;
    const reset = await fetch(`${a().admin}/gateway/admin/reset-caches`, { method: 'POST', headers: adminHeaders });
    expect(reset.status).to.equal(200);
    const answer = (await reset.json()) as { cluster: { nodes: Array<{ nodeId: string; applied: boolean }>; missing: string[] } };
    expect(answer.cluster.nodes.map((node) => `${node.nodeId}:${node.applied}`).sort()).to.deep.equal(['A:true', 'B:true']);
    expect(answer.cluster.missing).to.deep.equal([]);
    expect((await status(b())).cluster.appliedGeneration).to.be.greaterThan(applied);
  });
});
