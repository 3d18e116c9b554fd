/**
 * The cluster's Redis connection on the machine's Redis, cut off and stalled through a TCP proxy:
 * commands never reject and never wait past their timeout, a failing Redis is skipped at once,
 * reconnection and re-subscription happen by themselves, and a host's own client is not closed.
 * How long a command waited is this process's own time (test/security/support/loop-delay.ts): the
 * time it waited for a CPU, the machine's, left out.
 */
import { expect } from 'chai';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis.js';
import { InvalidOptionError } from '../../src/options.js';
import { ownStopwatch } from '../security/support/loop-delay.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { ThrowawayRedis } from '../traffic/redis-server.js';
import { REDIS_URL, cleanPrefix, plainClient, testPrefix, until } from './helpers.js';

describe('connectRedis', function () {
  this.timeout(30_000);
  let prefix: string;
  let connections: RedisConnection[];
  let proxies: TcpProxy[];

  beforeEach(() => {
    prefix = testPrefix('redis');
    connections = [];
    proxies = [];
  });
  afterEach(async () => {
    for (const connection of connections) await connection.close();
    for (const proxy of proxies) await proxy.close();
    await cleanPrefix(prefix);
  });

  async function connect(url = REDIS_URL, commandTimeoutMs?: number): Promise<RedisConnection> {
    const connection = await connectRedis(url, { keyPrefix: prefix, ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs }) });
    connections.push(connection);
    return connection;
  }

  async function proxied(): Promise<TcpProxy> {
    const proxy = await startTcpProxy({ port: 6379 });
    proxies.push(proxy);
    return proxy;
  }

  it('sends commands and answers their replies; a nil reply is null', async () => {
    const redis = await connect();
    expect(redis.healthy).to.equal(true);
    expect(await redis.command(['SET', `${prefix}k`, 'v', 'PX', '10000'])).to.equal('OK');
    expect(await redis.command(['GET', `${prefix}k`])).to.equal('v');
    expect(await redis.command(['GET', `${prefix}missing`])).to.equal(null);
    expect(redis.stats).to.deep.include({ commands: 3, failures: 0 });
  });

  it('a reply that came while the event loop was blocked past the timeout is the reply, not a timeout', async () => {
    const redis = await connect();
    expect(await redis.command(['SET', `${prefix}busy`, 'v', 'PX', '10000'])).to.equal('OK');
    const reply = redis.command(['GET', `${prefix}busy`]);
    // A process busy for five command timeouts (a compile, a GC pause, a starved core); Redis,
    // another process, answers meanwhile.
    const until = Date.now() + 5 * redis.commandTimeoutMs;
    while (Date.now() < until) {
      // busy
    }
    expect(await reply).to.equal('v');
    expect(redis.stats).to.deep.include({ timeouts: 0, failures: 0 });
    expect(redis.healthy).to.equal(true);
  });

  it('cut off: commands resolve undefined at once (never reject), then work again once Redis is back', async () => {
    const proxy = await proxied();
    const redis = await connect(`redis://127.0.0.1:${proxy.port}`);
    proxy.cut();
    await until(() => !redis.healthy, 5000, 'the disconnection seen');
    const elapsed = ownStopwatch();
    const replies = await Promise.all(Array.from({ length: 20 }, () => redis.command(['GET', `${prefix}k`])));
    expect(replies.every((reply) => reply === undefined)).to.equal(true);
    expect(elapsed()).to.be.lessThan(50);
    expect(redis.stats.skipped).to.be.greaterThan(0);
    proxy.restore();
    await until(() => redis.healthy, 5000, 'reconnected');
    expect(await redis.command(['GET', `${prefix}k`])).to.equal(null);
  });

  it('stalled: a command gives up after its timeout; three in a row judge Redis down, the next ones are skipped at once, then one probe alone', async () => {
    const proxy = await proxied();
    const redis = await connect(`redis://127.0.0.1:${proxy.port}`, 100);
    proxy.stall();
    const started = Date.now();
    const elapsed = ownStopwatch();
    expect(await redis.command(['GET', `${prefix}k`])).to.equal(undefined);
    // Not before the timeout (wall-clock time: a busy machine only makes it later), and not long after it (own time).
    expect(Date.now() - started).to.be.at.least(90);
    expect(elapsed()).to.be.lessThan(300);
    expect(redis.lastError).to.match(/no reply within 100 ms/);
    // One slow reply (a busy host's) fails its own command only: Redis is not judged down by it.
    expect(redis.healthy, 'after one timeout').to.equal(true);
    expect(await redis.command(['GET', `${prefix}k`])).to.equal(undefined);
    expect(redis.healthy, 'after two').to.equal(true);
    expect(await redis.command(['GET', `${prefix}k`])).to.equal(undefined);
    expect(redis.healthy, 'after three in a row').to.equal(false);
    expect(redis.stats.timeouts).to.equal(3);
    const next = ownStopwatch();
    expect(await redis.command(['GET', `${prefix}k`])).to.equal(undefined);
    expect(next()).to.be.lessThan(20);
    // Past the pause (1 s): one command alone probes, the others are skipped at once.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const sent = redis.stats.commands;
    await Promise.all(Array.from({ length: 10 }, () => redis.command(['GET', `${prefix}k`])));
    expect(redis.stats.commands - sent, 'one probe').to.equal(1);
    proxy.restore();
    await until(() => redis.healthy, 5000, 'reconnected after the stall');
  });

  it('a slow reply among answered ones fails its own command only: Redis stays up, nothing is skipped', async () => {
    // A Redis of the test's own, stopped (SIGSTOP) and continued: replies come late, on the same connection.
    const server = await ThrowawayRedis.start();
    try {
      const redis = await connect(server.url, 100);
      expect(await redis.command(['SET', `${prefix}k`, 'v', 'PX', '10000'])).to.equal('OK');
      // Two slow replies, each followed by an answered one: never three in a row.
      for (let i = 0; i < 2; i++) {
        server.freeze();
        expect(await redis.command(['GET', `${prefix}k`])).to.equal(undefined);
        server.thaw();
        expect(redis.healthy, `after slow reply ${i + 1}`).to.equal(true);
        expect(await redis.command(['GET', `${prefix}k`])).to.equal('v');
      }
      expect(redis.stats).to.deep.include({ timeouts: 2, skipped: 0 });
    } finally {
      await server.kill();
    }
  });

  it('subscribes on its own connection, and again after that connection was cut', async () => {
    const proxy = await proxied();
    const redis = await connect(`redis://127.0.0.1:${proxy.port}`);
    const publisher = await connect();
    const received: string[] = [];
    expect(await redis.subscribe(`${prefix}chan`, (message) => received.push(message))).to.equal(true);
    await publisher.command(['PUBLISH', `${prefix}chan`, 'one']);
    await until(() => received.length === 1, 5000, 'the first message');
    proxy.cut();
    await until(() => !redis.subscribed(`${prefix}chan`), 5000, 'the pub/sub connection lost');
    proxy.restore();
    await until(() => redis.subscribed(`${prefix}chan`), 5000, 'subscribed again');
    await until(
      async () => {
        await publisher.command(['PUBLISH', `${prefix}chan`, 'two']);
        return received.includes('two');
      },
      5000,
      'a message after the reconnection',
    );
    await redis.unsubscribe(`${prefix}chan`);
  });

  it('never closes a client the host gave; closes the pub/sub connection it opened', async () => {
    const host = await plainClient();
    try {
      const redis = await connectRedis(host, { keyPrefix: prefix });
      expect(await redis.subscribe(`${prefix}chan`, () => undefined)).to.equal(true);
      expect(await redis.command(['PING'])).to.equal('PONG');
      await redis.close();
      expect(host.isReady).to.equal(true);
      expect(await host.ping()).to.equal('PONG');
      expect(await redis.command(['PING'])).to.equal(undefined);
    } finally {
      host.destroy();
    }
  });

  it('Redis unreachable at start: resolves within the connection timeout, and connects later by itself', async () => {
    const proxy = await proxied();
    proxy.cut();
    const elapsed = ownStopwatch();
    const redis = await connect(`redis://127.0.0.1:${proxy.port}`);
    expect(elapsed()).to.be.lessThan(1500);
    expect(redis.healthy).to.equal(false);
    expect(await redis.command(['PING'])).to.equal(undefined);
    proxy.restore();
    await until(() => redis.healthy, 5000, 'connected once reachable');
  });

  it('refuses a URL that is not redis:// without repeating it, and a bad option', async () => {
    for (const url of ['http://user:hunter2@127.0.0.1:6379', 'not a url']) {
      const err = await connectRedis(url).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(InvalidOptionError);
      expect((err as Error).message).to.equal('connectRedis: url must be a redis:// or rediss:// URL');
    }
    const err = await connectRedis(REDIS_URL, { commandTimeoutMs: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.match(/^connectRedis: options\.commandTimeoutMs must be a positive number/);
  });
});
