/**
 * Token results shared between gateway instances through Redis: the second cache level behind
 * each token policy's own (in-memory) one, and the single-flight of validations across instances.
 *
 * Keys (never the token: its SHA-256, as the local cache keys it):
 *
 * - `<prefix>tok:<generation>:<policy>:<hash>`: the validation result, JSON without the token, or
 *   a refusal, sealed with the cluster secret for that key (`seal.ts`: an entry another Redis
 *   client wrote, or copied from another key, is ignored); it lives min(policy TTL, exp − now), a
 *   refusal the policy's refusal TTL;
 * - `<prefix>tok:<generation>:<policy>:<hash>:lock`: held (`SET NX PX`) by the instance that
 *   validates the token now; the others wait for its result, up to the lock's life;
 * - `<prefix>idx:<generation>:<policy>:s:<hash of subject>` and `…:c:<hash of client id>`: the
 *   tokens of one subject or client, so that `TokenPolicy.forget` drops them here too.
 *
 * `<policy>` is the policy's name and a fingerprint of its validation settings: instances running
 * different configurations never take each other's results. The generation is the cluster's: a
 * reset increments it, and every result of the older one is ignored at once, without a scan.
 *
 * Whatever Redis does, the caller goes on with its local cache alone: a failed or slow read is a
 * miss, a lock that cannot be taken is taken locally, a failed write is forgotten.
 *
 * @module
 */
import { hash, randomUUID } from 'node:crypto';
import type { TokenInfo } from '../context.js';
import { optionChecks, optionKeys } from '../options.js';
import { log } from './log.js';
import { RedisConnection } from './redis.js';
import { ClusterSeal, clusterSecrets, MAX_SEALED_BYTES } from './seal.js';

/** A valid result as shared: what the token policy caches, without the token. @internal */
export interface SharedValidation {
  /** `exp` of the token, seconds since the epoch. */
  readonly exp: number | undefined;
  /** Normalized information. */
  readonly info: TokenInfo;
  /** Introspection response. */
  readonly introspection?: Readonly<Record<string, unknown>>;
  /** JWT claims. */
  readonly jwt?: Readonly<Record<string, unknown>>;
  /** UserInfo response. */
  readonly userInfo?: Readonly<Record<string, unknown>>;
}

/** A refusal as shared: what the token policy answers again, and whose token it was. @internal */
export interface SharedRefusal {
  /** The error code to answer with. */
  readonly code: 'ERR_TOKEN_INVALID' | 'ERR_TOKEN_EXPIRED';
  /** Why (a diagnostic, never the token). */
  readonly diagnostic: string;
  /** `sub` of the token, when the server's answer named it. */
  readonly subject?: string;
  /** Client id of the token, when the server's answer named it. */
  readonly clientId?: string;
}

/**
 * A lookup that found nothing: where to write the result, and the lock when this instance holds
 * it. Give it back with {@link SharedTokenResults.release} once the result is written (or not).
 * @internal
 */
export interface SharedTicket {
  /** The result's key; `undefined` when nothing may be shared (generation unknown). */
  readonly key: string | undefined;
  /** The index keys' stem. */
  readonly index: string | undefined;
  /** The lock's value, when this instance holds the lock. */
  owner: string | undefined;
}

/** What {@link SharedTokenResults.lookup} found. @internal */
export type SharedLookup =
  | {
      /** A valid result. */
      readonly kind: 'valid';
      /** The result. */
      readonly value: SharedValidation;
      /** Epoch ms of the validation that produced it. */
      readonly checkedAt: number;
    }
  | {
      /** A refusal. */
      readonly kind: 'refused';
      /** The refusal. */
      readonly refusal: SharedRefusal;
      /** Epoch ms of the refusal. */
      readonly refusedAt: number;
    }
  | {
      /** Nothing: validate, then write with the ticket. */
      readonly kind: 'miss';
      /** Where to write. */
      readonly ticket: SharedTicket;
    };

/** How a result is written. @internal */
export interface SharedWrite {
  /** Epoch ms of the validation (or refusal). */
  readonly at: number;
  /** Life of the entry, milliseconds. */
  readonly ttlMs: number;
  /** The longest life of any entry of the policy (valid or refused), milliseconds: the index sets' life. */
  readonly indexTtlMs: number;
  /** The token: nothing is written when the entry holds it. */
  readonly token: string;
}

/** Options of {@link SharedTokenResults}. */
export interface SharedTokenResultsOptions {
  /** The Redis connection (see `connectRedis`). */
  redis: RedisConnection;
  /**
   * The cluster secret, at least 32 characters, the same on every instance (several during a
   * rotation: the first signs, all verify). Results are signed with it; one that does not verify
   * (written by another Redis client, or copied from another token's key) is ignored and counted.
   */
  secret: string | readonly string[];
  /** This instance's id, written in the locks it holds. Default: a random one. */
  nodeId?: string;
  /**
   * The current generation of shared results; `undefined` while it is unknown (nothing is then
   * shared). `GatewayCluster` gives its own, which its resets increment. Default: always 0 (results
   * then go only by their lifetime or `TokenPolicy.forget`).
   */
  generation?: () => number | undefined;
  /** How often an instance waiting for another's validation looks for the result, milliseconds. Default 15. */
  pollMs?: number;
}

/** Counters of a {@link SharedTokenResults}. */
export interface SharedTokenResultsStats {
  /** Valid results found. */
  hits: number;
  /** Refusals found. */
  refusals: number;
  /** Lookups that found nothing (or could not ask Redis). */
  misses: number;
  /** Lookups that waited for another instance's validation. */
  waits: number;
  /** Results written. */
  writes: number;
  /** Results not written because they held the token (or were larger than 1 MiB). */
  withheld: number;
  /** Entries read that did not verify with the cluster secret (ignored: a miss). */
  rejected: number;
}

const INDEX_SLACK_MS = 60_000;
const DELETE_BATCH = 100;
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

function short(value: string): string {
  return hash('sha256', value, 'base64url').slice(0, 22);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Whether `json` holds `token`, as is or JSON-escaped. */
function holds(json: string, token: string): boolean {
  return json.includes(token) || json.includes(JSON.stringify(token).slice(1, -1));
}

/** A verified entry's result, or `undefined` when it is not one. */
function parse(text: string | undefined): Exclude<SharedLookup, { kind: 'miss' }> | undefined {
  if (text === undefined) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(entry) || typeof entry['at'] !== 'number' || !isObject(entry['d'])) return undefined;
  const data = entry['d'];
  if (entry['k'] === 'v') {
    if (!isObject(data['info']) || (data['exp'] !== undefined && typeof data['exp'] !== 'number')) return undefined;
    for (const part of ['introspection', 'jwt', 'userInfo']) if (data[part] !== undefined && !isObject(data[part])) return undefined;
    const value = { exp: data['exp'] as number | undefined, ...data } as unknown as SharedValidation;
    return { kind: 'valid', value, checkedAt: entry['at'] };
  }
  if (entry['k'] === 'r') {
    if ((data['code'] !== 'ERR_TOKEN_INVALID' && data['code'] !== 'ERR_TOKEN_EXPIRED') || typeof data['diagnostic'] !== 'string')
      return undefined;
    const refusal: SharedRefusal = {
      code: data['code'],
      diagnostic: data['diagnostic'],
      ...(typeof data['subject'] === 'string' ? { subject: data['subject'] } : {}),
      ...(typeof data['clientId'] === 'string' ? { clientId: data['clientId'] } : {}),
    };
    return { kind: 'refused', refusal, refusedAt: entry['at'] };
  }
  return undefined;
}

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

const SHARED_RESULTS_KEYS = optionKeys<SharedTokenResultsOptions>({
  redis: true,
  nodeId: true,
  generation: true,
  pollMs: true,
  secret: true,
});

/**
 * Token results shared between gateway instances; give it to each token policy as its `shared`
 * option (`GatewayCluster.tokenResults` is the one of a cluster). See the module comment.
 */
export class SharedTokenResults {
  readonly #redis: RedisConnection;
  readonly #nodeId: string;
  readonly #generation: () => number | undefined;
  readonly #pollMs: number;
  readonly #seal: ClusterSeal;
  readonly #stats: Omit<SharedTokenResultsStats, 'rejected'> = { hits: 0, refusals: 0, misses: 0, waits: 0, writes: 0, withheld: 0 };

  constructor(options: SharedTokenResultsOptions) {
    const check = optionChecks('SharedTokenResults');
    check.object(options, '');
    check.known(options, '', SHARED_RESULTS_KEYS);
    if (!(options.redis instanceof RedisConnection)) check.fail('redis', 'must be a RedisConnection (see connectRedis)');
    this.#redis = options.redis;
    this.#seal = new ClusterSeal(clusterSecrets(check, options.secret, 'secret'));
    this.#nodeId = options.nodeId === undefined ? randomUUID() : check.string(options.nodeId, 'nodeId');
    this.#generation = check.optionalFunction<() => number | undefined>(options.generation, 'generation') ?? (() => 0);
    this.#pollMs = check.positive(options.pollMs, 'pollMs', 15);
  }

  /** Counters since creation (a copy). */
  get stats(): SharedTokenResultsStats {
    return { ...this.#stats, rejected: this.#seal.rejected.token_result };
  }

  /** Whether Redis answers now. */
  get healthy(): boolean {
    return this.#redis.healthy;
  }

  /**
   * The shared result of a token, or a ticket to write it. With `lockMs`, a miss takes the
   * token's lock for that long; when another instance holds it, waits for its result up to
   * `lockMs` (taking the lock if it is let go without a result), then gives a ticket anyway.
   * Without `lockMs`, only reads. Never rejects.
   *
   * @param scope - the policy's name and fingerprint.
   * @param key - the token's hash.
   * @internal
   */
  async lookup(scope: string, key: string, lockMs: number | undefined): Promise<SharedLookup> {
    const generation = this.#generation();
    if (generation === undefined) return this.#miss({ key: undefined, index: undefined, owner: undefined });
    const ticket: SharedTicket = {
      key: `${this.#redis.keyPrefix}tok:${generation}:${scope}:${key}`,
      index: `${this.#redis.keyPrefix}idx:${generation}:${scope}`,
      owner: undefined,
    };
    const deadline = Date.now() + (lockMs ?? 0);
    let waited = false;
    for (;;) {
      const found = await this.#read(ticket.key!);
      if (found !== undefined) return this.#found(found);
      if (lockMs === undefined) return this.#miss(ticket);
      const owner = `${this.#nodeId}:${randomUUID()}`;
      const left = Math.ceil(deadline - Date.now());
      if (left <= 0) return this.#miss(ticket);
      const taken = await this.#redis.command(['SET', `${ticket.key}:lock`, owner, 'NX', 'PX', String(left)]);
      if (taken === 'OK') {
        ticket.owner = owner;
        // The previous holder may have written and let go between the read and the lock.
        const written = await this.#read(ticket.key!);
        if (written !== undefined) {
          this.release(ticket);
          return this.#found(written);
        }
      }
      // Taken, or Redis is down (then this instance validates alone).
      if (taken !== null) return this.#miss(ticket);
      if (!waited) {
        waited = true;
        this.#stats.waits++;
      }
      await sleep(Math.min(this.#pollMs, Math.max(1, deadline - Date.now())));
    }
  }

  /**
   * The shared result of a token, without lock or wait (for a caller that may not validate).
   * @internal
   */
  async peek(scope: string, key: string): Promise<Exclude<SharedLookup, { kind: 'miss' }> | undefined> {
    const generation = this.#generation();
    if (generation === undefined) return undefined;
    const found = await this.#read(`${this.#redis.keyPrefix}tok:${generation}:${scope}:${key}`);
    return found === undefined ? undefined : this.#found(found);
  }

  /**
   * Writes a valid result for `write.ttlMs` (not awaited by the caller: the commands are queued
   * in order, before the lock's release). Nothing is written when its JSON holds the token.
   * @internal
   */
  storeValid(ticket: SharedTicket, value: SharedValidation, write: SharedWrite): void {
    const data: Record<string, unknown> = { info: value.info };
    if (value.exp !== undefined) data['exp'] = value.exp;
    if (value.introspection !== undefined) data['introspection'] = value.introspection;
    if (value.jwt !== undefined) data['jwt'] = value.jwt;
    if (value.userInfo !== undefined) data['userInfo'] = value.userInfo;
    this.#store(ticket, JSON.stringify({ k: 'v', at: write.at, d: data }), write, value.info.subject, value.info.clientId);
  }

  /** Writes a refusal (see {@link SharedTokenResults.storeValid}). @internal */
  storeRefusal(ticket: SharedTicket, refusal: SharedRefusal, write: SharedWrite): void {
    this.#store(ticket, JSON.stringify({ k: 'r', at: write.at, d: refusal }), write, refusal.subject, refusal.clientId);
  }

  /** Lets the lock go, if this instance holds it (after the write, if any). @internal */
  release(ticket: SharedTicket): void {
    const owner = ticket.owner;
    if (owner === undefined || ticket.key === undefined) return;
    ticket.owner = undefined;
    void this.#redis.command(['EVAL', RELEASE, '1', `${ticket.key}:lock`, owner]);
  }

  /**
   * Deletes the shared results (current generation) of the tokens of a subject and/or client id
   * (both must match when both are given). Resolves with how many were deleted, or `undefined`
   * when Redis could not be asked. Never rejects.
   * @internal
   */
  async forget(scope: string, selector: { subject?: string; clientId?: string }): Promise<number | undefined> {
    const generation = this.#generation();
    if (generation === undefined) return undefined;
    const stem = `${this.#redis.keyPrefix}idx:${generation}:${scope}`;
    const sets = [
      ...(selector.subject === undefined ? [] : [`${stem}:s:${short(selector.subject)}`]),
      ...(selector.clientId === undefined ? [] : [`${stem}:c:${short(selector.clientId)}`]),
    ];
    if (sets.length === 0) return 0;
    const members = await this.#redis.command(sets.length === 1 ? ['SMEMBERS', sets[0]!] : ['SINTER', ...sets]);
    if (!Array.isArray(members)) return undefined;
    let deleted = 0;
    const keys = members
      .filter((m): m is string => typeof m === 'string')
      .map((m) => `${this.#redis.keyPrefix}tok:${generation}:${scope}:${m}`);
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const count = await this.#redis.command(['DEL', ...batch]);
      if (typeof count !== 'number') return undefined;
      deleted += count;
    }
    if (members.length > 0) {
      for (const set of sets) void this.#redis.command(['SREM', set, ...(members as string[])]);
    }
    log('shared results: %d deleted by forget', deleted);
    return deleted;
  }

  /**
   * The result at `key`, when it verifies. Read with `GETRANGE` up to the largest entry written:
   * a huge value written by someone else costs one bounded read, then is refused unparsed.
   */
  async #read(key: string): Promise<Exclude<SharedLookup, { kind: 'miss' }> | undefined> {
    const reply = await this.#redis.command(['GETRANGE', key, '0', String(MAX_SEALED_BYTES)]);
    return parse(this.#seal.open('token_result', key, reply)?.payload);
  }

  #found(found: Exclude<SharedLookup, { kind: 'miss' }>): Exclude<SharedLookup, { kind: 'miss' }> {
    if (found.kind === 'valid') this.#stats.hits++;
    else this.#stats.refusals++;
    return found;
  }

  #miss(ticket: SharedTicket): SharedLookup {
    this.#stats.misses++;
    return { kind: 'miss', ticket };
  }

  #store(ticket: SharedTicket, json: string, write: SharedWrite, subject: string | undefined, clientId: string | undefined): void {
    const { key, index } = ticket;
    if (key === undefined || index === undefined) return;
    const px = Math.floor(write.ttlMs);
    if (px <= 0) return;
    if (holds(json, write.token)) {
      this.#stats.withheld++;
      log('shared results: a result holding its token was not shared');
      return;
    }
    const sealed = this.#seal.seal('token_result', key, json, px);
    if (Buffer.byteLength(sealed) > MAX_SEALED_BYTES) {
      this.#stats.withheld++;
      log('shared results: a result larger than %d bytes was not shared', MAX_SEALED_BYTES);
      return;
    }
    this.#stats.writes++;
    void this.#redis.command(['SET', key, sealed, 'PX', String(px)]);
    const member = key.slice(key.lastIndexOf(':') + 1);
    const sets = [
      ...(subject === undefined ? [] : [`${index}:s:${short(subject)}`]),
      ...(clientId === undefined ? [] : [`${index}:c:${short(clientId)}`]),
    ];
    for (const set of sets) {
      void this.#redis.command(['SADD', set, member]);
      // Every entry of the set expires before it: the policy's longest life, plus a margin.
      void this.#redis.command(['PEXPIRE', set, String(Math.floor(write.indexTtlMs) + INDEX_SLACK_MS)]);
    }
  }
}
