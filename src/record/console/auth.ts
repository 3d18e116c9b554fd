/**
 * HTTP Basic protection of the monitoring console.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';

/** User name and password of an HTTP Basic `Authorization` header. */
export interface BasicCredentials {
  /** The user name (before the first `:`). */
  username: string;
  /** The password (after the first `:`). */
  password: string;
}

/**
 * Decides whether a console request may proceed. It receives the request and the HTTP Basic
 * credentials it carries (`undefined` when none); it may look at anything else of the request
 * (a session, a client certificate, a header set by a trusted proxy). Returning `false` answers
 * 401 with a Basic challenge; throwing or rejecting answers 500. Neither lets the request through.
 */
export type ConsoleAuthenticate = (req: Request, credentials: BasicCredentials | undefined) => boolean | Promise<boolean>;

/** The HTTP Basic credentials of a request, or `undefined` when it has none (or a malformed one). */
export function basicCredentials(req: Request): BasicCredentials | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Basic[ ]+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(header);
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
