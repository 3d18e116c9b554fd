/**
 * The shape of the token middleware.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A connect/Express middleware, typed with Node's request and response (not Express's) so that it
 * needs no Express types.
 *
 * @param next - Express's (or connect's) `next`: called with no argument to go on, or with a
 *   `GatewayError` to answer with it.
 */
export type TokenMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
