/**
 * The registry of live gateway instances: each writes its heartbeat key `<prefix>node:<id>` (JSON,
 * expiring after three heartbeats) and its id in the sorted set `<prefix>nodes` (scored by its
 * last heartbeat), the index that lists them without a scan. A node is live while its key exists.
 * The JSON is sealed with the cluster secret (`seal.ts`): an entry another Redis client wrote (a
 * node that is not there, which would count in the live nodes and be waited for at each reset) is
 * ignored.
 *
 * @module
 */
import type { RedisConnection } from './redis.js';
import type { ClusterSeal } from './seal.js';

/** What a node says of itself at each heartbeat (given by the host: `GatewayCluster`'s `describe`). */
export interface NodeDescription {
  /** Epoch ms of the configuration in force. */
  configLoadedAt?: number;
  /** Epoch ms at which that configuration expires. */
  configExpiresAt?: number;
  /** The APIs served (their keys, or how many). */
  apis?: number | string[];
  /** A version of the configuration in force (for example a hash of it), to tell nodes apart. */
  configVersion?: string;
  /** Anything else the host wants shown (JSON). */
  [name: string]: unknown;
}

/** A live node, as its last heartbeat described it. */
export interface NodeInfo extends NodeDescription {
  /** The node's id. */
  id: string;
  /** Epoch ms at which the node started. */
  startedAt: number;
  /** Epoch ms of its last heartbeat. */
  heartbeatAt: number;
  /** The cluster generation whose reset the node has applied, when known. */
  generation?: number;
}

const MGET_BATCH = 100;
// An id is dropped from the index once it has been silent this long.
const FORGET_AFTER_MS = 60_000;
// A heartbeat's seal outlives its key by this much: instances' clocks may differ a little.
const CLOCK_SLACK_MS = 60_000;

function nodeKey(redis: RedisConnection, id: string): string {
  return `${redis.keyPrefix}node:${id}`;
}

function indexKey(redis: RedisConnection): string {
  return `${redis.keyPrefix}nodes`;
}

/** Writes a node's heartbeat; resolves `true` when Redis took it. */
export async function writeHeartbeat(redis: RedisConnection, seal: ClusterSeal, info: NodeInfo, ttlMs: number): Promise<boolean> {
  const key = nodeKey(redis, info.id);
  const written = redis.command([
    'SET',
    key,
    seal.seal('registry', key, JSON.stringify(info), ttlMs + CLOCK_SLACK_MS),
    'PX',
    String(Math.ceil(ttlMs)),
  ]);
  const indexed = redis.command(['ZADD', indexKey(redis), String(info.heartbeatAt), info.id]);
  return (await written) === 'OK' && (await indexed) !== undefined;
}

/** Removes a node from the registry (it is closing). */
export async function removeNode(redis: RedisConnection, id: string): Promise<void> {
  await Promise.all([redis.command(['DEL', nodeKey(redis, id)]), redis.command(['ZREM', indexKey(redis), id])]);
}

function openNode(seal: ClusterSeal, key: string, reply: unknown): NodeInfo | undefined {
  const opened = seal.open('registry', key, reply);
  if (opened === undefined) return undefined;
  try {
    const info: unknown = JSON.parse(opened.payload);
    if (info === null || typeof info !== 'object') return undefined;
    const node = info as Partial<NodeInfo>;
    return typeof node.id === 'string' && typeof node.startedAt === 'number' && typeof node.heartbeatAt === 'number'
      ? (node as NodeInfo)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The live nodes, by id; `undefined` when Redis could not be asked. */
export async function liveNodes(redis: RedisConnection, seal: ClusterSeal): Promise<NodeInfo[] | undefined> {
  const ids = await redis.command(['ZRANGE', indexKey(redis), '0', '-1']);
  if (!Array.isArray(ids)) return undefined;
  const nodes: NodeInfo[] = [];
  for (let i = 0; i < ids.length; i += MGET_BATCH) {
    const keys = ids.slice(i, i + MGET_BATCH).map((id) => nodeKey(redis, String(id)));
    const values = await redis.command(['MGET', ...keys]);
    if (!Array.isArray(values)) return undefined;
    for (const [j, value] of values.entries()) {
      const node = openNode(seal, keys[j]!, value);
      if (node !== undefined) nodes.push(node);
    }
  }
  // Live nodes index themselves again at every heartbeat: the long silent ones go.
  void redis.command(['ZREMRANGEBYSCORE', indexKey(redis), '-inf', `(${Date.now() - FORGET_AFTER_MS}`]);
  return nodes.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
