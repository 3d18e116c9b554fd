/**
 * `problemJsonErrorHandler`: the Express error handler that answers every gateway error as
 * problem+json and records it on the request's context.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addDiagnostic, gatewayContext } from '../context.js';
import { GatewayError, isGatewayError } from '../errors.js';
import { errorFields, logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import { resolveMessageSet, resolveServer, writeProblem, type ProblemOptions } from './render.js';

const log = logger('gateway');

/** Options of {@link problemJsonErrorHandler}. */
export interface ProblemJsonErrorHandlerOptions extends ProblemOptions {
  /**
   * Map client errors raised by body parsers and similar middleware (an error with a numeric
   * `status`/`statusCode` of 400 or 413 and `expose: true`, as `http-errors` creates them) to a
   * clean 400 `ERR_BAD_REQUEST` / 413 `ERR_REQUEST_TOO_LARGE` instead of a 500. Default `true`.
   */
  mapClientErrors?: boolean;
  /**
   * Called with each unexpected error, one answered 500 (an exception of a route or middleware,
   * not a {@link GatewayError} of the catalogue with another status), and its request: to log it
   * where the host logs. Default: `console.error` of the error, with its stack, once per error
   * (the request's token, should the error quote it, replaced by `[redacted]`). An exception
   * thrown by the hook is ignored: the client gets its 500 all the same.
   */
  onError?: (err: unknown, req: IncomingMessage) => void;
}

/**
 * An Express error handler, `(err, req, res, next)`. Typed with Node's request and response (not
 * Express's) so that it needs no Express types; Express 4 and 5 accept it as is.
 *
 * @param err - the error passed to `next(err)` or thrown by a route.
 * @param next - Express's `next`; called with `err` only when the response was already started.
 */
export type ErrorHandler = (err: unknown, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

const HANDLER_KEYS = optionKeys<ProblemJsonErrorHandlerOptions>({ messages: true, server: true, mapClientErrors: true, onError: true });

/** Errors already written by the default hook: an error passed on twice is written once. */
const written = new WeakSet<object>();

/** The default of `onError`: the error and its stack on stderr, once. */
function writeUnexpected(err: unknown, req: IncomingMessage): void {
  if (typeof err === 'object' && err !== null) {
    if (written.has(err)) return;
    written.add(err);
  }
  const fields = errorFields(err, req.gateway?.token?.raw);
  const id = req.gateway?.transactionId;
  console.error(
    `express-access-gateway: unexpected error answered 500${id === undefined ? '' : ` (transaction ${id})`}: ${String(fields['stack'] ?? `${String(fields['type'])}: ${String(fields['message'])}`)}`,
  );
}

/**
 * Creates the Express error handler of the gateway.
 *
 * - A {@link GatewayError} is rendered as problem+json: `type` `https://httpstatuses.com/<status>`,
 *   `title` (reason phrase), `status`, `detail` (from the message set, Italian by default),
 *   `gateway_status`; headers `Content-Type: application/problem+json`, `WWW-Authenticate` for token
 *   errors (realm = token policy name), `Retry-After` for temporary ones, `Gateway-Transaction-ID`,
 *   `Server`.
 * - Anything else is a generic 500 `ERR_INTERNAL` that leaks nothing of the error (except, with
 *   `mapClientErrors`, body-parser style 400/413 errors: a clean 400/413).
 * - It records `req.gateway.error` and a diagnostic (the error's diagnostic text, never a token).
 * - An unexpected error (one answered 500) goes to `onError` (default: `console.error`, once).
 * - When the response headers are already sent, it delegates to `next(err)` (Express then closes
 *   the connection).
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { problemJsonErrorHandler } from 'express-access-gateway';
 *
 * const app = express();
 * // ... routes and gateway middleware ...
 * app.use(problemJsonErrorHandler({ messages: 'en', server: 'my-gateway' }));
 * ```
 */
export function problemJsonErrorHandler(options: ProblemJsonErrorHandlerOptions = {}): ErrorHandler {
  const check = optionChecks('problemJsonErrorHandler');
  check.object(options, '');
  check.known(options, '', HANDLER_KEYS);
  const messages = resolveMessageSet(options.messages, check);
  const server = resolveServer(options.server, check);
  const mapClientErrors = check.boolean(options.mapClientErrors, 'mapClientErrors', true);
  const onError =
    check.optionalFunction<NonNullable<ProblemJsonErrorHandlerOptions['onError']>>(options.onError, 'onError') ?? writeUnexpected;

  return function problemJsonError(err, req, res, next) {
    if (res.headersSent) {
      next(err);
      return;
    }
    const error = toGatewayError(err, mapClientErrors);
    const context = gatewayContext(req);
    const recorded: NonNullable<typeof context.error> = {
      code: error.code,
      status: error.status,
      gatewayStatus: error.gatewayStatus,
      outcome: error.outcome,
    };
    context.error = recorded;
    const level = error.status >= 500 ? 'error' : 'warn';
    addDiagnostic(req, level, error.code, redact(describe(error, err), req));
    log('%s %d %s', context.transactionId, error.status, error.code);
    if (error.status === 500) {
      try {
        onError(err, req);
      } catch {
        // The hook's own failure must not change the answer.
      }
    }
    // What the client reads, for the record (the 403's detail names the service and the decision).
    recorded.detail = writeProblem(res, error, messages, server).detail;
  };
}

function toGatewayError(err: unknown, mapClientErrors: boolean): GatewayError {
  if (isGatewayError(err)) return err;
  if (mapClientErrors && typeof err === 'object' && err !== null) {
    const e = err as { status?: unknown; statusCode?: unknown; expose?: unknown; type?: unknown };
    const status = typeof e.status === 'number' ? e.status : e.statusCode;
    if (e.expose === true && status === 413) {
      return new GatewayError('ERR_REQUEST_TOO_LARGE', {
        diagnostic: `request body too large (${String(e.type ?? 'unknown')})`,
        cause: err,
      });
    }
    if (e.expose === true && status === 400) {
      return new GatewayError('ERR_BAD_REQUEST', { diagnostic: `bad request (${String(e.type ?? 'unknown')})`, cause: err });
    }
  }
  return new GatewayError('ERR_INTERNAL', { diagnostic: `unexpected error: ${errorName(err)}`, cause: err });
}

function errorName(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return `${err.name}${typeof code === 'string' ? ` (${code})` : ''}: ${err.message}`;
  }
  return typeof err;
}

function describe(error: GatewayError, original: unknown): string {
  if (error.diagnostic !== undefined) return error.diagnostic;
  return original === error ? error.message : errorName(original);
}

/** Removes the request's token from a text, in case an underlying error message quoted it. */
function redact(text: string, req: IncomingMessage): string {
  const raw = req.gateway?.token?.raw;
  return raw !== undefined && raw.length > 0 ? text.split(raw).join('[token]') : text;
}
