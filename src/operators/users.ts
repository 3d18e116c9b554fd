/**
 * The operators who may sign in: a users file (JSON, password hashes only), a list given in code,
 * and the single `admin` user of `ADMIN_PASSWORD` (`admin.basicAuth`), which keeps working as an
 * `admin`.
 *
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type ConfigIssue } from '../config/errors.js';
import { parseJsonText } from '../config/json-syntax.js';
import { logger } from '../log.js';
import type { BasicCredentials } from '../admin/credentials.js';
import { parsePasswordHash, verifyPassword } from './passwords.js';
import { isRole, OPERATOR_ROLES, type OperatorRole } from './roles.js';

const log = logger('operators');

/** One operator of a users file. */
export interface OperatorUser {
  /** The sign-in name: 1 to 64 letters, digits and `._@-`. */
  username: string;
  /** What the operator may do. */
  role: OperatorRole;
  /** `hashPassword(...)`'s output (scrypt); never the password itself. */
  passwordHash: string;
}

/** The users file: `{ "users": [ { "username", "role", "passwordHash" } ] }`. */
export interface UsersDocument {
  /** The operators. */
  users: OperatorUser[];
}

/** Who is signed in: a user name and a role. */
export interface OperatorIdentity {
  /** The user name. */
  readonly username: string;
  /** The role. */
  readonly role: OperatorRole;
}

/** What errors of the users file call it: `invalid users file (<file>): ...`. */
const USERS_FILE = 'users file';

/** A user name: what a Basic header can carry and a log line can show as is. */
export const USERNAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** Checks a users document, naming every bad field (`users[1].role: ...`). */
export function usersIssues(document: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    return [{ path: '', message: 'must be an object { "users": [...] }' }];
  const keys = Object.keys(document);
  for (const key of keys) if (key !== 'users' && key !== '$schema') issues.push({ path: key, message: 'unknown field (allowed: users)' });
  const users = (document as { users?: unknown }).users;
  if (!Array.isArray(users)) return [...issues, { path: 'users', message: 'must be an array' }];
  const seen = new Set<string>();
  users.forEach((user: unknown, i) => {
    const at = `users[${i}]`;
    if (user === null || typeof user !== 'object' || Array.isArray(user)) {
      issues.push({ path: at, message: 'must be an object' });
      return;
    }
    const u = user as Record<string, unknown>;
    for (const key of Object.keys(u))
      if (!['username', 'role', 'passwordHash'].includes(key))
        issues.push({ path: `${at}.${key}`, message: 'unknown field (allowed: username, role, passwordHash)' });
    if (typeof u.username !== 'string' || !USERNAME.test(u.username))
      issues.push({ path: `${at}.username`, message: 'must be 1 to 64 letters, digits or ._@-' });
    else if (seen.has(u.username.toLowerCase())) issues.push({ path: `${at}.username`, message: `"${u.username}" is listed twice` });
    else seen.add(u.username.toLowerCase());
    if (!isRole(u.role)) {
      const given = u.role === undefined ? 'no role' : `the role ${JSON.stringify(u.role)?.slice(0, 40) ?? String(u.role)}`;
      const who = typeof u.username === 'string' && USERNAME.test(u.username) ? `user ${u.username}` : 'this user';
      issues.push({ path: `${at}.role`, message: `${who} has ${given}: must be one of ${OPERATOR_ROLES.join(', ')}` });
    }
    if (typeof u.passwordHash !== 'string' || parsePasswordHash(u.passwordHash) === undefined) {
      issues.push({
        path: `${at}.passwordHash`,
        message: 'must be a hash written by hashPassword or `express-access-gateway users add` (scrypt$N$r$p$salt$hash)',
      });
    }
  });
  return issues;
}

/** Options of {@link UserDirectory}. */
export interface UserDirectoryOptions {
  /** A users file (read at creation, and again when it changes). */
  file?: string;
  /** Users given in code. */
  users?: OperatorUser[];
  /** The single user of `admin.basicAuth` (`ADMIN_PASSWORD`), an `admin`. */
  fixedAdmin?: BasicCredentials;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Successful checks remembered, so that a page polling with Basic credentials does not cost one scrypt a request. */
const REMEMBER_MS = 60_000;
const REMEMBER_MAX = 1000;

/**
 * The operators: verifies a user name and password (scrypt, constant time, the same time for an
 * unknown user), re-reading the users file when it changes. A successful check is remembered for
 * a minute under a digest of the credentials (never the password itself).
 */
export class UserDirectory {
  readonly #file: string | undefined;
  readonly #inline: Map<string, OperatorUser>;
  readonly #fixed: { user: Buffer; pass: Buffer; username: string } | undefined;
  #fromFile = new Map<string, OperatorUser>();
  #mtime = 0;
  #checkedAt = 0;
  readonly #remembered = new Map<string, { identity: OperatorIdentity; until: number }>();
  readonly #changed: Array<(username: string) => void> = [];
  #reading: Promise<void> | undefined;

  /** @throws ConfigError naming the file and the field when the users file is unreadable or invalid. */
  constructor(options: UserDirectoryOptions = {}) {
    this.#file = options.file === undefined ? undefined : path.resolve(options.file);
    this.#inline = new Map();
    if (options.users !== undefined) {
      const issues = usersIssues({ users: options.users });
      if (issues.length > 0) throw new ConfigError(issues, 'operators.users');
      for (const user of options.users) this.#inline.set(user.username.toLowerCase(), { ...user });
    }
    if (options.fixedAdmin !== undefined) {
      const { username, password } = options.fixedAdmin;
      this.#fixed = { user: digest(username), pass: digest(password), username };
    }
    if (this.#file !== undefined) {
      let text: string;
      try {
        text = readFileSync(this.#file, 'utf8');
        this.#mtime = statSync(this.#file).mtimeMs;
      } catch (err) {
        throw new ConfigError(
          [{ path: '', message: `cannot read the file (${(err as { code?: string }).code ?? String(err)})` }],
          this.#file,
          { document: USERS_FILE },
        );
      }
      this.#fromFile = this.#parse(text);
    }
  }

  #parse(text: string): Map<string, OperatorUser> {
    let document: unknown;
    try {
      document = parseJsonText(text);
    } catch (err) {
      throw new ConfigError([{ path: '', message: `not valid JSON ${(err as Error).message}` }], this.#file, { document: USERS_FILE });
    }
    const issues = usersIssues(document);
    if (issues.length > 0) throw new ConfigError(issues, this.#file, { document: USERS_FILE });
    const users = new Map<string, OperatorUser>();
    for (const user of (document as UsersDocument).users) users.set(user.username.toLowerCase(), user);
    return users;
  }

  /**
   * Calls `listener` with the name of each user of the users file who is removed from it or given
   * another password there, when the file is read again: their sessions must end.
   */
  onCredentialsChanged(listener: (username: string) => void): void {
    this.#changed.push(listener);
  }

  /** Re-reads the users file when its modification time changed (at most once a second); never throws. */
  refresh(): Promise<void> {
    if (this.#file === undefined) return Promise.resolve();
    // A request that comes while the file is being looked at waits for the answer.
    if (this.#reading !== undefined) return this.#reading;
    const now = Date.now();
    if (now - this.#checkedAt < 1000) return Promise.resolve();
    this.#checkedAt = now;
    this.#reading = this.#read(this.#file).finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #read(file: string): Promise<void> {
    try {
      const info = await stat(file);
      if (info.mtimeMs === this.#mtime) return;
      const users = this.#parse(await readFile(file, 'utf8'));
      const before = this.#fromFile;
      this.#mtime = info.mtimeMs;
      this.#fromFile = users;
      this.#remembered.clear();
      log('users file read again: %d user(s)', users.size);
      for (const [key, user] of before) {
        if (users.get(key)?.passwordHash === user.passwordHash) continue;
        for (const listener of this.#changed) listener(user.username);
      }
    } catch (err) {
      // The users in force stay: a half-written or broken file locks no one out.
      log('users file not read again, the previous users stay: %s', (err as Error)?.message ?? String(err));
    }
  }

  /** The user of a name (file users first, then those given in code), without the password hash. */
  #find(username: string): OperatorUser | undefined {
    const key = username.toLowerCase();
    return this.#fromFile.get(key) ?? this.#inline.get(key);
  }

  /** The identity of a user name and password, or `undefined` when they do not match. */
  async verify(username: string, password: string): Promise<OperatorIdentity | undefined> {
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    await this.refresh();
    if (this.#fixed !== undefined) {
      // Both comparisons always run: no early exit on a wrong user name.
      const userOk = timingSafeEqual(digest(username), this.#fixed.user);
      const passOk = timingSafeEqual(digest(password), this.#fixed.pass);
      if (userOk && passOk) return { username: this.#fixed.username, role: 'admin' };
      if (userOk) return undefined;
    }
    const key = digest(`${username}\u0000${password}`).toString('base64url');
    const known = this.#remembered.get(key);
    const now = Date.now();
    if (known !== undefined && known.until > now) return known.identity;
    const user = USERNAME.test(username) ? this.#find(username) : undefined;
    const ok = await verifyPassword(password, user?.passwordHash);
    if (!ok || user === undefined) return undefined;
    const identity: OperatorIdentity = { username: user.username, role: user.role };
    if (this.#remembered.size >= REMEMBER_MAX) this.#remembered.delete(this.#remembered.keys().next().value!);
    this.#remembered.set(key, { identity, until: now + REMEMBER_MS });
    return identity;
  }

  /** The user of a name now (name and role), or `undefined`: a session's user may have been removed or changed role. */
  identityOf(username: string): OperatorIdentity | undefined {
    if (this.#fixed !== undefined && this.#fixed.username === username) return { username, role: 'admin' };
    const user = USERNAME.test(username) ? this.#find(username) : undefined;
    return user === undefined ? undefined : { username: user.username, role: user.role };
  }

  /** The users known now (names and roles only), for display. */
  list(): OperatorIdentity[] {
    const out: OperatorIdentity[] = [];
    if (this.#fixed !== undefined) out.push({ username: this.#fixed.username, role: 'admin' });
    for (const user of [...this.#fromFile.values(), ...this.#inline.values()]) out.push({ username: user.username, role: user.role });
    return out;
  }
}
