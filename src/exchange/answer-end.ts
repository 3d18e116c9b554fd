/**
 * The end of an answer and of its exchange.
 *
 * The end of an answer: the last call that sends bytes of it. A recorder that keeps a journal
 * (see `PostgresTransactionStore`'s `journal`) puts a gate on the exchange's context; the code that
 * ends the answer (the relay, `sendProblem`) calls {@link endAnswer}, which hands the gate the
 * `end` to run once the exchange's record is in the journal. Without a gate the answer ends at once.
 *
 * The end of an exchange, whatever ends it ({@link onExchangeEnd}): what an exchange holds (the
 * instance's slot, a policy's in-flight slots) is given back then, once. An answer queued behind
 * another on a pipelining connection closes with its connection ({@link closeWithConnection}).
 * While the gateway waits on the client (a form body arriving), the exchange holds no slot
 * ({@link whileWaitingOnClient}).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { GatewayContext } from '../context.js';
import type { GatewayError } from '../errors.js';

/** Where the recorder puts the exchange's gate.  @internal */
export const ANSWER_END = Symbol('express-access-gateway.answerEnd');

/** A gate: runs `send` (which ends the answer) once the exchange is written down.  @internal */
export type AnswerGate = (send: () => void) => void;

type Gated = GatewayContext & { [ANSWER_END]?: AnswerGate };

/** Sets (or, with `undefined`, leaves unset) the gate of an exchange.  @internal */
export function setAnswerGate(context: GatewayContext, gate: AnswerGate): void {
  (context as Gated)[ANSWER_END] = gate;
}

/**
 * Ends `res` with `chunk` (if any), through the exchange's gate when it has one (the gate is used
 * once: a second end goes straight to the response).
 */
export function endAnswer(res: ServerResponse, context: GatewayContext | undefined, chunk?: string | Buffer): void {
  const gate = (context as Gated | undefined)?.[ANSWER_END];
  if (gate === undefined) {
    if (chunk === undefined) res.end();
    else res.end(chunk);
    return;
  }
  (context as Gated)[ANSWER_END] = undefined;
  gate(() => {
    if (chunk === undefined) res.end();
    else res.end(chunk);
  });
}

/** Each connection's answers whose 'close' has not come yet (see {@link closeWithConnection}). */
const openAnswers = new WeakMap<object, Set<ServerResponse>>();

/** The connection of an exchange: the request's (a queued answer has no socket of its own yet). */
function connectionOf(res: ServerResponse): Socket | null | undefined {
  return (res as ServerResponse & { req?: IncomingMessage }).req?.socket ?? res.socket;
}

/** Gives an answer the state and the event Node gives one whose client left (its `emitCloseNT`). */
function closeAnswer(res: ServerResponse): void {
  const state = res as ServerResponse & { _closed?: boolean };
  if (state._closed === true) return;
  res.destroyed = true;
  state._closed = true;
  res.emit('close');
}

/**
 * Makes an answer close with its connection. Node emits an answer's `'close'` once it is sent, or
 * when its connection closes while it is the answer being written; an answer queued behind
 * another on a pipelining connection (HTTP/1.1 answers leave in order) is left open for good when
 * the connection closes (Node 20): its `'close'` never comes, and what waits for it (slots, the
 * record, the backend exchange) waits forever. Here, when the connection closes, each of its
 * answers not closed yet gets what Node gives an answer whose client left: `destroyed`, `closed`,
 * `'close'` (written to, it drops what it is given, as such an answer does). One listener per
 * connection; idempotent.  @internal
 */
export function closeWithConnection(res: ServerResponse): void {
  if (res.closed || typeof res.once !== 'function') return;
  const socket = connectionOf(res);
  if (socket === null || socket === undefined || typeof socket.once !== 'function') return;
  let answers = openAnswers.get(socket);
  if (answers === undefined) {
    if (socket.closed) {
      // The connection's 'close' has been: the answer closes at the next turn, as Node's do.
      process.nextTick(closeAnswer, res);
      return;
    }
    const open = (answers = new Set());
    openAnswers.set(socket, open);
    socket.once('close', () => {
      openAnswers.delete(socket);
      for (const answer of [...open]) closeAnswer(answer);
      open.clear();
    });
  }
  if (answers.has(res)) return;
  const open = answers;
  open.add(res);
  res.once('close', () => open.delete(res));
}

/**
 * Calls `end` once the exchange of `res` ends, whatever ends it: its answer sent, its client gone,
 * its connection closed with the answer still queued (see {@link closeWithConnection}), an error
 * or a timeout that closes the connection. At once when it has ended already.  @internal
 */
export function onExchangeEnd(res: ServerResponse, end: () => void): void {
  closeWithConnection(res);
  if (exchangeEnded(res)) end();
  else res.once('close', end);
}

/** Whether the exchange of `res` has ended: its answer closed, or its connection destroyed.  @internal */
export function exchangeEnded(res: ServerResponse): boolean {
  if (res.closed) return true;
  const socket = connectionOf(res);
  return socket !== null && socket !== undefined && socket.destroyed;
}

/** What an exchange holds while served and gives back while the gateway waits on its client.  @internal */
export interface ClientWait {
  /** Gives the place back: the wait on the client begins. */
  suspend(): void;
  /** Takes a place again once the wait is over: `undefined`, or the refusal to answer with. */
  resume(): GatewayError | undefined;
}

/** Where the gateway puts the exchange's {@link ClientWait}.  @internal */
const CLIENT_WAIT = Symbol('express-access-gateway.clientWait');

type Waiting = GatewayContext & { [CLIENT_WAIT]?: ClientWait };

/** Sets what the exchange gives back while the gateway waits on its client (its instance slot).  @internal */
export function setClientWait(context: GatewayContext, wait: ClientWait): void {
  (context as Waiting)[CLIENT_WAIT] = wait;
}

/**
 * Runs `wait`, a wait on the client (its body arriving), without holding what the exchange holds
 * while served: given back before, taken again after. When it cannot be taken again, the
 * refusal is thrown; when the wait fails, nothing is taken again (the exchange is answered with
 * the failure, holding nothing).  @internal
 */
export async function whileWaitingOnClient<T>(context: GatewayContext, wait: () => Promise<T>): Promise<T> {
  const held = (context as Waiting)[CLIENT_WAIT];
  if (held === undefined) return wait();
  held.suspend();
  const value = await wait();
  const refusal = held.resume();
  if (refusal !== undefined) throw refusal;
  return value;
}
