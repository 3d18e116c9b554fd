/**
 * Operators' sign-outs on Redis: instances that sign sessions with one secret publish each
 * sign-out, so that a signed-out cookie is refused by all of them. A message can only end a
 * session (the session store checks it), so a forged one can sign an operator out, never in.
 *
 * @module
 */
import type { SessionRevocations } from '../operators/sessions.js';
import type { RedisConnection } from './redis.js';

/** The channel of sign-outs. */
export function signOutChannel(redis: RedisConnection): string {
  return `${redis.keyPrefix}sessions:signed-out`;
}

/** Sign-outs published and heard on `redis` (pub/sub; an instance not subscribed at the time misses them). */
export function redisSignOuts(redis: RedisConnection): SessionRevocations {
  const channel = signOutChannel(redis);
  return {
    publish(id, until) {
      void redis.command(['PUBLISH', channel, JSON.stringify({ id, until })]);
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
    },
  };
}
