/**
 * Sign-outs between the workers of `serve --workers <n>`: they sign operators' sessions with one
 * secret, so a session signed out on one worker must be refused by the others too. A worker sends
 * each sign-out to the primary, which relays it to every other worker.
 *
 * @module
 */
import cluster from 'node:cluster';
import type { SessionRevocations } from '../operators/sessions.js';

const REVOKED = 'express-access-gateway:session-revoked';

interface Revoked {
  type: typeof REVOKED;
  id: string;
  until: number;
}

function isRevoked(message: unknown): message is Revoked {
  return (message as Revoked | undefined)?.type === REVOKED;
}

/** In the primary: relays each worker's sign-outs to the other workers. */
export function relayWorkerSignOuts(): void {
  cluster.on('message', (from, message: unknown) => {
    if (!isRevoked(message)) return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker !== undefined && worker !== from && worker.isConnected())
        worker.send({ type: REVOKED, id: message.id, until: message.until } satisfies Revoked);
    }
  });
}

/** In a worker: sign-outs to and from the other workers, through the primary. */
export function workerSignOuts(): SessionRevocations {
  return {
    publish(id, until) {
      process.send?.({ type: REVOKED, id, until } satisfies Revoked);
    },
    subscribe(listener) {
      // The session store checks what it is given (shape, bounds).
      process.on('message', (message: unknown) => {
        if (isRevoked(message)) listener(message.id, message.until);
      });
    },
  };
}
