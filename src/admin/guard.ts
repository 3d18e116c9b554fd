/**
 * The gate in front of the console and the admin routes: login throttle, CSRF defence, credentials.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from '../log.js';
import { InvalidOptionError } from '../options.js';
import { basicCredentials, type ConsoleAuthenticate } from './credentials.js';
import { problem, refuse } from './problem.js';
import type { LoginThrottle } from './throttle.js';

/**
 * The request header the console page sends with every API call, and that the console's JSON
 * routes and every state-changing admin route require (any value; the page sends `1`). A form, a
 * link or an image from another page cannot send it, and a script of another origin cannot without
 * a CORS preflight, which these routes never approve. Non-browser clients (curl) send it too:
 * `-H 'X-Gateway-Console: 1'`.
 */
export const CONSOLE_REQUEST_HEADER = 'X-Gateway-Console';
const HEADER_KEY = CONSOLE_REQUEST_HEADER.toLowerCase();

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What {@link guard} needs, all settled at factory time. */
export interface GuardOptions {
  /** The credential check. */
  check: ConsoleAuthenticate;
  /** Whether a refused check counts as a failed login even without an `Authorization` header (a custom `authenticate`). */
  countsWithoutCredentials: boolean;
  /** Realm of the Basic challenge (already validated). */
  realm: string;
  /** The failed-login throttle. */
  throttle: LoginThrottle;
  /** Whether a safe (GET/HEAD) request to this path is a JSON route that needs the custom header. */
  isJson: (req: Request) => boolean;
  /** Where refusals and failed logins are logged. */
  log: Logger;
}

/** Validates a Basic realm: it goes into a quoted header parameter. */
export function checkRealm(realm: unknown, name: string): string {
  if (typeof realm !== 'string' || /["\\\r\n]/.test(realm)) {
    throw new InvalidOptionError(name, 'must be a string without quotes, backslashes or line breaks');
  }
  return realm;
}

/** The request's own origin as a browser would write it (scheme, host, port unless the default). */
function ownOrigin(req: Request): string | undefined {
  const host = req.headers.host;
  if (host === undefined) return undefined;
  try {
    return new URL(`${req.protocol}://${host}`).origin;
  } catch {
    return undefined;
  }
}

function sameOrigin(origin: string, req: Request): boolean {
  const own = ownOrigin(req);
  if (own === undefined) return false;
  try {
    return new URL(origin).origin === own;
  } catch {
    // `Origin: null` (a sandboxed or opaque page) and anything unparsable.
    return false;
  }
}

/**
 * Why the request is refused by the CSRF defence, or `undefined` when it may go on. JSON routes and
 * state-changing requests need {@link CONSOLE_REQUEST_HEADER}; state-changing ones also an `Origin`
 * equal to the request's own and `Sec-Fetch-Site: same-origin`, when the browser sends them
 * (absent, as from curl, they are not required: the custom header is).
 */
export function csrfRefusal(req: Request, isJson: boolean): string | undefined {
  const changes = !SAFE_METHODS.has(req.method);
  if (!changes && !isJson) return undefined;
  if (req.headers[HEADER_KEY] === undefined) return `no ${CONSOLE_REQUEST_HEADER} header`;
  if (!changes) return undefined;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return `Sec-Fetch-Site: ${String(site)}`;
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(origin, req)) return `Origin ${origin} is not this origin`;
  return undefined;
}

/**
 * Whether a request shows that a page of another origin sent it: an `Origin` other than the
 * request's own, or `Sec-Fetch-Site` `same-site` or `cross-site` (`none` is the user's own
 * navigation: a typed address or a bookmark).
 */
function fromAnotherOrigin(req: Request): boolean {
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(origin, req)) return true;
  const site = req.headers['sec-fetch-site'];
  return site !== undefined && site !== 'same-origin' && site !== 'none';
}

/**
 * The middleware in front of the console's or the admin's routes, in this order: an address
 * blocked by the throttle gets 429 (`ERR_TOO_MANY_REQUESTS`, with `Retry-After`) before anything
 * else is looked at; a request the CSRF defence refuses gets 403 (`ERR_ADMIN_ORIGIN_REFUSED`),
 * unless it carries no credentials at all (no `Authorization`, no cookie) and comes from no other
 * origin: that one gets the 401 challenge, which says what it lacks first (with credentials but
 * still without the header, the next try gets the 403); then the credentials, counted as a failed
 * login before they are checked (429 when the address or the account has no attempt left): 401
 * with a Basic challenge (logged), or on (the attempt given back).
 */
export function guard(options: GuardOptions): RequestHandler {
  const { check, countsWithoutCredentials, realm, throttle, isJson, log } = options;
  const challenge = `Basic realm="${realm}", charset="UTF-8"`;
  const askForCredentials = (res: Response): void => {
    res.setHeader('WWW-Authenticate', challenge);
    problem(res, 401, 'Unauthorized', 'Authentication required');
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const address = req.socket.remoteAddress ?? 'unknown';
    const wait = throttle.blockedFor(address);
    if (wait > 0) {
      log('refused %s %s from %s: too many failed logins', req.method, req.originalUrl, address);
      refuse(res, 'ERR_TOO_MANY_REQUESTS', Math.max(1, Math.ceil(wait / 1000)));
      return;
    }
    const refusal = csrfRefusal(req, isJson(req));
    if (refusal !== undefined) {
      // With nothing sent to sign in with, nothing could have been done in an operator's name. A
      // check of the host's own may admit requests without credentials: its callers get the 403.
      const anonymous = !countsWithoutCredentials && req.headers.authorization === undefined && req.headers.cookie === undefined;
      if (anonymous && !fromAnotherOrigin(req)) {
        log('challenged %s %s from %s: no credentials (and %s)', req.method, req.originalUrl, address, refusal);
        askForCredentials(res);
        return;
      }
      log('refused %s %s from %s: %s', req.method, req.originalUrl, address, refusal);
      refuse(res, 'ERR_ADMIN_ORIGIN_REFUSED');
      return;
    }
    const credentials = basicCredentials(req);
    // A request without credentials is the challenge a browser needs first (or a session), not a guess.
    const counts = countsWithoutCredentials || req.headers.authorization !== undefined;
    // The slot is taken before the check: concurrent guesses past the allowance are never verified.
    const attempt = counts ? throttle.reserve(address, credentials?.username) : undefined;
    if (typeof attempt === 'number') {
      log('refused %s %s from %s: too many failed logins', req.method, req.originalUrl, address);
      refuse(res, 'ERR_TOO_MANY_REQUESTS', Math.max(1, Math.ceil(attempt / 1000)));
      return;
    }
    let verdict: boolean | Promise<boolean>;
    try {
      verdict = check(req, credentials);
    } catch (error) {
      verdict = Promise.reject(error);
    }
    Promise.resolve(verdict).then(
      (ok) => {
        if (ok === true) {
          attempt?.succeeded();
          return next();
        }
        if (attempt !== undefined) {
          attempt.failed();
          // Never the credentials themselves: only who, where, and how many times.
          log('failed login from %s to %s %s (%d of %d)', address, req.method, req.originalUrl, attempt.failures, throttle.maxFailures);
        }
        askForCredentials(res);
      },
      (error: unknown) => {
        log('authenticate failed: %s', (error as Error)?.message ?? String(error));
        problem(res, 500, 'Internal Server Error', 'Authentication could not be checked');
      },
    );
  };
}
