/**
 * Several gateway instances behaving as one through Redis:
 *
 * - a registry of live nodes (heartbeats; see `registry.ts`);
 * - a generation, `<prefix>gen`, part of every shared token key: a reset increments it, which
 *   invalidates every shared token result at once;
 * - ResetAllCaches for all: {@link GatewayCluster.resetAll} increments the generation and
 *   broadcasts the reset; every node runs its `onReset` and reports; a node that missed the
 *   message sees the new generation at its next heartbeat and resets then.
 *
 * Redis down never stops a node: heartbeats fail quietly and resume, a reset resets this node
 * and is announced to the others when Redis is back.
 *
 * What the nodes write for each other is sealed with the cluster secret (`seal.ts`); the generation
 * is a bare counter (`INCR`), so a node resets only on a sealed reset message: a generation raised
 * by another Redis client moves the shared token keys (every shared result missed once), and
 * resets nothing.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { defaultNodeId, NODE_ID, NODE_ID_RULE } from './node-id.js';
import { optionChecks, optionKeys } from '../options.js';
import { log } from './log.js';
import { connectRedis, RedisConnection, redisSettings, type RedisClientLike, type RedisConnectionStats } from './redis.js';
import { liveNodes, removeNode, writeHeartbeat, type NodeDescription, type NodeInfo } from './registry.js';
import {
  collectReports,
  lastResetKey,
  openResetMessage,
  pushReport,
  resetChannel,
  type ClusterResetResult,
  type NodeResetReport,
  type ResetMessage,
} from './reset.js';
import { ClusterSeal, clusterSecrets, type ClusterMessageKind } from './seal.js';
import { SharedTokenResults } from './shared-token-results.js';

/** Options of {@link createGatewayCluster}. */
export interface GatewayClusterOptions {
  /**
   * Redis: a `redis://` / `rediss://` URL (the `redis` package is loaded then), a connected client
   * of your own (never closed by the cluster), or a connection from `connectRedis`.
   */
  redis: string | RedisClientLike | RedisConnection;
  /**
   * The cluster secret: at least 32 characters (`openssl rand -base64 32`), the same on every node;
   * during a rotation a list, whose first secret signs and every one verifies. What the nodes share
   * (token results, resets and their reports, the registry, sign-outs) is signed with it, and what
   * does not verify is ignored and counted ({@link GatewayCluster.rejected}): another client of the
   * same Redis cannot make a token valid or reset a node. Required.
   */
  secret: string | readonly string[];
  /** This node's id, unique in the cluster. Default `<host name>-<pid>`. */
  nodeId?: string;
  /** Prefix of every key and channel (with a URL or a client). Default `eag:`. */
  keyPrefix?: string;
  /** Longest wait for a Redis reply, milliseconds (with a URL or a client). Default 1000. */
  commandTimeoutMs?: number;
  /** Interval of heartbeats and generation checks, milliseconds. Default 1000. */
  heartbeatMs?: number;
  /** How long {@link GatewayCluster.resetAll} waits for the other nodes' reports, milliseconds. Default 2000. */
  resetWaitMs?: number;
  /**
   * This node's reset (for a gateway: its own ResetAllCaches). Resolves when done (with a JSON
   * result to report, if any); a rejection is reported as not applied, with its message.
   */
  onReset: () => Promise<unknown>;
  /** This node's description, written at each heartbeat and in reset reports. */
  describe?: () => NodeDescription;
}

/** The state of the cluster as one node sees it (for an admin status answer). */
export interface ClusterStatus {
  /** This node's id. */
  nodeId: string;
  /** The generation this node uses for shared token results (absent while unknown). */
  generation?: number;
  /** The generation whose reset this node has applied. */
  appliedGeneration?: number;
  /** The Redis connection. */
  redis: RedisConnectionStats & {
    /** Whether Redis answers now. */
    healthy: boolean;
    /** The last failure's message, if any. */
    lastError?: string;
  };
  /** The live nodes; absent when Redis could not be asked. */
  nodes?: NodeInfo[];
}

interface Outcome {
  applied: boolean;
  error?: string;
  result?: unknown;
}

interface Settings {
  secrets: string[];
  nodeId: string;
  heartbeatMs: number;
  resetWaitMs: number;
  onReset: () => Promise<unknown>;
  describe: (() => NodeDescription) | undefined;
}

const FACTORY = 'createGatewayCluster';
// Own reset ids remembered (to ignore their broadcast coming back).
const OWN_RESETS = 64;
// A published reset is heard within milliseconds; its seal allows for clocks a little apart.
const MESSAGE_LIFE_MS = 60_000;
// The last reset is kept this long for the nodes that missed its message: without it, a node
// that finds a newer generation does not reset (anyone who can write to Redis can raise it).
const LAST_RESET_KEEP_MS = 24 * 3_600_000;

function toGeneration(reply: unknown): number | undefined {
  if (reply === null) return 0;
  const value = typeof reply === 'number' ? reply : typeof reply === 'string' ? Number(reply) : NaN;
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Heartbeats between two counts of the live nodes (the first heartbeat counts). */
const LIVE_COUNT_EVERY = 5;

/**
 * One node of a gateway cluster. Create it with {@link createGatewayCluster}; give its
 * {@link GatewayCluster.tokenResults} to every token policy (option `shared`), and route the
 * gateway's ResetAllCaches through {@link GatewayCluster.resetAll}.
 */
export class GatewayCluster {
  /** This node's id. */
  readonly nodeId: string;
  /** Epoch ms at which this node started. */
  readonly startedAt = Date.now();
  /** The Redis connection. */
  readonly redis: RedisConnection;
  /** Seals and opens what the nodes share. @internal */
  readonly seal: ClusterSeal;
  readonly #owned: boolean;
  readonly #settings: Settings;
  readonly #genKey: string;
  readonly #own = new Set<string>();
  #known: number | undefined;
  #applied: number | undefined;
  #wanted = -1;
  #owed = false;
  #queue: Promise<unknown> = Promise.resolve();
  #last: Outcome | undefined;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  #tokenResults: SharedTokenResults | undefined;
  /** The generation last found without a sealed reset (logged once). */
  #unexplained: number | undefined;
  #closed = false;
  /** The live nodes last counted, and the heartbeats until the next count. */
  #liveCount: number | undefined;
  #beatsToCount = 0;

  /** @internal Use {@link createGatewayCluster}. */
  constructor(redis: RedisConnection, owned: boolean, settings: Settings) {
    this.redis = redis;
    this.seal = new ClusterSeal(settings.secrets);
    this.#owned = owned;
    this.#settings = settings;
    this.nodeId = settings.nodeId;
    this.#genKey = `${redis.keyPrefix}gen`;
  }

  /**
   * The generation of shared token results this node uses; `undefined` while unknown (Redis not
   * reached yet) or while a reset made without Redis is not announced yet: nothing is shared then.
   */
  get generation(): number | undefined {
    return this.#owed ? undefined : this.#known;
  }

  /** The token results shared by this cluster's nodes: give it to every token policy (option `shared`). */
  get tokenResults(): SharedTokenResults {
    this.#tokenResults ??= new SharedTokenResults({
      redis: this.redis,
      secret: this.#settings.secrets,
      nodeId: this.nodeId,
      generation: () => this.generation,
    });
    return this.#tokenResults;
  }

  /**
   * Entries and messages read from Redis that did not verify with the cluster secret, by kind, since
   * this node started: written by something other than a node given the same secret (a forgery, or
   * a node given another secret). Each was ignored.
   */
  get rejected(): Record<ClusterMessageKind, number> {
    return { ...this.seal.rejected, token_result: this.#tokenResults?.stats.rejected ?? 0 };
  }

  /**
   * How many nodes were live when last counted (every few heartbeats, while Redis answers):
   * `undefined` before the first count. What traffic control's `localShare` divides its limits by
   * while Redis is down, when nothing can be asked.
   */
  get liveNodeCount(): number | undefined {
    return this.#liveCount;
  }

  /** The live nodes (this one included while its heartbeat is current), by id; `undefined` when Redis could not be asked. */
  nodes(): Promise<NodeInfo[] | undefined> {
    return liveNodes(this.redis, this.seal);
  }

  /** This node's view of the cluster, for an admin status answer. */
  async status(): Promise<ClusterStatus> {
    const nodes = await this.nodes();
    const { lastError } = this.redis;
    const status: ClusterStatus = {
      nodeId: this.nodeId,
      redis: { healthy: this.redis.healthy, ...this.redis.stats, ...(lastError === undefined ? {} : { lastError }) },
    };
    if (this.generation !== undefined) status.generation = this.generation;
    if (this.#applied !== undefined) status.appliedGeneration = this.#applied;
    if (nodes !== undefined) status.nodes = nodes;
    return status;
  }

  /**
   * ResetAllCaches on every node: increments the generation (every shared token result is then
   * forgotten), tells every node, resets this one, and waits up to `resetWaitMs` for the others'
   * reports. Never rejects: when Redis is down, this node is reset and the answer says the
   * others could not be told (`broadcast: 'deferred'`).
   */
  async resetAll(): Promise<ClusterResetResult> {
    const resetId = randomUUID();
    this.#remember(resetId);
    const generation = toGeneration(await this.redis.command(['INCR', this.#genKey]));
    if (generation === undefined || generation === 0) {
      // Told when Redis is back; meanwhile no shared result (they may predate this reset).
      this.#owed = true;
      log('reset %s: Redis unreachable; this node resets alone, the others will be told later', resetId);
      return { resetId, broadcast: 'deferred', nodes: [this.#report(await this.#reset(undefined))], missing: [] };
    }
    this.#known = Math.max(this.#known ?? 0, generation);
    // This node's heartbeat must not take the new generation for a missed reset.
    this.#wanted = Math.max(this.#wanted, generation);
    const started = Date.now();
    const deadline = started + this.#settings.resetWaitMs;
    // Most of the wait may go to reading the registry (Redis skips commands for a while after a
    // timeout); the others report within a few milliseconds of the broadcast.
    const others = (await this.#liveNodesBy(started + this.#settings.resetWaitMs * 0.75))
      ?.map((node) => node.id)
      .filter((id) => id !== this.nodeId);
    await this.#broadcast({ resetId, generation, origin: this.nodeId });
    const [own, collected] = await Promise.all([this.#reset(generation), collectReports(this.redis, this.seal, resetId, others, deadline)]);
    log(
      'reset %s: generation %d, %d other node(s) reported, %d missing',
      resetId,
      generation,
      collected.reports.length,
      collected.missing.length,
    );
    const result: ClusterResetResult = {
      resetId,
      generation,
      broadcast: 'sent',
      nodes: [this.#report(own), ...collected.reports.filter((r) => r.nodeId !== this.nodeId)],
      missing: collected.missing,
    };
    if (others === undefined) result.nodesUnknown = true;
    return result;
  }

  /**
   * The live nodes, asked again until `deadline` when Redis does not answer (a command that timed
   * out, the pause after it): a reset must not take an unread registry for a cluster of one.
   */
  async #liveNodesBy(deadline: number): Promise<NodeInfo[] | undefined> {
    for (;;) {
      const nodes = await this.nodes();
      if (nodes !== undefined || Date.now() >= deadline) return nodes;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops the heartbeats, leaves the registry, unsubscribes, and closes the Redis connection it opened. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#beating;
    await removeNode(this.redis, this.nodeId);
    await this.redis.unsubscribe(resetChannel(this.redis));
    if (this.#owned) await this.redis.close();
  }

  /** @internal Reads the generation, subscribes, writes the first heartbeat, starts the timer. */
  async start(): Promise<void> {
    const channel = resetChannel(this.redis);
    const subscribed = this.redis.subscribe(channel, (text) => {
      const message = openResetMessage(this.seal, channel, text);
      if (message !== undefined) void this.#onMessage(message);
    });
    await Promise.all([this.#tick(), subscribed]);
    this.#timer = setInterval(() => void this.#tick(), this.#settings.heartbeatMs);
    this.#timer.unref();
  }

  #tick(): Promise<void> {
    if (this.#beating === undefined && !this.#closed) {
      this.#beating = this.#beat()
        .catch((err: unknown) => log('heartbeat failed: %s', messageOf(err)))
        .finally(() => {
          this.#beating = undefined;
        });
    }
    return this.#beating ?? Promise.resolve();
  }

  async #beat(): Promise<void> {
    if (this.#owed) await this.#announce();
    await this.#checkGeneration();
    const written = await writeHeartbeat(this.redis, this.seal, this.#info(), 3 * this.#settings.heartbeatMs);
    if (written && --this.#beatsToCount <= 0) {
      const nodes = await this.nodes();
      if (nodes !== undefined) this.#liveCount = Math.max(1, nodes.length);
      this.#beatsToCount = LIVE_COUNT_EVERY;
    }
  }

  /** Reads the generation; a newer one than this node knows means a reset it missed. */
  async #checkGeneration(): Promise<void> {
    const generation = toGeneration(await this.redis.command(['GET', this.#genKey]));
    if (generation === undefined || this.#owed) return;
    if (this.#applied === undefined || generation < (this.#known ?? 0)) {
      // First contact (this node's caches are new), or Redis lost its data: take it as it is.
      if (this.#applied !== undefined) log('the generation went back to %d (Redis lost its data?)', generation);
      this.#known = this.#applied = generation;
      this.#wanted = Math.max(this.#wanted, generation);
      return;
    }
    this.#known = Math.max(this.#known ?? 0, generation);
    if (generation > this.#wanted) {
      // A reset message was missed, or the generation was raised without one (a reset under way
      // whose message comes next, or a client that is not a node): only the sealed last reset,
      // newer than any this node took, makes it reset.
      const place = lastResetKey(this.redis);
      const message = openResetMessage(this.seal, place, await this.redis.command(['GET', place]));
      if (message === undefined || message.generation <= this.#wanted) {
        if (this.#unexplained !== generation)
          log('generation %d found at heartbeat without a reset message: shared results follow it, this node is not reset', generation);
        this.#unexplained = generation;
        return;
      }
      log('generation %d found at heartbeat (a reset message was missed): resetting', generation);
      // The last broadcast, when it is this generation's, is answered as if received.
      if (message.generation === generation) void this.#onMessage(message);
      else void this.#reset(generation);
    }
  }

  /** Publishes a reset, and keeps it for the nodes that miss it (they see the generation at their heartbeat). */
  async #broadcast(message: ResetMessage): Promise<void> {
    const text = JSON.stringify(message);
    const last = lastResetKey(this.redis);
    const channel = resetChannel(this.redis);
    void this.redis.command(['SET', last, this.seal.seal('reset', last, text, LAST_RESET_KEEP_MS), 'PX', String(LAST_RESET_KEEP_MS)]);
    await this.redis.command(['PUBLISH', channel, this.seal.seal('reset', channel, text, MESSAGE_LIFE_MS)]);
  }

  /** Announces a reset made while Redis was down. */
  async #announce(): Promise<void> {
    const generation = toGeneration(await this.redis.command(['INCR', this.#genKey]));
    if (generation === undefined || generation === 0) return;
    const resetId = randomUUID();
    this.#remember(resetId);
    this.#known = this.#applied = generation;
    this.#wanted = Math.max(this.#wanted, generation);
    this.#owed = false;
    await this.#broadcast({ resetId, generation, origin: this.nodeId });
    log('reset made while Redis was down announced: generation %d', generation);
  }

  async #onMessage(message: ResetMessage): Promise<void> {
    if (this.#own.has(message.resetId) || this.#closed) return;
    this.#known = Math.max(this.#known ?? 0, message.generation);
    const outcome = await this.#reset(message.generation);
    if (this.#closed) return;
    pushReport(this.redis, this.seal, message.resetId, this.#report(outcome), 5 * this.#settings.resetWaitMs);
  }

  /**
   * Runs `onReset` for `target` (one at a time); when this node has already applied that
   * generation, answers the last outcome instead of resetting again.
   */
  #reset(target: number | undefined): Promise<Outcome> {
    if (target !== undefined) this.#wanted = Math.max(this.#wanted, target);
    const run = this.#queue.then(async (): Promise<Outcome> => {
      if (target !== undefined && this.#applied !== undefined && target <= this.#applied && this.#last !== undefined) return this.#last;
      if (target !== undefined) this.#applied = Math.max(this.#applied ?? target, target);
      let outcome: Outcome;
      try {
        const result = await this.#settings.onReset();
        outcome = { applied: true, ...(result === undefined ? {} : { result }) };
      } catch (err) {
        outcome = { applied: false, error: messageOf(err) };
        log('reset failed on this node: %s', outcome.error);
      }
      this.#last = outcome;
      return outcome;
    });
    this.#queue = run;
    return run;
  }

  #report(outcome: Outcome): NodeResetReport {
    return { nodeId: this.nodeId, ...outcome, config: this.#describe() };
  }

  #describe(): NodeDescription {
    try {
      return this.#settings.describe?.() ?? {};
    } catch (err) {
      log('describe failed: %s', messageOf(err));
      return {};
    }
  }

  #info(): NodeInfo {
    const info: NodeInfo = { ...this.#describe(), id: this.nodeId, startedAt: this.startedAt, heartbeatAt: Date.now() };
    if (this.#applied !== undefined) info.generation = this.#applied;
    return info;
  }

  #remember(resetId: string): void {
    this.#own.add(resetId);
    if (this.#own.size > OWN_RESETS) this.#own.delete(this.#own.values().next().value!);
  }
}

const CLUSTER_KEYS = optionKeys<GatewayClusterOptions>({
  redis: true,
  nodeId: true,
  keyPrefix: true,
  commandTimeoutMs: true,
  heartbeatMs: true,
  resetWaitMs: true,
  onReset: true,
  describe: true,
  secret: true,
});

/**
 * Joins (or starts) a gateway cluster: connects to Redis (a Redis that is down is connected to
 * later, by itself), reads the generation, subscribes to resets and writes the first heartbeat.
 * Rejects only on a bad option (`InvalidOptionError`) or a missing `redis` package.
 *
 * @example
 * ```ts
 * const cluster = await createGatewayCluster({
 *   redis: process.env.REDIS_URL!,
 *   secret: process.env.GATEWAY_CLUSTER_SECRET!,
 *   nodeId: 'gw-1',
 *   onReset: () => gateway.resetAllCaches(),
 *   describe: () => ({ configLoadedAt: gateway.configState.loadedAt, apis: gateway.configState.apis }),
 * });
 * const policy = createTokenPolicy({ ...settings, shared: cluster.tokenResults });
 * ```
 */
export async function createGatewayCluster(options: GatewayClusterOptions): Promise<GatewayCluster> {
  const check = optionChecks(FACTORY);
  check.object(options, '');
  check.known(options, '', CLUSTER_KEYS);
  const settings: Settings = {
    secrets: clusterSecrets(check, options.secret, 'secret'),
    nodeId: check.string(options.nodeId, 'nodeId', defaultNodeId(), NODE_ID, NODE_ID_RULE),
    heartbeatMs: check.positive(options.heartbeatMs, 'heartbeatMs', 1000),
    resetWaitMs: check.positive(options.resetWaitMs, 'resetWaitMs', 2000),
    onReset:
      check.optionalFunction<() => Promise<unknown>>(options.onReset, 'onReset') ?? check.fail('onReset', 'is required (this node reset)'),
    describe: check.optionalFunction<() => NodeDescription>(options.describe, 'describe'),
  };
  let redis: RedisConnection;
  let owned = false;
  if (options.redis instanceof RedisConnection) {
    if (options.keyPrefix !== undefined && options.keyPrefix !== options.redis.keyPrefix)
      check.fail('keyPrefix', 'differs from the connection’s own (give it to connectRedis)');
    if (options.commandTimeoutMs !== undefined) check.fail('commandTimeoutMs', 'is the connection’s own (give it to connectRedis)');
    redis = options.redis;
  } else {
    // Checked here so that a bad one is reported under this factory's name.
    redisSettings(check, {
      ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
      ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
    });
    if (typeof options.redis !== 'string' && (options.redis === null || typeof options.redis !== 'object'))
      check.fail('redis', 'must be a redis:// URL, a Redis client or a RedisConnection');
    redis = await connectRedis(options.redis, {
      ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
      ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
    });
    owned = true;
  }
  const cluster = new GatewayCluster(redis, owned, settings);
  await cluster.start();
  log('node %s joined (generation %s)', settings.nodeId, cluster.generation ?? 'unknown');
  return cluster;
}
