/**
 * Sign-in sessions of operators: a random id in an `HttpOnly`, `SameSite=Strict` cookie (`Secure`
 * over TLS; its scope in session-cookie.ts), kept in memory with an idle and an absolute lifetime (or a signed cookie), and a CSRF
 * token per session that every change must send back in a header. A session holds its user's role
 * as the users are now, and each user at most `maxPerUser` sessions: one user's sign-ins end only
 * that user's oldest.
 *
 * @module
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { SessionCookie } from './session-cookie.js';
import { parseSignOut, SignOutMemory, type Remembered, type SignOut } from './sign-outs.js';
import type { OperatorIdentity } from './users.js';
/** The header that carries the session's CSRF token on every change. */
export const CSRF_HEADER = 'X-CSRF-Token';

/** Lifetimes and bounds of sessions. */
export interface SessionOptions {
  /** Minutes without a request after which a session ends. Default `30`. */
  idleMinutes?: number;
  /** Hours after sign-in after which a session ends whatever happens. Default `12`. */
  maxHours?: number;
  /**
   * Most sessions of one user at once; a sign-in past it ends that user's oldest session (never
   * another user's). Sessions in memory are therefore at most users × `maxPerUser`, and a signed
   * session's sign-outs remembered at most users × (`maxPerUser` + 1). Default `10`.
   */
  maxPerUser?: number;
  /**
   * A ceiling on the sessions kept in memory besides `maxPerUser` (for a users file with very many
   * users): past it, a sign-in ends the oldest session of the user who holds the most. Default:
   * none (users × `maxPerUser` bounds them).
   */
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
 * can only end sessions, never open one. Messages are opaque strings of at most 110 characters
 * (one session, or every session of a user up to a time, once a user's sign-outs exceed
 * `maxPerUser`); the instances sharing a channel must run the same version.
 */
export interface SessionRevocations {
  /** Tells the other instances of the sign-out `id`; `until`: epoch ms after which it ends nothing. */
  publish(id: string, until: number): void;
  /** Calls `listener` with each sign-out another instance published. */
  subscribe(listener: (id: string, until: number) => void): void;
  /**
   * Optional, for a channel that keeps sign-outs for instances that join later: sign-outs it may
   * drop, because one published since covers them.
   */
  forget?(signOuts: ReadonlyArray<{ readonly id: string; readonly until: number }>): void;
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

/** A session in memory: its user's name as at the sign-in; the role is looked up at each request. */
interface Held {
  readonly username: string;
  readonly csrfToken: string;
  readonly createdAt: number;
  lastSeen: number;
}

const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;
const SIGNED_VALUE = /^([A-Za-z0-9_-]{10,600})\.([A-Za-z0-9_-]{43})$/;
/** How far ahead of this clock another instance's may be. */
const CLOCK_SKEW_MS = 60_000;

function key(id: string): string {
  // The map holds a digest of the id: a heap dump does not hand out live sessions.
  return createHash('sha256').update(id).digest('base64url');
}

/** The bounds and cookie of a {@link SessionStore}. */
export type SessionStoreOptions = Required<Omit<SessionOptions, 'secret' | 'revocations' | 'maxSessions' | 'secureCookie'>> & {
  secret?: string;
  maxSessions?: number;
};

/** The sessions of one gateway instance. */
export class SessionStore {
  readonly #sessions = new Map<string, Held>();
  /** The keys of each user's sessions in memory (lower-case name), oldest first. */
  readonly #byUser = new Map<string, Set<string>>();
  /** The signed sessions this instance opened, per user, oldest first: the per-user cap. */
  readonly #issued = new Map<string, Array<{ nonce: string; createdAt: number }>>();
  readonly #idleMs: number;
  readonly #maxMs: number;
  readonly #perUser: number;
  readonly #max: number | undefined;
  readonly #cookie: SessionCookie;
  readonly #secret: string | undefined;
  readonly #lookup: (username: string) => OperatorIdentity | undefined;
  /** Signed sessions signed out, here or on another instance. */
  readonly #signedOut: SignOutMemory;
  readonly #channels: SessionRevocations[] = [];

  /**
   * @param cookie - the cookie's name and scope (`secureCookie` is its business, not the store's).
   * @param lookup - the user of a session now (its role may have changed; gone: no session).
   */
  constructor(options: SessionStoreOptions, cookie: SessionCookie, lookup: (username: string) => OperatorIdentity | undefined) {
    this.#idleMs = options.idleMinutes * 60_000;
    this.#maxMs = options.maxHours * 3_600_000;
    this.#perUser = options.maxPerUser;
    this.#max = options.maxSessions;
    this.#cookie = cookie;
    this.#secret = options.secret;
    this.#lookup = lookup;
    this.#signedOut = new SignOutMemory(options.maxPerUser, this.#maxMs);
  }

  /**
   * Shares sign-outs of signed sessions over `channel`: this instance's are published there, and
   * those heard there end the sessions here too. Without a secret there is nothing to share.
   */
  share(channel: SessionRevocations): void {
    if (this.#secret === undefined) return;
    this.#channels.push(channel);
    channel.subscribe((id, until) => {
      // Whatever comes over a channel is checked: a bad message is dropped, never an exception.
      if (typeof until !== 'number' || !Number.isFinite(until)) return;
      const signOut = parseSignOut(id);
      if (signOut === undefined) return;
      // A sign-out of a user unknown here ends nothing: such a session is refused anyway. This
      // also keeps what is remembered to the users of the users file.
      if (this.#lookup(signOut.username) === undefined) return;
      const at = 'before' in signOut ? signOut.before : signOut.createdAt;
      if (at > Date.now() + CLOCK_SKEW_MS) return;
      const remembered = this.#signedOut.remember(signOut);
      // What this moved into the user's cutoff is dropped from a channel that keeps sign-outs too,
      // once the cutoff that covers it is told there (an instance hearing it again ignores it).
      if (remembered !== undefined && remembered.superseded.length > 0)
        this.#tell({ publish: remembered.publish.slice(-1), superseded: remembered.superseded });
    });
  }

  /** Remembers a sign-out made here and tells the other instances. */
  #signOut(signOut: SignOut): void {
    const remembered = this.#signedOut.remember(signOut);
    if (remembered !== undefined) this.#tell(remembered);
  }

  #tell(remembered: Remembered): void {
    for (const channel of this.#channels) {
      for (const { message, until } of remembered.publish) channel.publish(message, until);
      if (remembered.superseded.length > 0) channel.forget?.(remembered.superseded.map(({ message, until }) => ({ id: message, until })));
    }
  }

  #sign(text: string): string {
    return createHmac('sha256', this.#secret!).update(text).digest('base64url');
  }

  /** Starts a session for `identity` and sets its cookie on `res`; that user's oldest ends past `maxPerUser`. */
  create(identity: OperatorIdentity, req: Request, res: Response): Session {
    const now = Date.now();
    const name = identity.username.toLowerCase();
    if (this.#secret !== undefined) {
      const nonce = randomBytes(16).toString('base64url');
      const payload = Buffer.from(JSON.stringify({ u: identity.username, c: now, n: nonce })).toString('base64url');
      const issued = (this.#issued.get(name) ?? []).filter((session) => session.createdAt + this.#maxMs > now);
      issued.push({ nonce, createdAt: now });
      while (issued.length > this.#perUser) {
        const oldest = issued.shift()!;
        this.#signOut({ username: identity.username, nonce: oldest.nonce, createdAt: oldest.createdAt });
      }
      this.#issued.set(name, issued);
      this.#cookie.write(req, res, `${payload}.${this.#sign(payload)}`, Math.floor(this.#maxMs / 1000));
      return { username: identity.username, role: identity.role, csrfToken: this.#sign(`csrf:${nonce}`), createdAt: now, lastSeen: now };
    }
    const id = randomBytes(32).toString('base64url');
    const held: Held = { username: identity.username, csrfToken: randomBytes(32).toString('base64url'), createdAt: now, lastSeen: now };
    const own = this.#byUser.get(name) ?? new Set<string>();
    for (const k of own) if (this.#expired(this.#sessions.get(k), now)) this.#drop(k);
    for (const k of own) {
      if (own.size < this.#perUser) break;
      this.#drop(k);
    }
    if (this.#max !== undefined && this.#sessions.size >= this.#max) this.#dropFromLargest();
    this.#sessions.set(key(id), held);
    own.add(key(id));
    this.#byUser.set(name, own);
    this.#cookie.write(req, res, id, Math.floor(this.#maxMs / 1000));
    return { username: held.username, role: identity.role, csrfToken: held.csrfToken, createdAt: now, lastSeen: now };
  }

  /**
   * The live session of the request's cookie, touched, with its user's role as the users are now;
   * `undefined` when none, expired, or its user is gone.
   */
  of(req: Request): Session | undefined {
    const id = this.#cookie.read(req);
    if (this.#secret !== undefined) return id === undefined ? undefined : this.#signed(id);
    if (id === undefined || !COOKIE_VALUE.test(id)) return undefined;
    const k = key(id);
    const held = this.#sessions.get(k);
    if (held === undefined) return undefined;
    const now = Date.now();
    const user = this.#expired(held, now) ? undefined : this.#lookup(held.username);
    if (user === undefined) {
      this.#drop(k);
      return undefined;
    }
    held.lastSeen = now;
    return { username: user.username, role: user.role, csrfToken: held.csrfToken, createdAt: held.createdAt, lastSeen: now };
  }

  #expired(held: Held | undefined, now: number): boolean {
    return held === undefined || now - held.lastSeen > this.#idleMs || now - held.createdAt > this.#maxMs;
  }

  #drop(k: string): void {
    const held = this.#sessions.get(k);
    if (held === undefined) return;
    this.#sessions.delete(k);
    const name = held.username.toLowerCase();
    const own = this.#byUser.get(name);
    own?.delete(k);
    if (own?.size === 0) this.#byUser.delete(name);
  }

  /** Past `maxSessions`: the oldest session of the user holding the most goes. */
  #dropFromLargest(): void {
    let largest: Set<string> | undefined;
    for (const own of this.#byUser.values()) if (largest === undefined || own.size > largest.size) largest = own;
    const oldest = largest?.values().next().value;
    if (oldest !== undefined) this.#drop(oldest);
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
    if (now - payload.c > this.#maxMs || payload.c > now + CLOCK_SKEW_MS) return undefined;
    if (this.#signedOut.ended(payload.u, payload.n, payload.c)) return undefined;
    const user = this.#lookup(payload.u);
    if (user === undefined) return undefined;
    return {
      username: user.username,
      role: user.role,
      csrfToken: this.#sign(`csrf:${payload.n}`),
      createdAt: payload.c,
      lastSeen: now,
      nonce: payload.n,
    };
  }

  /** Ends the request's session (if any) and clears its cookie. */
  destroy(req: Request, res: Response): void {
    const id = this.#cookie.read(req);
    const signed = this.#secret === undefined || id === undefined ? undefined : this.#signed(id);
    if (signed !== undefined) {
      const name = signed.username.toLowerCase();
      const issued = this.#issued.get(name)?.filter((session) => session.nonce !== signed.nonce);
      if (issued !== undefined) this.#issued.set(name, issued);
      this.#signOut({ username: signed.username, nonce: signed.nonce, createdAt: signed.createdAt });
    }
    if (id !== undefined && COOKIE_VALUE.test(id)) this.#drop(key(id));
    this.#cookie.write(req, res, '', 0);
  }

  /**
   * Ends every session of a user opened until now (the user was removed from the users file, or
   * given a new password): in memory, and for signed sessions on every instance that hears of it.
   */
  endAll(username: string): void {
    const name = username.toLowerCase();
    for (const k of this.#byUser.get(name) ?? []) this.#drop(k);
    if (this.#secret === undefined) return;
    this.#issued.delete(name);
    this.#signOut({ username, before: Date.now() });
  }

  /** Sessions alive now (in memory). */
  get size(): number {
    return this.#sessions.size;
  }

  /** Sign-outs of signed sessions remembered (single ones and per-user cutoffs). */
  get signOutsRemembered(): number {
    return this.#signedOut.size;
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
