/**
 * Credentials of the console and the admin routes: the one parser of HTTP Basic, the one check of
 * `basicAuth` / `authenticate` options.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { InvalidOptionError } from '../options.js';

/** User name and password of an HTTP Basic `Authorization` header. */
export interface BasicCredentials {
  /** The user name (before the first `:`). */
  username: string;
  /** The password (after the first `:`). */
  password: string;
}

/**
 * Decides whether a console or admin request may proceed. It receives the request and the HTTP
 * Basic credentials it carries (`undefined` when none); it may look at anything else of the request
 * (a session, a client certificate, a header set by a trusted proxy). Returning `false` answers
 * 401 with a Basic challenge; throwing or rejecting answers 500. Neither lets the request through.
 */
export type ConsoleAuthenticate = (req: Request, credentials: BasicCredentials | undefined) => boolean | Promise<boolean>;

/** How the console or the admin routes check credentials: one of the two is required. */
export interface CredentialOptions {
  /** One user allowed in with HTTP Basic (compared in constant time). */
  basicAuth?: BasicCredentials;
  /** Your own check, used instead of `basicAuth` when both are given. */
  authenticate?: ConsoleAuthenticate;
}

// RFC 7617: "Basic" and the base64 of "user:password". Longer than this is no one's password.
const BASIC = /^Basic +([A-Za-z0-9+/]{1,4096}={0,2}) *$/i;

/** The HTTP Basic credentials of a request, or `undefined` when it has none (or a malformed one). */
export function basicCredentials(req: Request): BasicCredentials | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = BASIC.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function digest(value: string): Buffer {
  // Hashing first gives equal-length inputs to timingSafeEqual, so lengths leak nothing either.
  return createHash('sha256').update(value, 'utf8').digest();
}

/** An {@link ConsoleAuthenticate} that accepts exactly one user name and password (constant time). */
export function fixedCredentials(expected: BasicCredentials): ConsoleAuthenticate {
  const user = digest(expected.username);
  const pass = digest(expected.password);
  return (_req, credentials) => {
    if (credentials === undefined) return false;
    // Both comparisons always run: no early exit on a wrong user name.
    const userOk = timingSafeEqual(digest(credentials.username), user);
    const passOk = timingSafeEqual(digest(credentials.password), pass);
    return userOk && passOk;
  };
}

/**
 * The check of {@link CredentialOptions}, validated: `authenticate` when given, else the fixed
 * `basicAuth` user. `name` names the options in errors (`createGateway: options.admin`).
 *
 * @throws InvalidOptionError when neither is given (there is no open default) or one is malformed.
 */
export function credentialCheck(options: CredentialOptions, name: string): ConsoleAuthenticate {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError(name, 'must be an object');
  const { authenticate, basicAuth } = options;
  if (authenticate !== undefined) {
    if (typeof authenticate !== 'function') throw new InvalidOptionError(`${name}.authenticate`, 'must be a function');
    return authenticate;
  }
  if (basicAuth === undefined) throw new InvalidOptionError(name, 'needs authenticate or basicAuth (there is no open default)');
  if (
    basicAuth === null ||
    typeof basicAuth !== 'object' ||
    typeof basicAuth.username !== 'string' ||
    basicAuth.username === '' ||
    basicAuth.username.includes(':') ||
    typeof basicAuth.password !== 'string' ||
    basicAuth.password === ''
  ) {
    // A ":" in the user name could never be sent: Basic splits at the first one.
    throw new InvalidOptionError(`${name}.basicAuth`, 'must be { username, password } with a non-empty username (no ":") and password');
  }
  return fixedCredentials(basicAuth);
}

/** Checks that decide on credentials (or a session) only: a request with neither is a first visit, not a guess. */
const credentialChecks = new WeakSet<ConsoleAuthenticate>();

/**
 * Marks a check as one that admits nobody without credentials or a session, so that a request
 * carrying neither does not count as a failed login (as with `basicAuth`).  @internal
 */
export function credentialBased(check: ConsoleAuthenticate): ConsoleAuthenticate {
  credentialChecks.add(check);
  return check;
}

/** Whether a refused request without an `Authorization` header counts as a failed login for these options.  @internal */
export function countsWithoutCredentials(options: CredentialOptions): boolean {
  return options.authenticate !== undefined && !credentialChecks.has(options.authenticate);
}
