/**
 * The sign-outs of signed sessions an instance remembers, per user, and the messages that carry
 * them between instances. None is ever dropped: when a user's remembered sign-outs exceed the
 * per-user cap, the oldest of them becomes "every session of this user opened at or before T is
 * ended" (which ends more sessions than asked, never fewer), so memory stays within
 * users × (cap + 1) however often anyone signs in and out.
 *
 * @module
 */

/** A sign-out as the instances tell it each other: one session, or all of a user's up to a time. */
export type SignOut =
  | { readonly username: string; readonly nonce: string; readonly createdAt: number }
  | { readonly username: string; readonly before: number };

/**
 * `<nonce>:<createdAt>:<username>` (one session) or `*:<before>:<username>` (every session opened
 * at or before `before`, epoch ms). A user name has no colon.
 */
const MESSAGE = /^([A-Za-z0-9_-]{22}|\*):(\d{1,15}):([A-Za-z0-9._@-]{1,64})$/;

/** The message of a sign-out (what `SessionRevocations` carry as `id`). */
export function signOutMessage(signOut: SignOut): string {
  return 'nonce' in signOut ? `${signOut.nonce}:${signOut.createdAt}:${signOut.username}` : `*:${signOut.before}:${signOut.username}`;
}

/** The sign-out of a message, or `undefined` when it is not one. */
export function parseSignOut(message: unknown): SignOut | undefined {
  if (typeof message !== 'string') return undefined;
  const m = MESSAGE.exec(message);
  if (m === null) return undefined;
  const time = Number(m[2]);
  return m[1] === '*' ? { username: m[3]!, before: time } : { username: m[3]!, nonce: m[1]!, createdAt: time };
}

/** A message to publish, and the epoch ms after which it refuses nothing (its sessions have expired). */
export interface Published {
  /** The message. */
  readonly message: string;
  /** When it may be forgotten. */
  readonly until: number;
}

/** What a sign-out remembered changed: what to tell the other instances, and what that supersedes. */
export interface Remembered {
  /** The messages to publish, in order: the sign-out, then the user's new cutoff if there is one. */
  readonly publish: Published[];
  /** Messages published before that these cover (a channel that keeps them may drop them). */
  readonly superseded: Published[];
}

interface UserSignOuts {
  /** Sessions opened at or before this (epoch ms) are ended; 0: none. */
  before: number;
  /** The message of `before`, once there is one. */
  cutoff: string | undefined;
  /** Single sign-outs after `before`: nonce → its session's creation and message. */
  readonly sessions: Map<string, { createdAt: number; message: string }>;
}

/** The sign-outs one instance remembers, at most `perUser + 1` per user. */
export class SignOutMemory {
  readonly #users = new Map<string, UserSignOuts>();
  readonly #perUser: number;
  readonly #lifetimeMs: number;

  /**
   * @param perUser - single sign-outs kept per user before they become one cutoff.
   * @param lifetimeMs - how long a session lives after its sign-in (what a sign-out is kept for).
   */
  constructor(perUser: number, lifetimeMs: number) {
    this.#perUser = perUser;
    this.#lifetimeMs = lifetimeMs;
  }

  /** Whether the session `nonce` of `username`, opened at `createdAt`, was signed out. */
  ended(username: string, nonce: string, createdAt: number): boolean {
    const user = this.#users.get(username.toLowerCase());
    return user !== undefined && (createdAt <= user.before || user.sessions.has(nonce));
  }

  /** Remembers a sign-out; `undefined` when it changes nothing (already covered, or expired). */
  remember(signOut: SignOut): Remembered | undefined {
    const now = Date.now();
    const name = signOut.username.toLowerCase();
    let user = this.#users.get(name);
    if (user !== undefined) this.#sweep(user, now);
    if ('before' in signOut) {
      if (signOut.before + this.#lifetimeMs <= now || (user !== undefined && signOut.before <= user.before)) return undefined;
      user ??= this.#add(name);
      return this.#cut(user, signOut.username, signOut.before, []);
    }
    if (signOut.createdAt + this.#lifetimeMs <= now || (user !== undefined && signOut.createdAt <= user.before)) return undefined;
    user ??= this.#add(name);
    const message = signOutMessage(signOut);
    user.sessions.set(signOut.nonce, { createdAt: signOut.createdAt, message });
    const own: Published = { message, until: signOut.createdAt + this.#lifetimeMs };
    if (user.sessions.size <= this.#perUser) return { publish: [own], superseded: [] };
    // The oldest becomes the cutoff: a session still open ends early only when `perUser` sessions
    // of the same user opened after it have been signed out.
    let oldest = Number.POSITIVE_INFINITY;
    for (const session of user.sessions.values()) oldest = Math.min(oldest, session.createdAt);
    // This sign-out is told too unless the cutoff covers it (then it was never published).
    if (signOut.createdAt <= oldest) {
      user.sessions.delete(signOut.nonce);
      return this.#cut(user, signOut.username, oldest, []);
    }
    return this.#cut(user, signOut.username, oldest, [own]);
  }

  /** Sign-outs remembered (single ones and cutoffs). */
  get size(): number {
    let size = 0;
    for (const user of this.#users.values()) size += user.sessions.size + (user.cutoff === undefined ? 0 : 1);
    return size;
  }

  #add(name: string): UserSignOuts {
    const user: UserSignOuts = { before: 0, cutoff: undefined, sessions: new Map() };
    this.#users.set(name, user);
    return user;
  }

  /** Ends every session of the user opened at or before `before`, after publishing `first`. */
  #cut(user: UserSignOuts, username: string, before: number, first: Published[]): Remembered {
    const superseded: Published[] = user.cutoff === undefined ? [] : [{ message: user.cutoff, until: user.before + this.#lifetimeMs }];
    for (const [nonce, session] of user.sessions) {
      if (session.createdAt > before) continue;
      superseded.push({ message: session.message, until: session.createdAt + this.#lifetimeMs });
      user.sessions.delete(nonce);
    }
    user.before = before;
    user.cutoff = signOutMessage({ username, before });
    return { publish: [...first, { message: user.cutoff, until: before + this.#lifetimeMs }], superseded };
  }

  /** Forgets what covers only expired sessions. */
  #sweep(user: UserSignOuts, now: number): void {
    for (const [nonce, session] of user.sessions) if (session.createdAt + this.#lifetimeMs <= now) user.sessions.delete(nonce);
    if (user.cutoff !== undefined && user.before + this.#lifetimeMs <= now) {
      user.before = 0;
      user.cutoff = undefined;
    }
  }
}
