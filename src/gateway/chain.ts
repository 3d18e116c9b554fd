/**
 * Running a list of middleware as one: what the gateway's request path and each API's steps use
 * instead of a router, so that no router work (path matching, `req.url` rewriting, layer objects)
 * is paid per step.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from '../context.js';

/**
 * Runs `chain` in order, each step calling `next()` to go on; `done` gets the first error (or a
 * throw), or nothing once every step went on. A step that answers simply does not call `next`.
 */
export function runChain(chain: readonly Middleware[], req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void): void {
  let index = 0;
  const next = (err?: unknown): void => {
    if (err !== undefined && err !== null) {
      done(err);
      return;
    }
    const step = chain[index++];
    if (step === undefined) {
      done();
      return;
    }
    try {
      step(req, res, next);
    } catch (error) {
      done(error);
    }
  };
  next();
}
