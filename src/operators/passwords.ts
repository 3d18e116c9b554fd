/**
 * Password hashes of operators: `node:crypto` scrypt with a random salt, written as
 * `scrypt$<N>$<r>$<p>$<salt, base64url>$<hash, base64url>` so that the cost can be raised later
 * without breaking the hashes already written.
 *
 * @module
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** Cost of new hashes: N = 2^15, r = 8, p = 1 (about 32 MiB and a few tens of milliseconds). */
const DEFAULT = { N: 32_768, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
/** Highest cost accepted when reading a hash: a hostile users file must not exhaust memory. */
const MAX_N = 1 << 20;
const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,128})\$([A-Za-z0-9_-]{32,128})$/;
/** Longest password hashed: longer is no one's password and only costs time. */
export const MAX_PASSWORD_LENGTH = 1024;
/**
 * Shortest password `users add` and `users hash` accept, in characters: an operator signs in with
 * the password alone, and NIST SP 800-63B-4 asks at least 15 characters of a password that is the
 * only factor (docs/configuration-console.md, "Operators and roles").
 */
export const MIN_PASSWORD_LENGTH = 15;

interface Parsed {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }, length: number): Promise<Buffer> {
  const options: ScryptOptions = { N: cost.N, r: cost.r, p: cost.p, maxmem: 256 * cost.N * cost.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Parses a stored hash; `undefined` when it is not one this module writes (or its cost is out of bounds). */
export function parsePasswordHash(stored: string): Parsed | undefined {
  const m = FORMAT.exec(stored);
  if (m === null) return undefined;
  const N = Number(m[1]);
  const r = Number(m[2]);
  const p = Number(m[3]);
  // N a power of two from 2^10; r and p small: the bounds of what this module writes, with room.
  if (N < 1024 || N > MAX_N || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return undefined;
  return { N, r, p, salt: Buffer.from(m[4]!, 'base64url'), hash: Buffer.from(m[5]!, 'base64url') };
}

/**
 * Hashes a password for a users file.
 *
 * @example
 * ```ts
 * import { hashPassword } from 'express-access-gateway';
 *
 * const passwordHash = await hashPassword('correct horse battery staple');
 * // { "username": "alice", "role": "admin", "passwordHash": "scrypt$32768$8$1$..." }
 * ```
 */
export async function hashPassword(password: string): Promise<string> {
  if (typeof password !== 'string' || password === '' || password.length > MAX_PASSWORD_LENGTH) {
    throw new TypeError(`hashPassword: the password must be a non-empty string of at most ${MAX_PASSWORD_LENGTH} characters`);
  }
  const salt = randomBytes(SALT_LENGTH);
  const hash = await derive(password, salt, DEFAULT, KEY_LENGTH);
  return `scrypt$${DEFAULT.N}$${DEFAULT.r}$${DEFAULT.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** A hash of a password no one has, checked when the user name is unknown so that the answer takes as long. */
let decoy: Promise<string> | undefined;

/**
 * Whether `password` matches `stored` (constant-time comparison). With `stored` undefined (unknown
 * user), a decoy hash is checked instead and the answer is `false`: the time does not tell whether
 * the user exists.
 */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  if (typeof password !== 'string' || password.length > MAX_PASSWORD_LENGTH) return false;
  decoy ??= hashPassword(randomBytes(18).toString('base64url'));
  const parsed = parsePasswordHash(stored ?? (await decoy));
  if (parsed === undefined) return false;
  const key = await derive(password, parsed.salt, parsed, parsed.hash.length);
  return timingSafeEqual(key, parsed.hash) && stored !== undefined;
}
