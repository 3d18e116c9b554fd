/**
 * Shared pieces of the cluster tests: a key prefix of their own on the machine's Redis, a plain
 * client to look at what the gateway wrote, and the clean-up of the prefix.
 */
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import type { RedisClientLike } from '../../src/cluster/redis.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';
/** The cluster secret of the tests' instances. */
export const CLUSTER_SECRET = 'cluster-test-secret-0123456789-abcdefghij';

const create = (url: string) => createClient({ url });
/** A plain node-redis client. */
export type PlainClient = ReturnType<typeof create>;

/** A plain node-redis client, connected. */
export async function plainClient(url = REDIS_URL): Promise<PlainClient> {
  const client = create(url);
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A key prefix no other test uses. */
export function testPrefix(name: string): string {
  return `eagtest:${name}:${randomBytes(6).toString('hex')}:`;
}

/** Every key of the prefix. */
export async function keysOf(client: PlainClient, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const reply = await client.scan(cursor, { MATCH: `${prefix}*`, COUNT: 500 });
    cursor = String(reply.cursor);
    keys.push(...reply.keys);
  } while (cursor !== '0');
  return keys;
}

/** Every key of the prefix and what it holds, as text (strings, sets, lists, sorted sets). */
export async function dump(client: PlainClient, prefix: string): Promise<Array<{ key: string; value: string }>> {
  const out: Array<{ key: string; value: string }> = [];
  for (const key of await keysOf(client, prefix)) {
    const type = await client.type(key);
    let value: unknown;
    if (type === 'string') value = await client.get(key);
    else if (type === 'set') value = await client.sMembers(key);
    else if (type === 'list') value = await client.lRange(key, 0, -1);
    else if (type === 'zset') value = await client.zRange(key, 0, -1);
    else value = type;
    out.push({ key, value: typeof value === 'string' ? value : JSON.stringify(value) });
  }
  return out;
}

/** Deletes every key of the prefix. */
export async function cleanPrefix(prefix: string): Promise<void> {
  const client = await plainClient();
  try {
    const keys = await keysOf(client, prefix);
    for (let i = 0; i < keys.length; i += 500) await client.del(keys.slice(i, i + 500));
  } finally {
    client.destroy();
  }
}

/**
 * A connected client whose commands go straight to Redis but whose pub/sub connection
 * (`duplicate()`) goes to `pubSubUrl` (through a proxy the test can cut).
 */
export async function splitClient(pubSubUrl: string): Promise<{ client: RedisClientLike; close(): void }> {
  const direct = await plainClient();
  const client: RedisClientLike = {
    sendCommand: (args) => direct.sendCommand(args),
    connect: () => direct.connect(),
    duplicate: () => createClient({ url: pubSubUrl, disableOfflineQueue: true, socket: { reconnectStrategy: () => 100 } }),
    subscribe: (channel, listener) => direct.subscribe(channel, listener),
    unsubscribe: (channel) => direct.unsubscribe(channel),
    on: (event, listener) => direct.on(event, listener),
    removeListener: (event, listener) => direct.removeListener(event, listener),
    get isReady() {
      return direct.isReady;
    },
    get isOpen() {
      return direct.isOpen;
    },
  };
  return { client, close: () => direct.destroy() };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition()` holds, checking every 10 ms; resolves with the time it took, or rejects after `ms`. */
export async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
  return Date.now() - started;
}
