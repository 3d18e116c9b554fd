/**
 * The end of an answer: the last call that sends bytes of it. A recorder that keeps a journal
 * (see `PostgresTransactionStore`'s `journal`) puts a gate on the exchange's context; the code that
 * ends the answer (the relay, `sendProblem`) calls {@link endAnswer}, which hands the gate the
 * `end` to run once the exchange's record is in the journal. Without a gate the answer ends at once.
 *
 * @module
 */
import type { ServerResponse } from 'node:http';
import type { GatewayContext } from '../context.js';

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
