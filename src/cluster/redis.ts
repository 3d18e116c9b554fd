/**
 * The Redis connection of a gateway cluster: a thin wrapper over the official `redis` client
 * (node-redis), loaded only when a URL is given, that never lets Redis hurt a request:
 *
 * - every command is bounded by a timeout (default 1000 ms, above what a healthy Redis takes on a
 *   crowded host: measured with the machine's load at 10, 0.5 % of replies over 100 ms, none over
 *   900 ms): past it, that command gives up;
 * - a command never throws: a failure gives `undefined` to the caller and counts;
 * - Redis is judged down (a circuit opened) by a failed connection or command, or by
 *   {@link TIMEOUTS_TO_OPEN} timeouts in a row, not by one slow reply of a busy host: commands are
 *   then skipped at once for a short while, then one alone goes through as a probe (and a
 *   reconnection ends the pause at once), so that a Redis that hangs costs a few timeouts, not
 *   one per request;
 * - while disconnected, commands fail at once (`disableOfflineQueue`) and the client reconnects
 *   by itself with a capped backoff.
 *
 * Pub/sub uses a second connection (`duplicate()`), which a subscribed client needs.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { InvalidOptionError, optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { log } from './log.js';

/**
 * What the gateway uses of a Redis client: the shape of a connected node-redis (`redis` v5 or v6)
 * client, declared here so that the gateway's types do not need the `redis` package. Pass your own
 * connected client where a URL is also accepted; the gateway never closes a client it was given
 * (only the pub/sub connection it opens with `duplicate()`).
 */
export interface RedisClientLike {
  /** Sends one command (`['SET', key, value, ...]`); resolves with its reply. */
  sendCommand(args: string[]): Promise<unknown>;
  /** Opens the connection. */
  connect(): Promise<unknown>;
  /** A new, unconnected client with the same settings (for pub/sub). */
  duplicate(): RedisClientLike;
  /** Subscribes to a channel; `listener` receives each message. */
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** Unsubscribes from a channel. */
  unsubscribe(channel: string): Promise<unknown>;
  /** Adds an event listener (`error`, `ready`). */
  // `any`: node-redis takes an EventEmitter listener, `(...args: any[]) => void`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: string, listener: (...args: any[]) => void): unknown;
  /** Removes an event listener. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  removeListener?(event: string, listener: (...args: any[]) => void): unknown;
  /** Connected and ready for commands. */
  readonly isReady: boolean;
  /** Connected or connecting. */
  readonly isOpen: boolean;
  /** Closes gracefully (node-redis 5+). */
  close?(): Promise<unknown>;
  /** Closes gracefully (older clients). */
  quit?(): Promise<unknown>;
  /** Closes at once. */
  destroy?(): void;
}

/** A Lua script for {@link RedisConnection.evalScript}: its source and the SHA-1 Redis knows it by. */
export interface RedisScript {
  /** The Lua source. */
  readonly source: string;
  /** SHA-1 of `source`, lower-case hex. */
  readonly sha: string;
}

/** A {@link RedisScript} of `source`. */
export function redisScript(source: string): RedisScript {
  return Object.freeze({ source, sha: createHash('sha1').update(source).digest('hex') });
}

/**
 * Timeouts in a row that open the circuit: one slow reply (a host busy for a moment) fails its own
 * command only; a Redis that hangs fails every command, and is judged down after these.
 */
export const TIMEOUTS_TO_OPEN = 3;

/** The default command timeout, milliseconds (see the module comment). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 1000;

/** Options of {@link connectRedis}. */
export interface RedisConnectionOptions {
  /** Prefix of every key and channel the gateway uses. Default `eag:`. */
  keyPrefix?: string;
  /** Longest wait for a command's reply, milliseconds; past it the command gives up (three in a row: Redis counts as down). Default 1000. */
  commandTimeoutMs?: number;
  /** After a failure, how long commands are skipped before one probes again, milliseconds. Default 1000. */
  retryAfterMs?: number;
  /** Connection timeout of a client created from a URL, milliseconds. Default 1000. */
  connectTimeoutMs?: number;
  /** Longest pause between reconnection attempts of a client created from a URL, milliseconds. Default 2000. */
  maxReconnectDelayMs?: number;
}

/** Counters of a {@link RedisConnection}. */
export interface RedisConnectionStats {
  /** Commands sent. */
  commands: number;
  /** Commands that failed or timed out. */
  failures: number;
  /** Of which timed out. */
  timeouts: number;
  /** Commands not sent because Redis was down (disconnected, or failing lately). */
  skipped: number;
}

/** The Redis client package is not installed. */
export class RedisPackageMissingError extends Error {
  /** Always `ERR_REDIS_PACKAGE_MISSING`. */
  readonly code = 'ERR_REDIS_PACKAGE_MISSING';

  constructor(cause: unknown) {
    super('sharing through Redis needs the redis package (npm install redis)', { cause });
    this.name = 'RedisPackageMissingError';
  }
}

interface Settings {
  keyPrefix: string;
  commandTimeoutMs: number;
  retryAfterMs: number;
}

const FACTORY = 'connectRedis';
const CLOSE_TIMEOUT_MS = 1000;
/**
 * Commands node-redis may hold unwritten or unanswered on a connection this module created; past
 * it, a command fails at once (a miss, like a timeout). A Redis that hangs stops the sending after
 * one timeout (see the module comment), so this is reached only by a burst.
 */
const MAX_QUEUED_COMMANDS = 10_000;

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The option checks shared by {@link connectRedis} and the factories that take its options. @internal */
export function redisSettings(
  check: OptionChecks,
  options: RedisConnectionOptions,
): Settings & { connectTimeoutMs: number; maxReconnectDelayMs: number } {
  return {
    keyPrefix: check.string(
      options.keyPrefix,
      'keyPrefix',
      'eag:',
      /^[^\s*?[\]\\]{1,100}$/,
      'a string of 1 to 100 characters without spaces or *?[]\\',
    ),
    commandTimeoutMs: check.positive(options.commandTimeoutMs, 'commandTimeoutMs', DEFAULT_COMMAND_TIMEOUT_MS),
    retryAfterMs: check.positive(options.retryAfterMs, 'retryAfterMs', 1000),
    connectTimeoutMs: check.positive(options.connectTimeoutMs, 'connectTimeoutMs', 1000),
    maxReconnectDelayMs: check.positive(options.maxReconnectDelayMs, 'maxReconnectDelayMs', 2000),
  };
}

/**
 * A Redis connection whose commands never throw and never wait long: see the module comment.
 * Create it with {@link connectRedis}.
 */
export class RedisConnection {
  /** Prefix of every key and channel. */
  readonly keyPrefix: string;
  /** Longest wait for a reply, milliseconds. */
  readonly commandTimeoutMs: number;
  readonly #client: RedisClientLike;
  readonly #owned: boolean;
  readonly #retryAfterMs: number;
  readonly #stats: RedisConnectionStats = { commands: 0, failures: 0, timeouts: 0, skipped: 0 };
  readonly #channels = new Map<string, (message: string) => void>();
  readonly #subscribed = new Set<string>();
  readonly #subscribing = new Set<string>();
  readonly #onReady = (): void => {
    this.#failing = false;
    this.#timeoutsInRow = 0;
    this.#probing = false;
    log('redis: ready');
    this.#said(true);
  };
  readonly #onError = (err: Error): void => {
    log('redis: %s', err.message);
    if (!this.#client.isReady) this.#said(false, err.message);
  };
  readonly #watchers = new Set<(available: boolean, cause?: string) => void>();
  /** What the watchers were last told: `undefined` before anything was known. */
  #available: boolean | undefined;
  #subscriber: RedisClientLike | undefined;
  #failing = false;
  #retryAt = 0;
  /** Commands timed out since the last reply. */
  #timeoutsInRow = 0;
  /** While the circuit is open: the one command let through to probe Redis is under way. */
  #probing = false;
  #lastError: string | undefined;
  #closed = false;

  /** @internal Use {@link connectRedis}. */
  constructor(client: RedisClientLike, owned: boolean, settings: Settings) {
    this.#client = client;
    this.#owned = owned;
    this.keyPrefix = settings.keyPrefix;
    this.commandTimeoutMs = settings.commandTimeoutMs;
    this.#retryAfterMs = settings.retryAfterMs;
    client.on('ready', this.#onReady);
    client.on('error', this.#onError);
  }

  /**
   * Calls `listener` at each change of Redis's availability (a failed connection or command: false,
   * with its cause; the connection ready, or a command answered after a failure: true), and at
   * once with what is known now. Returns the function that stops it.
   */
  onAvailability(listener: (available: boolean, cause?: string) => void): () => void {
    this.#watchers.add(listener);
    if (this.#available !== undefined) listener(this.#available, this.#available ? undefined : this.#lastError);
    return () => this.#watchers.delete(listener);
  }

  #said(available: boolean, cause?: string): void {
    if (this.#available === available || this.#closed) return;
    this.#available = available;
    for (const watcher of this.#watchers) watcher(available, cause);
  }

  /** Whether Redis answers: connected, and the last command did not fail. */
  get healthy(): boolean {
    return !this.#closed && this.#client.isReady && !this.#failing;
  }

  /** Counters since creation (a copy). */
  get stats(): RedisConnectionStats {
    return { ...this.#stats };
  }

  /** The message of the last failure, if any (never a key or a value). */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /**
   * Sends one command. Resolves with its reply (`null` for a nil reply), or `undefined` when it
   * failed, timed out, or was not sent because Redis is down. Never rejects. Commands are sent in
   * the order of the calls (the command is handed to the client before this returns).
   */
  command(args: readonly string[]): Promise<unknown> {
    return this.#send([...args], undefined);
  }

  /**
   * Runs a Lua script by its SHA-1 (`EVALSHA`), and by its source (`EVAL`) when Redis answers that
   * it does not hold it (after a restart or a `SCRIPT FLUSH`): one round trip but then. Resolves
   * and never rejects as {@link RedisConnection.command} does, both tries within one command timeout.
   */
  evalScript(script: RedisScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    return this.#send(['EVALSHA', script.sha, ...tail], ['EVAL', script.source, ...tail]);
  }

  #send(args: string[], whenNoScript: string[] | undefined): Promise<unknown> {
    if (this.#closed) return Promise.resolve(undefined);
    if (!this.#client.isReady || (this.#failing && (Date.now() < this.#retryAt || this.#probing))) {
      this.#stats.skipped++;
      return Promise.resolve(undefined);
    }
    // Past the pause, one command alone probes Redis; the others are skipped until it answers.
    const probe = this.#failing;
    if (probe) this.#probing = true;
    this.#stats.commands++;
    const name = args[0] ?? '';
    return new Promise((resolve) => {
      let settled = false;
      // The timer's turn can come after a blocked event loop, with the reply already read off the
      // socket but not yet handled (timers run before I/O): the verdict waits for the I/O of that
      // turn. A timer late by more than half the timeout means the loop was blocked, perhaps before
      // the command was even written: Redis is given the whole timeout once more.
      const startedAt = performance.now();
      let extended = false;
      const expire = (): void => {
        if (!extended && performance.now() - startedAt > this.commandTimeoutMs * 1.5) {
          extended = true;
          timer = setTimeout(expire, this.commandTimeoutMs);
          return;
        }
        setImmediate(() => {
          if (settled) return;
          settled = true;
          if (probe) this.#probing = false;
          this.#stats.timeouts++;
          const message = `no reply within ${this.commandTimeoutMs} ms`;
          // One slow reply fails its command; several in a row (or a probe's) open the circuit.
          if (++this.#timeoutsInRow >= TIMEOUTS_TO_OPEN || this.#failing) this.#fail(name, message);
          else {
            this.#stats.failures++;
            this.#lastError = message;
          }
          resolve(undefined);
        });
      };
      let timer = setTimeout(expire, this.commandTimeoutMs);
      let reply = this.#sendNow(args);
      if (whenNoScript !== undefined) {
        reply = reply.catch((err: unknown) => {
          if (settled || !messageOf(err).startsWith('NOSCRIPT')) throw err;
          this.#stats.commands++;
          return this.#sendNow(whenNoScript);
        });
      }
      reply.then(
        (value) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          if (probe) this.#probing = false;
          this.#timeoutsInRow = 0;
          this.#failing = false;
          this.#said(true);
          resolve(value);
        },
        (err: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          if (probe) this.#probing = false;
          this.#fail(name, messageOf(err));
          resolve(undefined);
        },
      );
    });
  }

  /**
   * Calls `listener` with every message published on `channel`, on the pub/sub connection (opened
   * at first use). Subscribes now if that connection is ready, else as soon as it is; the client
   * subscribes again by itself after a reconnection. Resolves `true` once subscribed, or `false`
   * when that took longer than `waitMs` (the subscription is still made when Redis answers).
   */
  subscribe(channel: string, listener: (message: string) => void, waitMs = 1000): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    this.#channels.set(channel, listener);
    const subscriber = this.#pubSub();
    if (subscriber.isReady) void this.#trySubscribe(subscriber, channel);
    return new Promise((resolve) => {
      const started = Date.now();
      const poll = (): void => {
        if (this.#subscribed.has(channel)) resolve(true);
        else if (this.#closed || Date.now() - started >= waitMs) resolve(false);
        else setTimeout(poll, 5).unref();
      };
      poll();
    });
  }

  /** Stops the messages of `channel`. */
  async unsubscribe(channel: string): Promise<void> {
    this.#channels.delete(channel);
    const subscriber = this.#subscriber;
    if (subscriber === undefined || !this.#subscribed.delete(channel) || !subscriber.isReady) return;
    await subscriber.unsubscribe(channel).catch((err: unknown) => log('redis: unsubscribe failed: %s', messageOf(err)));
  }

  /** Whether the pub/sub connection is subscribed to `channel` now. */
  subscribed(channel: string): boolean {
    return this.#subscriber?.isReady === true && this.#subscribed.has(channel);
  }

  /** Closes the pub/sub connection, and the client when it was created from a URL. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#channels.clear();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    if (subscriber !== undefined) await shutdown(subscriber);
    if (this.#owned) {
      await shutdown(this.#client);
    } else {
      this.#client.removeListener?.('ready', this.#onReady);
      this.#client.removeListener?.('error', this.#onError);
    }
  }

  #sendNow(args: string[]): Promise<unknown> {
    try {
      return this.#client.sendCommand(args);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #fail(command: string, message: string): void {
    this.#stats.failures++;
    // One log line per outage, not one per request.
    if (!this.#failing) log('redis: %s failed: %s; Redis is considered down for %d ms', command, message, this.#retryAfterMs);
    this.#failing = true;
    this.#retryAt = Date.now() + this.#retryAfterMs;
    this.#lastError = message;
    this.#said(false, `${command}: ${message}`);
  }

  #pubSub(): RedisClientLike {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const subscriber = this.#client.duplicate();
    subscriber.on('error', (err: Error) => log('redis pub/sub: %s', err.message));
    subscriber.on('ready', () => {
      log('redis pub/sub: ready');
      for (const channel of this.#channels.keys()) if (!this.#subscribed.has(channel)) void this.#trySubscribe(subscriber, channel);
    });
    subscriber.connect().catch((err: unknown) => log('redis pub/sub: connection closed: %s', messageOf(err)));
    this.#subscriber = subscriber;
    return subscriber;
  }

  async #trySubscribe(subscriber: RedisClientLike, channel: string): Promise<void> {
    if (this.#subscribing.has(channel)) return;
    this.#subscribing.add(channel);
    try {
      await subscriber.subscribe(channel, (message) => this.#channels.get(channel)?.(message));
      this.#subscribed.add(channel);
    } catch (err) {
      // Tried again at the next 'ready'.
      log('redis pub/sub: subscribe failed: %s', messageOf(err));
    } finally {
      this.#subscribing.delete(channel);
    }
  }
}

/** Closes a client gracefully when it is connected (bounded), else at once. */
async function shutdown(client: RedisClientLike): Promise<void> {
  if (client.isReady) {
    const graceful = client.close?.() ?? client.quit?.();
    if (graceful !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([graceful.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)))]);
      clearTimeout(timer);
    }
  }
  if (client.isOpen) {
    try {
      client.destroy?.();
    } catch {
      // Already closed.
    }
  }
}

function isClient(value: unknown): value is RedisClientLike {
  if (value === null || typeof value !== 'object') return false;
  const client = value as Partial<Record<keyof RedisClientLike, unknown>>;
  return typeof client.sendCommand === 'function' && typeof client.duplicate === 'function' && typeof client.on === 'function';
}

type CreateClient = (options: Record<string, unknown>) => RedisClientLike;

async function loadCreateClient(): Promise<CreateClient> {
  try {
    const module = await import('redis');
    return module.createClient as unknown as CreateClient;
  } catch (err) {
    throw new RedisPackageMissingError(err);
  }
}

const REDIS_KEYS = optionKeys<RedisConnectionOptions>({
  keyPrefix: true,
  commandTimeoutMs: true,
  retryAfterMs: true,
  connectTimeoutMs: true,
  maxReconnectDelayMs: true,
});

/**
 * Connects to Redis: from a URL (`redis://` or `rediss://`, the `redis` package is loaded then),
 * or over a client the host created and connected itself (any object of the
 * {@link RedisClientLike} shape). Waits for the connection up to `connectTimeoutMs`, then
 * resolves connected or not: a Redis that is down at start is connected to later, by itself. Rejects only on a bad option
 * (`InvalidOptionError`) or when the `redis` package is missing ({@link RedisPackageMissingError}).
 *
 * @example
 * ```ts
 * const redis = await connectRedis('redis://127.0.0.1:6379', { keyPrefix: 'gw:' });
 * ```
 */
export async function connectRedis(urlOrClient: string | RedisClientLike, options: RedisConnectionOptions = {}): Promise<RedisConnection> {
  const check = optionChecks(FACTORY);
  check.object(options, '');
  check.known(options, '', REDIS_KEYS);
  const settings = redisSettings(check, options);
  if (isClient(urlOrClient)) return new RedisConnection(urlOrClient, false, settings);
  if (typeof urlOrClient !== 'string')
    throw new InvalidOptionError(`${FACTORY}: urlOrClient`, 'must be a redis:// URL or a connected Redis client');
  let url: URL | undefined;
  try {
    url = new URL(urlOrClient);
  } catch {
    // Reported below.
  }
  // The message never repeats the URL: it may hold a password.
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:'))
    throw new InvalidOptionError(`${FACTORY}: url`, 'must be a redis:// or rediss:// URL');
  const createClient = await loadCreateClient();
  const client = createClient({
    url: urlOrClient,
    // Fail at once while disconnected instead of queueing commands behind the outage.
    disableOfflineQueue: true,
    // No per-command timeout of node-redis's (by default 5 s: an AbortSignal and a timer each,
    // more CPU than the command they guard): the connection's own timeout answers for each
    // command, and this bounds node-redis's queue when a server hangs.
    commandOptions: { timeout: 0 },
    commandsQueueMaxLength: MAX_QUEUED_COMMANDS,
    socket: {
      connectTimeout: settings.connectTimeoutMs,
      // Exponential backoff with jitter, capped; never gives up.
      reconnectStrategy: (retries: number) =>
        Math.min(50 * 2 ** Math.min(retries, 10), settings.maxReconnectDelayMs) + Math.floor(Math.random() * 50),
    },
  });
  const connection = new RedisConnection(client, true, settings);
  // Awaited only for the connection timeout: a Redis that is down must not hold the start.
  const connected = client.connect().then(
    () => undefined,
    (err: unknown) => log('redis: connection closed: %s', messageOf(err)),
  );
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([connected, new Promise((resolve) => (timer = setTimeout(resolve, settings.connectTimeoutMs)))]);
  clearTimeout(timer);
  if (!client.isReady) log('redis: not connected yet; the gateway goes on without it and connects when it can');
  return connection;
}
