/**
 * Sign-in sessions of operators: a random id in an `HttpOnly`, `SameSite=Strict` cookie (`Secure`
 * over TLS), kept in memory with an idle and an absolute lifetime, and a CSRF token per session
 * that every change must send back in a header.
 *
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { OperatorIdentity } from './users.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'eag_session';
/** The header that carries the session's CSRF token on every change. */
export const CSRF_HEADER = 'X-CSRF-Token';

/** Lifetimes and bounds of sessions. */
export interface SessionOptions {
  /** Minutes without a request after which a session ends. Default `30`. */
  idleMinutes?: number;
  /** Hours after sign-in after which a session ends whatever happens. Default `12`. */
  maxHours?: number;
  /** Most sessions at once; past it the oldest ends. Default `10000`. */
  maxSessions?: number;
  /**
   * `Secure` attribute of the cookie: `true`, `false`, or `auto` (default): set when the request
   * came over TLS (`req.secure`, which follows Express's `trust proxy`).
   */
  secureCookie?: boolean | 'auto';
}

/** One signed-in operator. */
export interface Session extends OperatorIdentity {
  /** The token every change must carry in {@link CSRF_HEADER}. */
  readonly csrfToken: string;
  /** Epoch ms of the sign-in. */
  readonly createdAt: number;
  /** Epoch ms of the last request. */
  lastSeen: number;
}

const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

function key(id: string): string {
  // The map holds a digest of the id: a heap dump does not hand out live sessions.
  return createHash('sha256').update(id).digest('base64url');
}

/** The sessions of one gateway instance. */
export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #idleMs: number;
  readonly #maxMs: number;
  readonly #max: number;
  readonly #secure: boolean | 'auto';
  readonly #path: string;

  /** @param cookiePath - the cookie's `Path` (the admin listener's base path). */
  constructor(options: Required<SessionOptions>, cookiePath: string) {
    this.#idleMs = options.idleMinutes * 60_000;
    this.#maxMs = options.maxHours * 3_600_000;
    this.#max = options.maxSessions;
    this.#secure = options.secureCookie;
    this.#path = cookiePath;
  }

  /** Starts a session for `identity` and sets its cookie on `res`. */
  create(identity: OperatorIdentity, req: Request, res: Response): Session {
    const id = randomBytes(32).toString('base64url');
    const now = Date.now();
    const session: Session = { username: identity.username, role: identity.role, csrfToken: randomBytes(32).toString('base64url'), createdAt: now, lastSeen: now };
    if (this.#sessions.size >= this.#max) this.#sessions.delete(this.#sessions.keys().next().value!);
    this.#sessions.set(key(id), session);
    res.append('Set-Cookie', this.#cookie(req, id, Math.floor(this.#maxMs / 1000)));
    return session;
  }

  /** The live session of the request's cookie, touched; `undefined` when none or expired. */
  of(req: Request): Session | undefined {
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (id === undefined || !COOKIE_VALUE.test(id)) return undefined;
    const k = key(id);
    const session = this.#sessions.get(k);
    if (session === undefined) return undefined;
    const now = Date.now();
    if (now - session.lastSeen > this.#idleMs || now - session.createdAt > this.#maxMs) {
      this.#sessions.delete(k);
      return undefined;
    }
    session.lastSeen = now;
    return session;
  }

  /** Ends the request's session (if any) and clears its cookie. */
  destroy(req: Request, res: Response): void {
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (id !== undefined && COOKIE_VALUE.test(id)) this.#sessions.delete(key(id));
    res.append('Set-Cookie', this.#cookie(req, '', 0));
  }

  /** Ends every session of a user (for example after a password change). */
  endAll(username: string): number {
    let ended = 0;
    for (const [k, session] of this.#sessions) {
      if (session.username.toLowerCase() === username.toLowerCase()) {
        this.#sessions.delete(k);
        ended++;
      }
    }
    return ended;
  }

  /** Sessions alive now. */
  get size(): number {
    return this.#sessions.size;
  }

  #cookie(req: Request, value: string, maxAge: number): string {
    const secure = this.#secure === 'auto' ? req.secure : this.#secure;
    return `${SESSION_COOKIE}=${value}; Path=${this.#path}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }
}

/** Whether the request carries the session's CSRF token (constant-time comparison). */
export function csrfMatches(req: Request, session: Session): boolean {
  const given = req.headers[CSRF_HEADER.toLowerCase()];
  if (typeof given !== 'string' || given.length > 200) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(session.csrfToken).digest();
  return timingSafeEqual(a, b);
}

/** One cookie's value from a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
