/**
 * Token results shared between gateway instances through the machine's Redis: separate token
 * policies (one per "instance", each with its own Redis connection) against one demo
 * authorization server, counting its introspection calls. Redis is cut off and stalled through a
 * TCP proxy, never stopped.
 */
import { expect } from 'chai';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis.js';
import { ClusterSeal } from '../../src/cluster/seal.js';
import { SharedTokenResults } from '../../src/cluster/shared-token-results.js';
import { GatewayError } from '../../src/errors.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { toTokenInfo } from '../../src/token/normalize.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import {
  CLUSTER_SECRET,
  REDIS_URL,
  cleanPrefix,
  dump,
  keysOf,
  plainClient,
  testPrefix,
  until,
  type PlainClient,
} from '../cluster/helpers.js';
import { startTestApp, type TestApp } from './helpers.js';

describe('token results shared between gateway instances (Redis)', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let raw: PlainClient;
  let prefix: string;
  let connections: RedisConnection[];
  let policies: TokenPolicy[];
  let proxies: TcpProxy[];
  let apps: TestApp[];

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    raw = await plainClient();
  });
  after(async () => {
    raw.destroy();
    await as.stop();
  });
  beforeEach(() => {
    prefix = testPrefix('tokens');
    connections = [];
    policies = [];
    proxies = [];
    apps = [];
  });
  afterEach(async () => {
    for (const app of apps) await app.close();
    for (const policy of policies) policy.close();
    for (const connection of connections) await connection.close();
    for (const proxy of proxies) await proxy.close();
    await cleanPrefix(prefix);
  });

  /** One gateway instance's token policy, with a Redis connection of its own. */
  async function instance(
    options: Partial<TokenPolicyOptions> & { url?: string; commandTimeoutMs?: number } = {},
  ): Promise<{ policy: TokenPolicy; redis: RedisConnection; shared: SharedTokenResults }> {
    const { url = REDIS_URL, commandTimeoutMs, ...rest } = options;
    const redis = await connectRedis(url, { keyPrefix: prefix, ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs }) });
    connections.push(redis);
    const shared = new SharedTokenResults({ redis, secret: CLUSTER_SECRET, nodeId: `node-${connections.length}` });
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      shared,
      ...rest,
    });
    policies.push(policy);
    return { policy, redis, shared };
  }

  async function proxied(): Promise<TcpProxy> {
    const proxy = await startTcpProxy({ port: 6379 });
    proxies.push(proxy);
    return proxy;
  }

  const introspections = (): number => as.stats.introspections;
  const issue = (client = 'client1'): Promise<string> => as.issueToken(client, `${client}-secret`, { scope: 'read write' });

  async function refusalOf(promise: Promise<unknown>): Promise<GatewayError> {
    try {
      await promise;
    } catch (err) {
      expect(err).to.be.instanceOf(GatewayError);
      return err as GatewayError;
    }
    throw new Error('the validation was not refused');
  }

  it('a token validated by one instance is a shared hit for the others: one introspection in all, and the token is nowhere in Redis', async () => {
    const a = await instance();
    const b = await instance();
    const c = await instance();
    const token = await issue();
    const before = introspections();

    const first = await a.policy.validate(token);
    expect(first.cached).to.equal(false);
    const second = await b.policy.validate(token);
    const third = await c.policy.validate(token);
    expect(introspections() - before).to.equal(1);
    expect(second).to.deep.include({ cached: true, shared: true });
    expect(third.shared).to.equal(true);
    expect(second.info).to.deep.equal(first.info);
    expect(third.introspection).to.deep.equal(first.introspection);
    expect(Object.isFrozen(second.info)).to.equal(true);

    // A local hit is synchronous and asks Redis nothing.
    const commands = b.redis.stats.commands;
    const local = b.policy.validateFromCache(token);
    expect(local?.cached).to.equal(true);
    expect(local?.shared).to.equal(undefined);
    expect(b.redis.stats.commands).to.equal(commands);

    const entries = await dump(raw, prefix);
    expect(entries.some(({ key }) => key.startsWith(`${prefix}tok:0:PetStore%20IdP:`))).to.equal(true);
    for (const { key, value } of entries) {
      expect(key).not.to.include(token);
      expect(value).not.to.include(token);
    }
  });

  it('50 concurrent validations of one fresh token over 3 instances make exactly one introspection', async () => {
    const instances = [await instance(), await instance(), await instance()];
    // Discovery done first, so that every instance is ready to call at once.
    const warm = await issue('client2');
    await Promise.all(instances.map(({ policy }) => policy.validate(warm)));
    const token = await issue();
    const before = introspections();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => instances[i % 3]!.policy.validate(token)));
    expect(introspections() - before).to.equal(1);
    expect(new Set(results.map((r) => r.info.subject))).to.deep.equal(new Set(['client1']));
    expect(results.filter((r) => r.shared === true).length).to.be.greaterThan(0);
  });

  it('a shared entry that is not a result (garbage, the wrong shape; signed or not) is a miss, and a valid result past its exp is never served', async () => {
    const a = await instance();
    const b = await instance();
    const token = await issue();
    await a.policy.validate(token);
    const written = (await dump(raw, prefix)).filter(({ key }) => key.startsWith(`${prefix}tok:`) && !key.endsWith(':lock'));
    expect(written.length).to.be.at.least(1);
    // What an instance given the same secret would write (the shape checks come after the signature's).
    const seal = new ClusterSeal([CLUSTER_SECRET]);
    const real = JSON.parse(seal.open('token_result', written[0]!.key, written[0]!.value)!.payload) as {
      k: string;
      at: number;
      d: Record<string, unknown>;
    };
    const forge = async (value: string, signed: boolean): Promise<void> => {
      for (const { key } of written) await raw.set(key, signed ? seal.seal('token_result', key, value, 60_000) : value, { KEEPTTL: true });
      b.policy.clearCache();
    };
    for (const forged of [
      'not json',
      '{"k":"v","at":1,"d":{"info":[]}}',
      '{"k":"r","at":1,"d":{"code":"ERR_SOMETHING","diagnostic":"x"}}',
      '[]',
    ]) {
      for (const signed of [false, true]) {
        await forge(forged, signed);
        const before = introspections();
        const result = await b.policy.validate(token);
        expect(result.shared, forged).to.not.equal(true);
        expect(result.info.subject, forged).to.equal('client1');
        expect(introspections() - before, forged).to.equal(1);
      }
    }
    // Each forgery read twice: before taking the token's lock, and again once it is held.
    expect(b.shared.stats.rejected).to.equal(8);
    // Fail closed: what the cluster says expired is refused, never answered valid.
    await forge(JSON.stringify({ ...real, d: { ...real.d, exp: Math.floor(Date.now() / 1000) - 60 } }), true);
    expect((await refusalOf(b.policy.validate(token))).code).to.equal('ERR_TOKEN_EXPIRED');
  });

  it('shares refusals: an inactive token is introspected once across instances within the refusal TTL', async () => {
    const instances = [await instance(), await instance(), await instance()];
    const before = introspections();
    const errors = [];
    for (const { policy } of instances) errors.push(await refusalOf(policy.validate('not-a-token-of-this-server')));
    expect(introspections() - before).to.equal(1);
    for (const error of errors) {
      expect(error.code).to.equal('ERR_TOKEN_INVALID');
      expect(error.status).to.equal(401);
    }
    expect(errors[1]!.diagnostic).to.match(/remembered by the gateway cluster/);
  });

  it('policies of the same name but other validation settings do not take each other’s results', async () => {
    const a = await instance();
    const strict = await instance({ audience: 'another-api' });
    const token = await issue();
    await a.policy.validate(token);
    const before = introspections();
    const error = await refusalOf(strict.policy.validate(token));
    expect(error.code).to.equal('ERR_TOKEN_INVALID');
    expect(introspections() - before).to.equal(1);
  });

  it('forget() also deletes the shared results of that client', async () => {
    const a = await instance();
    const b = await instance();
    const token = await issue('client2');
    await a.policy.validate(token);
    expect((await b.policy.validate(token)).shared).to.equal(true);
    expect(a.policy.forget({ clientId: 'client2' })).to.equal(1);
    await until(async () => (await keysOf(raw, `${prefix}tok:`)).length === 0, 2000, 'the shared result deleted');
    const c = await instance();
    const before = introspections();
    const again = await c.policy.validate(token);
    expect(again.shared).to.equal(undefined);
    expect(introspections() - before).to.equal(1);
  });

  it('never writes a result that holds its token', async () => {
    const redis = await connectRedis(REDIS_URL, { keyPrefix: prefix });
    connections.push(redis);
    const shared = new SharedTokenResults({ redis, secret: CLUSTER_SECRET });
    const token = 'a-token-echoed-by-its-server';
    const found = await shared.lookup('scope', 'hash', 1000);
    expect(found.kind).to.equal('miss');
    if (found.kind !== 'miss') return;
    const claims = { active: true, sub: 'alice', token_copy: token };
    shared.storeValid(
      found.ticket,
      { exp: undefined, info: toTokenInfo({ introspection: claims }), introspection: claims },
      { at: Date.now(), ttlMs: 60_000, indexTtlMs: 60_000, token },
    );
    shared.release(found.ticket);
    expect(shared.stats.withheld).to.equal(1);
    await until(async () => (await keysOf(raw, prefix)).length === 0, 1000, 'the lock released');
  });

  it('Redis cut off: every answer stays right (200 or 401, never a Redis error); sharing resumes by itself once it is back', async () => {
    const proxy = await proxied();
    const url = `redis://127.0.0.1:${proxy.port}`;
    const a = await instance({ url });
    const b = await instance({ url });
    const appA = await startTestApp({ policy: a.policy });
    apps.push(appA);
    const known = await issue();
    await a.policy.validate(known);

    const tokens = await Promise.all([issue(), issue('client2'), issue()]);
    const ask = (token: string) => request(appA.url).get('/pets').set('Authorization', `Bearer ${token}`);
    // Cut in the middle of a burst of validations.
    const burst = Promise.all([...tokens, 'garbage-1', known, 'garbage-2'].map(ask));
    proxy.cut();
    const during = await Promise.all([...tokens.map(ask), ask('garbage-3'), ask(known)]);
    const answers = [...(await burst), ...during];
    for (const res of answers) expect([200, 401]).to.include(res.status);
    expect((await burst).map((res) => res.status)).to.deep.equal([200, 200, 200, 401, 200, 401]);
    expect(during.map((res) => res.status)).to.deep.equal([200, 200, 200, 401, 200]);
    // B, alone while Redis is away, validates by itself.
    expect((await b.policy.validate(known)).shared).to.equal(undefined);
    expect((await refusalOf(b.policy.validate('garbage-4'))).status).to.equal(401);
    expect(a.redis.healthy).to.equal(false);

    proxy.restore();
    const took = await until(() => a.redis.healthy && b.redis.healthy, 5000, 'both instances reconnected');
    expect(took).to.be.lessThan(5000);
    const fresh = await issue('client2');
    await a.policy.validate(fresh);
    const before = introspections();
    const onB = await b.policy.validate(fresh);
    expect(onB.shared).to.equal(true);
    expect(introspections() - before).to.equal(0);
  });

  it('Redis stalled: a validation is delayed by no more than the command timeout (and a margin)', async () => {
    const proxy = await proxied();
    const a = await instance({ url: `redis://127.0.0.1:${proxy.port}`, commandTimeoutMs: 100 });
    const warm = await issue();
    await a.policy.validate(warm);
    const token = await issue('client2');
    proxy.stall();
    const started = Date.now();
    const result = await a.policy.validate(token);
    const elapsed = Date.now() - started;
    expect(result.info.clientId).to.equal('client2');
    expect(elapsed).to.be.lessThan(500);
    // Later validations while it hangs wait no longer (and once three commands in a row timed out, not at all).
    const next = await issue();
    const again = Date.now();
    await a.policy.validate(next);
    expect(Date.now() - again).to.be.lessThan(500);
    expect((await refusalOf(a.policy.validate('garbage-while-stalled'))).status).to.equal(401);
    proxy.restore();
    await until(() => a.redis.healthy, 5000, 'reconnected after the stall');
  });

  it('Redis down at start: the policy works alone, then shares once Redis is reachable', async () => {
    const proxy = await proxied();
    proxy.cut();
    const started = Date.now();
    const a = await instance({ url: `redis://127.0.0.1:${proxy.port}` });
    expect(Date.now() - started).to.be.lessThan(2000);
    const b = await instance();
    const token = await issue();
    expect((await a.policy.validate(token)).info.subject).to.equal('client1');
    proxy.restore();
    await until(() => a.redis.healthy, 5000, 'connected once reachable');
    const fresh = await issue('client2');
    await a.policy.validate(fresh);
    const before = introspections();
    expect((await b.policy.validate(fresh)).shared).to.equal(true);
    expect(introspections() - before).to.equal(0);
  });
});
