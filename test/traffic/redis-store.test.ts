/**
 * The Redis store on the machine's Redis, with several engines as several instances: exact under
 * concurrency (N concurrent requests of one group let exactly min(N, limit) through), fixed and
 * sliding windows at their edges on Redis's clock, in-flight slots as leases (renewed while held,
 * freed after the lease when an instance goes without releasing them), every key with a TTL.
 */
import { expect } from 'chai';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis.js';
import { compileTrafficPolicies, type CompiledTrafficPolicies } from '../../src/traffic/compile.js';
import { createTrafficLimiter, type TrafficLimiter, type TrafficLimiterOptions } from '../../src/traffic/limiter.js';
import type { TrafficPolicy } from '../../src/traffic/schema.js';
import { REDIS_URL, cleanPrefix, keysOf, plainClient, sleep, testPrefix, type PlainClient } from '../cluster/helpers.js';
import { facts } from './helpers.js';

describe('traffic control with the Redis store', function () {
  this.timeout(30_000);
  let prefix: string;
  let connections: RedisConnection[];
  let limiters: TrafficLimiter[];
  let plain: PlainClient;

  before(async () => {
    plain = await plainClient();
  });
  after(() => plain.destroy());
  beforeEach(() => {
    prefix = testPrefix('traffic');
    connections = [];
    limiters = [];
  });
  afterEach(async () => {
    for (const limiter of limiters) await limiter.close();
    for (const connection of connections) await connection.close();
    await cleanPrefix(prefix);
  });

  /** An engine with a Redis connection of its own, as an instance would have. */
  async function instance(options: Omit<TrafficLimiterOptions, 'redis'> = {}): Promise<TrafficLimiter> {
    const redis = await connectRedis(REDIS_URL, { keyPrefix: prefix, commandTimeoutMs: 2000 });
    connections.push(redis);
    const limiter = createTrafficLimiter({ store: 'redis' }, { ...options, redis });
    limiters.push(limiter);
    return limiter;
  }

  function compile(...policies: TrafficPolicy[]): CompiledTrafficPolicies {
    return compileTrafficPolicies(policies);
  }

  async function allowedOf(limiter: TrafficLimiter, policies: CompiledTrafficPolicies, n: number, clientId = 'c1'): Promise<number> {
    const decisions = await Promise.all(Array.from({ length: n }, () => limiter.decide(facts({ clientId }), policies)));
    for (const d of decisions) expect(d.storeUnavailable, 'decided by Redis').to.equal(false);
    return decisions.filter((d) => d.result === 'allowed').length;
  }

  /** Redis's clock, epoch ms. */
  async function redisNow(): Promise<number> {
    const [seconds, micros] = (await plain.sendCommand(['TIME'])) as [string, string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Waits until `at` ms into a window of `windowMs` on Redis's clock (the next one if already past). */
  async function waitInWindow(windowMs: number, at: number): Promise<void> {
    const now = await redisNow();
    const into = now % windowMs;
    await sleep(into < at ? at - into : windowMs - into + at);
  }

  for (const window of ['sliding', 'fixed'] as const) {
    it(`lets exactly the limit through, 60 concurrent requests of one group over 3 instances (${window})`, async () => {
      const policies = compile({ name: 'per-client', metric: 'requests', limit: 20, windowSeconds: 60, window, groupBy: ['clientId'] });
      const engines = await Promise.all([instance(), instance(), instance()]);
      const allowed = await Promise.all(engines.map((engine) => allowedOf(engine, policies, 20)));
      expect(allowed.reduce((a, b) => a + b, 0)).to.equal(20);
      expect(await allowedOf(engines[0]!, policies, 5, 'c2')).to.equal(5);
    });
  }

  it('lets exactly the limit be in flight over 3 instances, and frees slots on release', async () => {
    const policies = compile({ name: 'in-flight', metric: 'concurrentRequests', limit: 7 });
    const engines = await Promise.all([instance(), instance(), instance()]);
    const decisions = (
      await Promise.all(engines.map((e) => Promise.all(Array.from({ length: 10 }, () => e.decide(facts(), policies)))))
    ).flat();
    const allowed = decisions.filter((d) => d.result === 'allowed');
    expect(allowed).to.have.length(7);
    expect(decisions.find((d) => d.result === 'limited')?.retryAfterSeconds).to.equal(1);
    for (const d of allowed.slice(0, 3)) d.release();
    await sleep(50);
    expect(await allowedOf(engines[1]!, policies, 5)).to.equal(3);
    expect(await engines[2]!.usage(policies.all[0]!, 5)).to.deep.equal([{ group: '*', used: 7, limit: 7 }]);
  });

  it('fixed: a burst at the end of a window and at the start of the next passes twice the limit; sliding: not', async () => {
    const engine = await instance();
    const fixed = compile({ name: 'f', metric: 'requests', limit: 4, windowSeconds: 2, window: 'fixed' });
    const sliding = compile({ name: 's', metric: 'requests', limit: 4, windowSeconds: 2 });
    await waitInWindow(2000, 1700);
    expect([await allowedOf(engine, fixed, 6), await allowedOf(engine, sliding, 6)]).to.deep.equal([4, 4]);
    await waitInWindow(2000, 50);
    expect([await allowedOf(engine, fixed, 6), await allowedOf(engine, sliding, 6)]).to.deep.equal([4, 0]);
    // A window after the first burst, the sliding window has room again.
    await sleep(1800);
    expect(await allowedOf(engine, sliding, 6)).to.equal(4);
  });

  it('tells the time until more quota from Redis, and counts warning-only policies', async () => {
    const engine = await instance();
    const policies = compile(
      { name: 's', metric: 'requests', limit: 2, windowSeconds: 30 },
      { name: 'w', metric: 'requests', limit: 1, windowSeconds: 30, window: 'fixed', mode: 'warningOnly' },
    );
    const first = await engine.decide(facts(), policies);
    const second = await engine.decide(facts(), policies);
    const third = await engine.decide(facts(), policies);
    expect(first.standings.map((s) => [s.remaining, s.exceeded])).to.deep.equal([
      [1, false],
      [0, false],
    ]);
    expect([second.result, second.standings[0]!.resetSeconds, second.standings[1]!.exceeded]).to.deep.equal(['allowed', 30, true]);
    expect([third.result, third.limitedBy?.policy, third.retryAfterSeconds]).to.deep.equal(['limited', 's', 30]);
    expect(third.standings[1]).to.include({ exceeded: true, remaining: 0 });
  });

  it('gives every key a TTL', async () => {
    const engine = await instance();
    await engine.decide(
      facts({ clientId: 'c1' }),
      compile(
        { name: 's', metric: 'requests', limit: 2, windowSeconds: 30, groupBy: ['clientId'] },
        { name: 'f', metric: 'requests', limit: 2, windowSeconds: 30, window: 'fixed' },
        { name: 'c', metric: 'concurrentRequests', limit: 2 },
      ),
    );
    const keys = await keysOf(plain, `${prefix}traffic:`);
    expect(keys).to.have.length(3);
    for (const key of keys) {
      expect(key).to.match(/^eagtest:traffic:[0-9a-f]+:traffic:[sfc]:(s|f30|c):[A-Za-z0-9_-]{43}(:\d+)?$/);
      const ttl = await plain.pTTL(key);
      expect(ttl, key).to.be.above(0).and.at.most(30_000);
    }
  });

  it('frees the slots of an instance gone without releasing them after the lease, and renews the live ones', async () => {
    const policies = compile({ name: 'in-flight', metric: 'concurrentRequests', limit: 2 });
    const live = await instance({ concurrencyLeaseMs: 600 });
    const gone = await instance({ concurrencyLeaseMs: 600 });
    const held = await live.decide(facts(), policies);
    expect((await gone.decide(facts(), policies)).result).to.equal('allowed');
    expect((await live.decide(facts(), policies)).result).to.equal('limited');
    // The instance stops (no release, no renewal): its slot outlives it by the lease at most.
    await gone.close();
    await sleep(1_000);
    // The live instance's slot was renewed past its lease: one slot is free, not two.
    const after = await Promise.all([live.decide(facts(), policies), live.decide(facts(), policies)]);
    expect(after.map((d) => d.result).sort()).to.deep.equal(['allowed', 'limited']);
    held.release();
  });
});
