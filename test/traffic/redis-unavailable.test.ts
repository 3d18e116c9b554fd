/**
 * The Redis store on a Redis of the test's own: one command per decision (Redis's own count), a
 * script Redis lost sent again, and Redis down (killed under load, or frozen): no exception, a
 * decision within the command timeout and a little, each `onStoreUnavailable` mode, the local
 * share kept, and Redis used again once it is back. A decision's time is this process's own
 * (test/security/support/loop-delay.ts): the time it waited for a CPU, the machine's, left out.
 */
import { expect } from 'chai';
import { connectRedis, TIMEOUTS_TO_OPEN, type RedisConnection } from '../../src/cluster/redis.js';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { createTrafficLimiter, type TrafficLimiter } from '../../src/traffic/limiter.js';
import type { TrafficControlSection } from '../../src/traffic/schema.js';
import type { TrafficDecision } from '../../src/traffic/types.js';
import type { AddressInfo } from 'node:net';
import express from 'express';
import request from 'supertest';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { trafficControl } from '../../src/traffic/middleware.js';
import { plainClient, sleep, until, type PlainClient } from '../cluster/helpers.js';
import { ownStopwatch } from '../security/support/loop-delay.js';
import { facts } from './helpers.js';
import { ThrowawayRedis } from './redis-server.js';

const TIMEOUT_MS = 100;
/** What a decision may take past the command timeout: the timer's turn and the local store (this process's own time). */
const MARGIN_MS = 150;

describe('traffic control with Redis unavailable', function () {
  this.timeout(60_000);
  let server: ThrowawayRedis;
  let connections: RedisConnection[];
  let limiters: TrafficLimiter[];

  before(async () => {
    server = await ThrowawayRedis.start();
  });
  after(async () => {
    await server.kill();
  });
  beforeEach(async () => {
    connections = [];
    limiters = [];
  });
  afterEach(async () => {
    server.thaw();
    for (const limiter of limiters) await limiter.close();
    for (const connection of connections) await connection.close();
    // Every test starts with a Redis that answers.
    if (!(await server.answers())) await server.restart();
  });

  async function instance(
    section: TrafficControlSection,
    liveInstances?: () => number | undefined,
    commandTimeoutMs = TIMEOUT_MS,
  ): Promise<{ limiter: TrafficLimiter; redis: RedisConnection }> {
    const redis = await connectRedis(server.url, {
      keyPrefix: 'eag:',
      commandTimeoutMs,
      retryAfterMs: 300,
      maxReconnectDelayMs: 200,
    });
    connections.push(redis);
    const limiter = createTrafficLimiter({ store: 'redis', ...section }, { redis, liveInstances });
    limiters.push(limiter);
    return { limiter, redis };
  }

  const policies = compileTrafficPolicies([
    { name: 'per-client', metric: 'requests', limit: 10, windowSeconds: 60, groupBy: ['clientId'] },
  ]);

  async function timed(limiter: TrafficLimiter): Promise<{ decision: TrafficDecision; ms: number }> {
    const elapsed = ownStopwatch();
    const decision = await limiter.decide(facts({ clientId: 'c1' }), policies);
    return { decision, ms: elapsed() };
  }

  it('sends one command per decision, and a script Redis lost again by its source', async () => {
    // What is counted here is commands, not time: a crowded machine may take a script's first
    // load past 100 ms, which would count as a failure.
    const { limiter, redis } = await instance({}, undefined, 2000);
    const stats: PlainClient = await plainClient(server.url);
    // A fresh server's first script may take longer than the command timeout on a busy machine
    // (and then Redis is skipped for a while): counted from the first decision Redis answered.
    await until(async () => !(await limiter.decide(facts(), policies)).storeUnavailable, 5_000, 'Redis answering');
    await stats.sendCommand(['CONFIG', 'RESETSTAT']);
    const before = redis.stats.commands;
    for (let i = 0; i < 25; i++) await limiter.decide(facts({ clientId: `c${i % 3}` }), policies);
    const info = String(await stats.sendCommand(['INFO', 'commandstats']));
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
    expect([calls('evalsha'), calls('eval'), redis.stats.commands - before]).to.deep.equal([25, 0, 25]);
    await stats.sendCommand(['SCRIPT', 'FLUSH']);
    const again = await limiter.decide(facts(), policies);
    expect([again.result, again.storeUnavailable]).to.deep.equal(['allowed', false]);
    expect(redis.stats.failures).to.equal(0);
    stats.destroy();
  });

  it('sends the decisions of one turn in one command, each answered as if alone, in order', async () => {
    const { limiter, redis } = await instance({});
    const busy = facts({ clientId: 'turn-busy' });
    await limiter.decide(facts({ clientId: 'turn-warm' }), policies);
    const before = redis.stats.commands;
    // 15 of one group (limit 10) and 3 of another, all decided in the same turn.
    const decisions = await Promise.all([
      ...Array.from({ length: 15 }, () => limiter.decide(busy, policies)),
      ...Array.from({ length: 3 }, () => limiter.decide(facts({ clientId: 'turn-quiet' }), policies)),
    ]);
    expect(redis.stats.commands - before, 'commands').to.equal(1);
    expect(decisions.map((d) => d.result)).to.deep.equal([
      ...Array<string>(10).fill('allowed'),
      ...Array<string>(5).fill('limited'),
      ...Array<string>(3).fill('allowed'),
    ]);
    expect(decisions.slice(0, 10).map((d) => d.standings[0]!.remaining)).to.deep.equal([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(decisions.slice(15).map((d) => d.standings[0]!.remaining)).to.deep.equal([9, 8, 7]);
  });

  it('localShare: each instance allows its share of the limit while Redis is down, then Redis again', async () => {
    const { limiter } = await instance({ onStoreUnavailable: 'localShare' }, () => 3);
    const before = [(await timed(limiter)).decision, (await timed(limiter)).decision];
    for (const decision of before) expect(decision.storeUnavailable).to.equal(false);
    // Killed under load: decisions in flight and after get an answer all the same.
    const load = Array.from({ length: 20 }, (_, i) => sleep(i * 5).then(() => timed(limiter)));
    await sleep(20);
    await server.kill();
    const during = await Promise.all(load);
    for (const { ms } of during) expect(ms, during.map((d) => d.ms.toFixed(1)).join(', ')).to.be.below(TIMEOUT_MS + MARGIN_MS);
    const fallback = during.filter((d) => d.decision.storeUnavailable).map((d) => d.decision);
    expect(fallback.length).to.be.above(0);
    for (const d of fallback) expect(d.fallback).to.equal('localShare');
    // This instance's share of what the window had left in Redis: ceil((10 - counted there) / 3).
    // (what Redis said the window had used, in the last decision it made: earlier tests counted there too).
    const inRedis = [...before, ...during.map((d) => d.decision)].filter((d) => !d.storeUnavailable);
    const counted = Math.max(...inRedis.map((d) => (d.result === 'allowed' ? 10 - d.standings[0]!.remaining : 10)));
    const share = Math.ceil((10 - counted) / 3);
    const more = await Promise.all(Array.from({ length: 10 }, () => timed(limiter)));
    const allowedLocally = [...fallback, ...more.map((m) => m.decision)].filter((d) => d.result === 'allowed').length;
    expect(allowedLocally, `${counted} counted in Redis`).to.equal(share);
    expect(more[0]!.decision.standings[0]).to.include({ limit: share });
    await server.restart();
    await until(async () => !(await timed(limiter)).decision.storeUnavailable, 5_000, 'Redis used again');
  });

  it('localShare starts from what the window had used in Redis, not from zero', async () => {
    const fixed = compileTrafficPolicies([
      { name: 'per-client-fixed', metric: 'requests', limit: 10, windowSeconds: 3600, window: 'fixed', groupBy: ['clientId'] },
    ]);
    const { limiter } = await instance({ onStoreUnavailable: 'localShare' }, () => 1);
    const one = facts({ clientId: 'seeded' });
    for (let i = 0; i < 6; i++) expect((await limiter.decide(one, fixed)).result).to.equal('allowed');
    await server.kill();
    const during = [];
    for (let i = 0; i < 10; i++) during.push(await limiter.decide(one, fixed));
    expect(during.every((d) => d.storeUnavailable)).to.equal(true);
    // 6 of 10 used in Redis: 4 left for the one live instance (before: 10 more, 16 in the window).
    expect(during.filter((d) => d.result === 'allowed')).to.have.length(4);
    await server.restart();
    await until(async () => !(await limiter.decide(facts({ clientId: 'probe' }), fixed)).storeUnavailable, 5_000, 'Redis used again');
  });

  it('allow: allowed, counted nowhere; deny: 503 material; each within the command timeout', async () => {
    const allow = (await instance({ onStoreUnavailable: 'allow' })).limiter;
    const deny = (await instance({ onStoreUnavailable: 'deny' })).limiter;
    await server.kill();
    for (let i = 0; i < 15; i++) {
      const a = await timed(allow);
      const d = await timed(deny);
      expect([a.decision.result, a.decision.storeUnavailable, a.decision.fallback]).to.deep.equal(['allowed', true, 'allow']);
      expect([d.decision.result, d.decision.storeUnavailable, d.decision.fallback]).to.deep.equal(['unavailable', true, 'deny']);
      expect(Math.max(a.ms, d.ms), `allow ${a.ms.toFixed(1)} ms, deny ${d.ms.toFixed(1)} ms`).to.be.below(TIMEOUT_MS + MARGIN_MS);
    }
    await server.restart();
    await until(async () => (await timed(deny)).decision.result === 'allowed', 5_000, 'Redis used again');
  });

  it('does not wait past the command timeout for a Redis that does not answer, nor pile commands on it', async () => {
    const { limiter, redis } = await instance({ onStoreUnavailable: 'allow' });
    expect((await timed(limiter)).decision.storeUnavailable).to.equal(false);
    server.freeze();
    // One slow reply fails its own decision; three in a row judge Redis down (TIMEOUTS_TO_OPEN).
    for (let i = 0; i < TIMEOUTS_TO_OPEN; i++) {
      const first = await timed(limiter);
      expect(first.decision.storeUnavailable).to.equal(true);
      expect(first.ms, `${first.ms.toFixed(1)} ms`).to.be.below(TIMEOUT_MS + MARGIN_MS);
    }
    const sent = redis.stats.commands;
    const next = await Promise.all(Array.from({ length: 50 }, () => timed(limiter)));
    // Not one of them waited for a command timeout: each answered within a few milliseconds of the process's own time.
    for (const { decision, ms } of next) {
      expect(decision.storeUnavailable).to.equal(true);
      expect(ms, next.map((n) => n.ms.toFixed(1)).join(', ')).to.be.below(20);
    }
    // The circuit is open: none of them was sent.
    expect(redis.stats.commands).to.equal(sent);
    server.thaw();
    await until(async () => !(await timed(limiter)).decision.storeUnavailable, 5_000, 'Redis used again');
  });

  it('answers 503 problem+json with Retry-After through the middleware under deny, and never a 5xx under localShare', async () => {
    const app = express();
    const deny = trafficControl({
      redis: server.url,
      redisCommandTimeoutMs: TIMEOUT_MS,
      onStoreUnavailable: 'deny',
      policies: policies.all.map((p) => p.source),
    });
    const share = trafficControl({ redis: server.url, redisCommandTimeoutMs: TIMEOUT_MS, policies: policies.all.map((p) => p.source) });
    app.get('/deny', deny, (_req, res) => res.json({ ok: true }));
    app.get('/share', share, (_req, res) => res.json({ ok: true }));
    app.use(problemJsonErrorHandler({ messages: 'en' }));
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    try {
      expect((await request(url).get('/deny')).status).to.equal(200);
      await server.kill();
      const refused = await request(url).get('/deny');
      expect([refused.status, refused.headers['retry-after'], refused.body.gateway_status]).to.deep.equal([
        503,
        '5',
        'integration:GATEWAY-1373',
      ]);
      expect(refused.headers.ratelimit).to.equal(undefined);
      const statuses = [];
      for (let i = 0; i < 12; i++) statuses.push((await request(url).get('/share')).status);
      // One share of 10 for a lone instance: the whole limit, then 429.
      expect(statuses).to.deep.equal([...Array<number>(10).fill(200), 429, 429]);
    } finally {
      listening.closeAllConnections();
      await new Promise((resolve) => listening.close(resolve));
      await deny.close();
      await share.close();
    }
  });
});
