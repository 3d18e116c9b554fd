/**
 * Operators' sign-outs on Redis: instances that sign sessions with one secret publish each
 * sign-out, so that a signed-out cookie is refused by all of them. Each is also kept in a sorted
 * set (score: when the session would have expired), read by an instance when it subscribes, so
 * that one started later knows the sign-outs made before. A message can only end a session (the
 * session store checks it), so a forged one can sign an operator out, never in.
 *
 * @module
 */
import type { SessionRevocations } from '../operators/sessions.js';
import type { RedisConnection } from './redis.js';

/**
 * Most sign-outs read at subscription. The set holds about users × (sessions per user + 1): a
 * sign-out covered by a later per-user one is removed from it (`forget`).
 */
const MAX_READ = 100_000;

/** The channel of sign-outs. */
export function signOutChannel(redis: RedisConnection): string {
  return `${redis.keyPrefix}sessions:signed-out`;
}

/** The sorted set of the sign-outs whose sessions have not expired yet. */
export function signOutKey(redis: RedisConnection): string {
  return `${redis.keyPrefix}sessions:signed-out:ids`;
}

/** Sign-outs published and heard on `redis`; those made before an instance subscribed are read then. */
export function redisSignOuts(redis: RedisConnection): SessionRevocations {
  const channel = signOutChannel(redis);
  const key = signOutKey(redis);
  return {
    publish(id, until) {
      void redis.command(['ZADD', key, String(until), id]);
      void redis.command(['ZREMRANGEBYSCORE', key, '-inf', String(Date.now())]);
      void redis.command(['PUBLISH', channel, JSON.stringify({ id, until })]);
    },
    forget(ids) {
      void redis.command(['ZREM', key, ...ids]);
    },
    subscribe(listener) {
      void redis.subscribe(channel, (message) => {
        let parsed: { id?: unknown; until?: unknown } | null;
        try {
          parsed = JSON.parse(message) as typeof parsed;
        } catch {
          return;
        }
        listener(parsed?.id as string, parsed?.until as number);
      });
      void redis.command(['ZRANGEBYSCORE', key, String(Date.now()), '+inf', 'WITHSCORES', 'LIMIT', '0', String(MAX_READ)]).then((reply) => {
        if (!Array.isArray(reply)) return;
        // Pairs [member, score] (RESP3, or the client's own shaping) or a flat list (RESP2).
        if (reply.every((item) => Array.isArray(item))) {
          for (const [id, until] of reply as unknown[][]) listener(id as string, Number(until));
        } else {
          for (let i = 0; i + 1 < reply.length; i += 2) listener(reply[i] as string, Number(reply[i + 1]));
        }
      });
    },
  };
}
