/**
 * Where DPoP proof identifiers are remembered: the process's memory (bounded: full of live
 * entries it refuses, 503, rather than forget one), and Redis (one atomic SET NX PX, shared by
 * every instance on it, under the connection's key prefix).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createClient } from 'redis';
import { connectRedis } from '../../../src/cluster/redis.js';
import { MemoryReplayStore, RedisReplayStore } from '../../../src/token/binding/replay.js';

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

  it('Redis: a key remembered through one connection is known through another, for its lifetime', async () => {
    const prefix = `eagtest-replay-${randomBytes(4).toString('hex')}:`;
    const [one, two] = await Promise.all([
      connectRedis('redis://127.0.0.1:6379', { keyPrefix: prefix }),
      connectRedis('redis://127.0.0.1:6379', { keyPrefix: prefix }),
    ]);
    try {
      const a = new RedisReplayStore(one);
      const b = new RedisReplayStore(two);
      expect(await a.remember('proof', 300)).to.equal(true);
      expect(await b.remember('proof', 300)).to.equal(false);
      // Concurrent attempts: exactly one wins.
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).remember('race', 5000)));
      expect(results.filter((r) => r === true)).to.have.length(1);
      await new Promise((resolve) => setTimeout(resolve, 350));
      expect(await b.remember('proof', 300)).to.equal(true);
    } finally {
      await Promise.all([one.close(), two.close()]);
      const client = createClient({ url: 'redis://127.0.0.1:6379' });
      await client.connect();
      for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 100 })) if (keys.length > 0) await client.del(keys);
      await client.close();
    }
  });

  it('Redis down: no answer (the proof is then refused with 503)', async () => {
    // Nothing listens on port 1: the connection is made, and keeps trying.
    const down = await connectRedis('redis://127.0.0.1:1', { keyPrefix: 'eagtest-none:' });
    try {
      expect(await new RedisReplayStore(down).remember('proof', 300)).to.equal(undefined);
    } finally {
      await down.close();
    }
  });
});
