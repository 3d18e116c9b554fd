/**
 * Where DPoP proof identifiers are remembered: the process's memory (bounded: full of live
 * entries it refuses, 503, rather than forget one), and Redis (one atomic SET NX PX, shared by
 * every instance on it, under the connection's key prefix). One key has a share of either
 * (`dpopMaxProofsPerKey`): past it that key's proofs are refused (429), and every other key's pass.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../../examples/petstore/auth-server.js';
import { connectRedis, type RedisConnection } from '../../../src/cluster/redis.js';
import { cleanPrefix } from '../../cluster/helpers.js';
import { MemoryReplayStore, RedisReplayStore } from '../../../src/token/binding/replay.js';
import { echoBackend } from '../../gateway/helpers.js';
import { serve, stop, type Served } from '../../server/support.js';
import { dpopKey, proof, type DpopKey } from './support.js';

describe('DPoP proof identifiers', () => {
  it('memory: once only, again after its lifetime; full of live ones, it cannot answer', async () => {
    const store = new MemoryReplayStore(2);
    expect(store.remember('a', 50)).to.equal(true);
    expect(store.remember('a', 50)).to.equal(false);
    expect(store.remember('b', 50)).to.equal(true);
    expect(store.unavailable).to.equal(undefined);
    expect(store.remember('c', 50)).to.equal(undefined);
    // Why it cannot answer, for the 503's diagnostic.
    expect(store.unavailable).to.match(/^full: 2 proofs within their lifetime in this process; use Redis/);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(store.remember('c', 50)).to.equal(true);
    expect(store.unavailable).to.equal(undefined);
    expect(store.remember('a', 50)).to.equal(true);
  });

  it("memory: one key's share of the store, then that key's proofs only are refused", async () => {
    const store = new MemoryReplayStore(100);
    const mallory = { thumbprint: 'mallory', maxProofs: 3 };
    for (const jti of ['m1', 'm2', 'm3']) expect(store.remember(jti, 50, mallory)).to.equal(true);
    expect(store.remember('m4', 50, mallory)).to.equal('overShare');
    // A replay is still a replay; another key is not touched.
    expect(store.remember('m1', 50, mallory)).to.equal(false);
    expect(store.remember('a1', 50, { thumbprint: 'alice', maxProofs: 3 })).to.equal(true);
    expect(store.size).to.equal(4);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(store.remember('m4', 50, mallory), 'its proofs expired: room again').to.equal(true);
  });

  /** Two connections to the machine's Redis under a key prefix of their own, closed and cleaned after `run`. */
  async function withTwoConnections(run: (one: RedisConnection, two: RedisConnection) => Promise<void>): Promise<void> {
    const prefix = `eagtest-replay-${randomBytes(4).toString('hex')}:`;
    const [one, two] = await Promise.all([
      connectRedis('redis://127.0.0.1:6379', { keyPrefix: prefix }),
      connectRedis('redis://127.0.0.1:6379', { keyPrefix: prefix }),
    ]);
    try {
      await run(one, two);
    } finally {
      await Promise.all([one.close(), two.close()]);
      await cleanPrefix(prefix);
    }
  }

  it("Redis: one key's share, counted over every connection", () =>
    withTwoConnections(async (one, two) => {
      const mallory = { thumbprint: 'mallory', maxProofs: 3 };
      const stores = [new RedisReplayStore(one), new RedisReplayStore(two)];
      const results = [];
      for (let i = 0; i < 5; i++) results.push(await stores[i % 2]!.remember(`m${i}`, 5000, mallory));
      expect(results).to.deep.equal([true, true, true, 'overShare', 'overShare']);
      expect(await stores[0]!.remember('a0', 5000, { thumbprint: 'alice', maxProofs: 3 })).to.equal(true);
      // A refused proof's jti is not kept: it was not accepted.
      expect(await stores[1]!.remember('m3', 5000)).to.equal(true);
    }));

  it('Redis: a key remembered through one connection is known through another, for its lifetime', () =>
    withTwoConnections(async (one, two) => {
      const a = new RedisReplayStore(one);
      const b = new RedisReplayStore(two);
      expect(await a.remember('proof', 300)).to.equal(true);
      expect(await b.remember('proof', 300)).to.equal(false);
      // Concurrent attempts: exactly one wins.
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).remember('race', 5000)));
      expect(results.filter((r) => r === true)).to.have.length(1);
      await new Promise((resolve) => setTimeout(resolve, 350));
      expect(await b.remember('proof', 300)).to.equal(true);
    }));

  it('Redis down: no answer (the proof is then refused with 503)', async () => {
    // Nothing listens on port 1: the connection is made, and keeps trying.
    const down = await connectRedis('redis://127.0.0.1:1', { keyPrefix: 'eagtest-none:' });
    try {
      expect(await new RedisReplayStore(down).remember('proof', 300)).to.equal(undefined);
    } finally {
      await down.close();
    }
  });

  describe('over serve: one client with one bound token sends proof after proof', function () {
    this.timeout(120_000);
    const PUBLIC = 'https://api.example.org';
    const PATH = '/gateway/Ente/Pets/v1/pets/1';
    let as: DemoAuthServer;
    let backend: Awaited<ReturnType<typeof echoBackend>>;
    let dir: string;
    let served: Served;
    let base: string;
    let mallory: DpopKey;
    let alice: DpopKey;

    before(async () => {
      [as, backend, mallory, alice] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), dpopKey(), dpopKey()]);
      dir = await mkdtemp(path.join(tmpdir(), 'gateway-dpop-share-'));
      const config = path.join(dir, 'gateway.json');
      await writeFile(
        config,
        JSON.stringify({
          publicBaseUrl: PUBLIC,
          tokenPolicies: {
            DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', dpop: 'allowed', dpopMaxProofsPerKey: 40 },
          },
          apis: [
            {
              provider: 'Ente',
              name: 'Pets',
              version: 1,
              backend: { url: backend.url },
              tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
            },
          ],
        }),
      );
      served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0']);
      base = (await served.waitFor(/serving APIs at (http:\/\/[\d.:]+)/))[1]!;
    });
    after(async () => {
      await stop(served);
      await Promise.all([as?.stop(), backend?.stop()]);
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    /** A request with `key`'s bound token and a new proof: its status and `Retry-After`. */
    const call = async (key: DpopKey, token: string): Promise<{ status: number; retryAfter: string | null }> => {
      const res = await fetch(`${base}${PATH}`, {
        headers: { authorization: `DPoP ${token}`, dpop: await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }) },
      });
      await res.arrayBuffer();
      return { status: res.status, retryAfter: res.headers.get('retry-after') };
    };

    it("gives that key its share (dpopMaxProofsPerKey), then 429 for its proofs only; another client's proofs pass", async () => {
      const [malloryToken, aliceToken] = await Promise.all([
        as.issueToken('client1', 'client1-secret', { dpop: mallory }),
        as.issueToken('client1', 'client1-secret', { dpop: alice }),
      ]);
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await call(mallory, malloryToken)).status);
      expect(statuses.filter((s) => s !== 201)).to.deep.equal([]);
      const past = await call(mallory, malloryToken);
      console.log(`      40 proofs of one key accepted, the next ${past.status} (Retry-After ${past.retryAfter})`);
      expect(past.status).to.equal(429);
      expect(Number(past.retryAfter)).to.be.within(300, 420);
      // Before: that client filled the process's store, and every other DPoP client got 503.
      expect((await call(alice, aliceToken)).status).to.equal(201);
    });
  });
});
