/**
 * DPoP proof identifiers between the workers of `serve --workers <n>` without Redis: a proof
 * accepted by one worker must be refused by the others, so the workers remember `jti`s in one
 * place, the primary, asked over IPC (with Redis, the gateway remembers them there instead).
 *
 * @module
 */
import cluster from 'node:cluster';
import { MemoryReplayStore, type DpopReplayStore, type ProofMemory, type ProofOwner } from '../token/binding/replay.js';

const ASK = 'express-access-gateway:dpop-proof';
const ANSWER = 'express-access-gateway:dpop-proof-answer';
/** Longest wait for the primary's answer: past it the proof is refused (503), never let through twice. */
const ANSWER_TIMEOUT_MS = 2000;

interface Ask {
  type: typeof ASK;
  id: number;
  key: string;
  ttlMs: number;
  owner?: ProofOwner;
}

interface Answer {
  type: typeof ANSWER;
  id: number;
  fresh: boolean | 'overShare' | null;
  /** With `fresh: null`: why the primary's store could not remember it. */
  unavailable?: string;
}

function isAsk(message: unknown): message is Ask {
  const m = message as Ask | undefined;
  return (
    m?.type === ASK &&
    Number.isSafeInteger(m.id) &&
    typeof m.key === 'string' &&
    m.key.length <= 128 &&
    typeof m.ttlMs === 'number' &&
    m.ttlMs > 0 &&
    m.ttlMs <= 86_400_000 &&
    (m.owner === undefined ||
      (typeof m.owner === 'object' &&
        m.owner !== null &&
        typeof m.owner.thumbprint === 'string' &&
        m.owner.thumbprint.length <= 128 &&
        Number.isSafeInteger(m.owner.maxProofs) &&
        m.owner.maxProofs > 0))
  );
}

function isAnswer(message: unknown): message is Answer {
  const m = message as Answer | undefined;
  return m?.type === ANSWER && Number.isSafeInteger(m.id);
}

/** In the primary: remembers the workers' proof identifiers and answers whether each is new. */
export function answerWorkerProofs(): void {
  const store = new MemoryReplayStore();
  cluster.on('message', (from, message: unknown) => {
    if (!isAsk(message) || !from.isConnected()) return;
    const fresh = store.remember(message.key, message.ttlMs, message.owner);
    const answer: Answer = { type: ANSWER, id: message.id, fresh: fresh ?? null };
    if (fresh === undefined && store.unavailable !== undefined) answer.unavailable = `the primary's store is ${store.unavailable}`;
    from.send(answer);
  });
}

/** In a worker: the proof identifiers remembered by the primary. */
export function workerProofs(): DpopReplayStore {
  const pending = new Map<number, (fresh: ProofMemory) => void>();
  let next = 0;
  /** Why the last proof could not be remembered, until one is. */
  let unavailable: string | undefined;
  process.on('message', (message: unknown) => {
    if (!isAnswer(message)) return;
    const settle = pending.get(message.id);
    if (settle === undefined) return;
    pending.delete(message.id);
    unavailable =
      message.fresh === null
        ? typeof message.unavailable === 'string'
          ? message.unavailable.slice(0, 512)
          : 'the primary could not remember it'
        : undefined;
    settle(message.fresh === null ? undefined : message.fresh === 'overShare' ? 'overShare' : message.fresh === true);
  });
  return {
    get unavailable() {
      return unavailable;
    },
    remember(key, ttlMs, owner) {
      return new Promise<ProofMemory>((resolve) => {
        const id = ++next;
        const timer = setTimeout(() => {
          pending.delete(id);
          unavailable = `the primary did not answer within ${ANSWER_TIMEOUT_MS} ms`;
          resolve(undefined);
        }, ANSWER_TIMEOUT_MS);
        timer.unref();
        pending.set(id, (fresh) => {
          clearTimeout(timer);
          resolve(fresh);
        });
        if (process.send?.({ type: ASK, id, key, ttlMs, ...(owner === undefined ? {} : { owner }) } satisfies Ask) !== true) {
          pending.delete(id);
          clearTimeout(timer);
          unavailable = 'the primary cannot be reached';
          resolve(undefined);
        }
      });
    },
  };
}
