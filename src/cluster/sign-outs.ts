/**
 * Operators' sign-outs on Redis: instances that sign sessions with one secret publish each
 * sign-out, so that a signed-out cookie is refused by all of them. Each is also kept in a sorted
 * set (score: when the session would have expired), read by an instance when it subscribes, so
 * that one started later knows the sign-outs made before. A message can only end a session (the
 * session store checks it), so a forged one could sign an operator out, never in; messages and
 * members are sealed with the cluster secret (`seal.ts`), so that another Redis client can do
 * neither that nor fill the store's bounded memory of sign-outs with ids of its own.
 *
 * @module
 */
import type { RedisConnection } from './redis.js';
import type { ClusterSeal } from './seal.js';

/**
 * Sign-outs told to and heard from the other instances: what the operators' session store takes as
 * its `SessionRevocations` (the same shape, declared here so that the cluster needs nothing of the
 * operators).
 */
export interface SignOuts {
  /** Tells the other instances that the session `id` ended; `until`: epoch ms of its own expiry. */
  publish(id: string, until: number): void;
  /** Calls `listener` with each sign-out another instance published. */
  subscribe(listener: (id: string, until: number) => void): void;
  /** Drops kept sign-outs that one published since covers (a channel that keeps them for instances that join later). */
  forget?(signOuts: ReadonlyArray<{ readonly id: string; readonly until: number }>): void;
}

/**
 * Most sign-outs read at subscription. The set holds about users × (sessions per user + 1): a
 * sign-out covered by a later per-user one is removed from it (`forget`).
 */
const MAX_READ = 100_000;
/** How long a published sign-out message is valid: it is heard within milliseconds. */
const MESSAGE_LIFE_MS = 60_000;

/** The channel of sign-outs. */
export function signOutChannel(redis: RedisConnection): string {
  return `${redis.keyPrefix}sessions:signed-out`;
}

/** The sorted set of the sign-outs whose sessions have not expired yet. */
export function signOutKey(redis: RedisConnection): string {
  return `${redis.keyPrefix}sessions:signed-out:ids`;
}

/** Sign-outs published and heard on `redis`; those made before an instance subscribed are read then. */
export function redisSignOuts(redis: RedisConnection, seal: ClusterSeal): SignOuts {
  const channel = signOutChannel(redis);
  const key = signOutKey(redis);
  // The member is the sealed id, its seal ending when the session would have: the same sign-out
  // always makes the same member, so that `forget` can name it.
  const member = (id: string, until: number): string => seal.seal('sign_out', key, id, 0, until);
  return {
    publish(id, until) {
      const now = Date.now();
      void redis.command(['ZADD', key, String(until), member(id, until)]);
      void redis.command(['ZREMRANGEBYSCORE', key, '-inf', String(now)]);
      void redis.command(['PUBLISH', channel, seal.seal('sign_out', channel, JSON.stringify({ id, until }), MESSAGE_LIFE_MS, now)]);
    },
    forget(signOuts) {
      if (signOuts.length > 0) void redis.command(['ZREM', key, ...signOuts.map(({ id, until }) => member(id, until))]);
    },
    subscribe(listener) {
      void redis.subscribe(channel, (message) => {
        const opened = seal.open('sign_out', channel, message);
        if (opened === undefined) return;
        let parsed: { id?: unknown; until?: unknown } | null;
        try {
          parsed = JSON.parse(opened.payload) as typeof parsed;
        } catch {
          return;
        }
        listener(parsed?.id as string, parsed?.until as number);
      });
      void redis.command(['ZRANGEBYSCORE', key, String(Date.now()), '+inf', 'LIMIT', '0', String(MAX_READ)]).then((reply) => {
        if (!Array.isArray(reply)) return;
        for (const member of reply) {
          const opened = seal.open('sign_out', key, member);
          if (opened !== undefined) listener(opened.payload, opened.until);
        }
      });
    },
  };
}
