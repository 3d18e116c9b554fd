/**
 * Sign-in sessions of operators: a random id in an `HttpOnly`, `SameSite=Strict` cookie (`Secure`
 * over TLS; its scope in session-cookie.ts), kept in memory with an idle and an absolute lifetime,
 * and a CSRF token per session that every change must send back in a header.
 *
 * @module
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { SessionCookie } from './session-cookie.js';
import type { OperatorIdentity } from './users.js';
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
   * came over TLS: its own socket, or a proxy that `trustProxy` trusts saying
   * `X-Forwarded-Proto: https` (or `req.secure`, when the host set Express's `trust proxy`).
   * A `Secure` cookie is named `__Host-eag_session` (`Path=/`), otherwise `eag_session`, scoped to
   * the admin areas' paths. Either way the relay never passes it to a backend.
   */
  secureCookie?: boolean | 'auto';
  /**
   * Sign sessions with this secret (at least 32 characters) instead of keeping them in memory:
   * every instance given the same secret accepts them (`serve --workers` gives its workers one).
   * A signed session ends `maxHours` after the sign-in or at its sign-out (on every instance that
   * hears of it through `revocations`, and in the browser); `idleMinutes` does not apply. Default:
   * none (sessions live in the memory of the instance that opened them).
   */
  secret?: string;
  /**
   * With `secret`: how the instances tell each other of a sign-out, so that a signed-out cookie is
   * refused by all of them, not only by the one that signed it out. `serve --workers` relays them
   * between its workers; `createGateway` with `redis` publishes them on Redis. Default: none.
   */
  revocations?: SessionRevocations;
}

/**
 * A channel between the instances that sign sessions with one secret: each sign-out is published,
 * and every instance remembers the session as ended until it would have expired anyway. A message
 * can only end a session, never open one.
 */
export interface SessionRevocations {
  /** Tells the other instances that the session `id` ended; `until`: epoch ms of its own expiry. */
  publish(id: string, until: number): void;
  /** Calls `listener` with each sign-out another instance published. */
  subscribe(listener: (id: string, until: number) => void): void;
}

/** The id of a signed session (its nonce): what revocations carry. */
const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;

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
const SIGNED_VALUE = /^([A-Za-z0-9_-]{10,600})\.([A-Za-z0-9_-]{43})$/;

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
  readonly #cookie: SessionCookie;
  readonly #secret: string | undefined;
  readonly #lookup: (username: string) => OperatorIdentity | undefined;
  /** Signed sessions signed out, here or on another instance: nonce → until when to remember it. */
  readonly #revoked = new Map<string, number>();
  readonly #channels: SessionRevocations[] = [];

  /**
   * @param cookie - the cookie's name and scope (`secureCookie` is its business, not the store's).
   * @param lookup - the user of a signed session now (its role may have changed; gone: no session).
   */
  constructor(options: Required<Omit<SessionOptions, 'secret' | 'revocations' | 'secureCookie'>> & { secret?: string }, cookie: SessionCookie, lookup: (username: string) => OperatorIdentity | undefined = () => undefined) {
    this.#idleMs = options.idleMinutes * 60_000;
    this.#maxMs = options.maxHours * 3_600_000;
    this.#max = options.maxSessions;
    this.#cookie = cookie;
    this.#secret = options.secret;
    this.#lookup = lookup;
  }

  /**
   * Shares sign-outs of signed sessions over `channel`: this instance's are published there, and
   * those heard there end the session here too. Without a secret there is nothing to share.
   */
  share(channel: SessionRevocations): void {
    if (this.#secret === undefined) return;
    this.#channels.push(channel);
    channel.subscribe((id, until) => {
      // Whatever comes over a channel is checked: a bad message is dropped, never an exception.
      if (typeof id !== 'string' || !SESSION_ID.test(id) || typeof until !== 'number' || !Number.isFinite(until)) return;
      this.#remember(id, Math.min(until, Date.now() + this.#maxMs));
    });
  }

  /** Remembers a signed session as ended until `until`; bounded like the sessions. */
  #remember(id: string, until: number): void {
    const now = Date.now();
    if (until <= now) return;
    // Swept only when full: an expired entry refuses nothing (its session has expired too), and a
    // sweep per call would be quadratic when an instance joining reads thousands of sign-outs.
    if (this.#revoked.size >= this.#max) for (const [nonce, end] of this.#revoked) if (end <= now) this.#revoked.delete(nonce);
    if (this.#revoked.size < this.#max) this.#revoked.set(id, until);
  }

  #sign(text: string): string {
    return createHmac('sha256', this.#secret!).update(text).digest('base64url');
  }

  /** Starts a session for `identity` and sets its cookie on `res`. */
  create(identity: OperatorIdentity, req: Request, res: Response): Session {
    const now = Date.now();
    if (this.#secret !== undefined) {
      const nonce = randomBytes(16).toString('base64url');
      const payload = Buffer.from(JSON.stringify({ u: identity.username, c: now, n: nonce })).toString('base64url');
      this.#cookie.write(req, res, `${payload}.${this.#sign(payload)}`, Math.floor(this.#maxMs / 1000));
      return { username: identity.username, role: identity.role, csrfToken: this.#sign(`csrf:${nonce}`), createdAt: now, lastSeen: now };
    }
    const id = randomBytes(32).toString('base64url');
    const session: Session = { username: identity.username, role: identity.role, csrfToken: randomBytes(32).toString('base64url'), createdAt: now, lastSeen: now };
    if (this.#sessions.size >= this.#max) this.#sessions.delete(this.#sessions.keys().next().value!);
    this.#sessions.set(key(id), session);
    this.#cookie.write(req, res, id, Math.floor(this.#maxMs / 1000));
    return session;
  }

  /** The live session of the request's cookie, touched; `undefined` when none or expired. */
  of(req: Request): Session | undefined {
    const id = this.#cookie.read(req);
    if (this.#secret !== undefined) return id === undefined ? undefined : this.#signed(id);
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

  /** The session of a signed cookie value, checked: signature, age, sign-out, the user still there. */
  #signed(value: string): (Session & { nonce: string }) | undefined {
    const m = SIGNED_VALUE.exec(value);
    if (m === null) return undefined;
    const given = Buffer.from(m[2]!, 'base64url');
    const expected = Buffer.from(this.#sign(m[1]!), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let payload: { u?: unknown; c?: unknown; n?: unknown };
    try {
      payload = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as typeof payload;
    } catch {
      return undefined;
    }
    if (typeof payload.u !== 'string' || typeof payload.c !== 'number' || typeof payload.n !== 'string') return undefined;
    const now = Date.now();
    if (now - payload.c > this.#maxMs || payload.c > now + 60_000) return undefined;
    if (this.#revoked.has(payload.n)) return undefined;
    const user = this.#lookup(payload.u);
    if (user === undefined) return undefined;
    return { username: user.username, role: user.role, csrfToken: this.#sign(`csrf:${payload.n}`), createdAt: payload.c, lastSeen: now, nonce: payload.n };
  }

  /** Ends the request's session (if any) and clears its cookie. */
  destroy(req: Request, res: Response): void {
    const id = this.#cookie.read(req);
    const signed = this.#secret === undefined || id === undefined ? undefined : this.#signed(id);
    if (signed !== undefined) {
      // Remembered until the session would have ended anyway.
      const until = signed.createdAt + this.#maxMs;
      this.#remember(signed.nonce, until);
      for (const channel of this.#channels) channel.publish(signed.nonce, until);
    }
    if (id !== undefined && COOKIE_VALUE.test(id)) this.#sessions.delete(key(id));
    this.#cookie.write(req, res, '', 0);
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
}

/** Whether the request carries the session's CSRF token (constant-time comparison). */
export function csrfMatches(req: Request, session: Session): boolean {
  const given = req.headers[CSRF_HEADER.toLowerCase()];
  if (typeof given !== 'string' || given.length > 200) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(session.csrfToken).digest();
  return timingSafeEqual(a, b);
}
