/**
 * Throttling of failed logins to the console and the admin routes, per client address and per
 * account.
 *
 * An attempt takes its slot before its password is verified (scrypt takes tens of milliseconds):
 * counted after, a burst of concurrent guesses would all pass the check made before any of them
 * failed. The slot is given back when the credentials turn out right.
 *
 * Per account as well as per address: guesses spread over many addresses still meet the account's
 * limit. That limit is larger than an address's, and an address the account signed in from before
 * is not held to it, so that a guesser elsewhere cannot lock its owner out.
 *
 * @module
 */
import { InvalidOptionError, optionKeys, refuseUnknownKeys } from '../options.js';

/** Options of the login throttle of the console and the admin routes. */
export interface LoginThrottleOptions {
  /**
   * Failed logins allowed from one client address within `windowMs`. After that many, every
   * request from the address is answered 429 (`Retry-After`) without looking at its credentials,
   * for `windowMs` from the last failure. Default `5`.
   */
  maxFailures?: number;
  /**
   * Failed logins allowed to one account (user name) within `windowMs`, from all addresses
   * together. After that many, a password for that account is refused (429) without being checked,
   * for `windowMs` from the last failure, except from an address that signed in to it successfully
   * before (its owner's workstation: a guesser cannot lock the owner out from elsewhere). Default `20`.
   */
  maxAccountFailures?: number;
  /** The window, in milliseconds. Default `60000`. */
  windowMs?: number;
  /**
   * Most client addresses remembered at once; past it the oldest is forgotten (after the expired
   * ones). Default `10000`. Accounts are bounded by the same number.
   */
  maxAddresses?: number;
}

interface Entry {
  failures: number;
  /** When the failures counted so far are forgotten (epoch ms). */
  until: number;
  /** Whether the address (or account) is refused until `until`. */
  blocked: boolean;
}

interface AccountEntry extends Entry {
  /** Addresses that signed in to the account, most recent last. */
  known: string[];
}

/** Addresses remembered per account as its owner's. */
const KNOWN_ADDRESSES = 4;

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOptionError(name, 'must be a positive integer');
  return value as number;
}

/** The key of an account: user names are matched without case. */
function accountKey(account: string): string {
  return account.toLowerCase().slice(0, 128);
}

/**
 * A login attempt holding its slot: settle it once the credentials are checked. A failure is
 * already counted; a success gives the slot back.
 */
export class LoginAttempt {
  #settled = false;

  /** @internal */
  constructor(
    private readonly throttle: LoginThrottle,
    /** The client address. */
    readonly address: string,
    /** The account tried, when the credentials name one. */
    readonly account: string | undefined,
    /** Failures of the address within the window, this attempt counted. */
    readonly failures: number,
  ) {}

  /**
   * The credentials were right: the address's failures are forgotten, the account's slot given
   * back (its other failures still count), and the address becomes one the account knows.
   */
  succeeded(now = Date.now()): void {
    if (this.#settled) return;
    this.#settled = true;
    this.throttle.refund(this, now);
  }

  /** The credentials were wrong (the failure was counted when the slot was taken). */
  failed(): void {
    this.#settled = true;
  }
}

const THROTTLE_KEYS = optionKeys<LoginThrottleOptions>({ maxFailures: true, maxAccountFailures: true, windowMs: true, maxAddresses: true });

/**
 * Failed logins by client address (`req.socket.remoteAddress`: a proxy's `X-Forwarded-For` is not
 * a client's to choose here) and by account, in bounded Maps kept in the order of each key's last
 * failure.
 */
export class LoginThrottle {
  /** Failures allowed per address within the window. */
  readonly maxFailures: number;
  /** Failures allowed per account within the window. */
  readonly maxAccountFailures: number;
  /** The window, in milliseconds. */
  readonly windowMs: number;
  /** Most addresses (and accounts) remembered. */
  readonly maxAddresses: number;
  private readonly entries = new Map<string, Entry>();
  private readonly accounts = new Map<string, AccountEntry>();

  /**
   * @param name - the options as errors name them, for example `adminRouter: options.loginThrottle`.
   * @throws InvalidOptionError naming the option (`name.windowMs`...) when one is not a positive integer.
   */
  constructor(options: LoginThrottleOptions = {}, name = 'loginThrottle') {
    if (options === null || typeof options !== 'object') throw new InvalidOptionError(name, 'must be an object');
    refuseUnknownKeys(name, options, THROTTLE_KEYS);
    this.maxFailures = positiveInteger(options.maxFailures, 5, `${name}.maxFailures`);
    this.maxAccountFailures = positiveInteger(options.maxAccountFailures, 20, `${name}.maxAccountFailures`);
    this.windowMs = positiveInteger(options.windowMs, 60_000, `${name}.windowMs`);
    this.maxAddresses = positiveInteger(options.maxAddresses, 10_000, `${name}.maxAddresses`);
  }

  /** Milliseconds until `address` (and, when given, `account` from it) may try again; `0` when it may now. */
  blockedFor(address: string, now = Date.now(), account?: string): number {
    const wait = this.waitOf(this.entries, address, now);
    if (wait > 0 || account === undefined) return wait;
    const entry = this.accounts.get(accountKey(account));
    if (entry === undefined || !entry.blocked || entry.known.includes(address)) return 0;
    return this.waitOf(this.accounts, accountKey(account), now);
  }

  /**
   * Takes a slot for a login attempt of `account` (when the credentials name one) from `address`,
   * before its credentials are checked: the attempt counts as a failure unless it is settled as a
   * success. Returns the milliseconds to wait instead when the address or the account is refused now.
   */
  reserve(address: string, account: string | undefined, now = Date.now()): LoginAttempt | number {
    const wait = this.blockedFor(address, now, account);
    if (wait > 0) return wait;
    const failures = this.count(this.entries, address, this.maxFailures, now, () => ({ failures: 0, until: 0, blocked: false }));
    if (account !== undefined)
      this.count(this.accounts, accountKey(account), this.maxAccountFailures, now, () => ({
        failures: 0,
        until: 0,
        blocked: false,
        known: [],
      }));
    return new LoginAttempt(this, address, account, failures);
  }

  /** Gives back the slot of an attempt that succeeded.  @internal */
  refund(attempt: LoginAttempt, now: number): void {
    const give = (entry: Entry | undefined, max: number): void => {
      if (entry === undefined || entry.until <= now) return;
      entry.failures = Math.max(0, entry.failures - 1);
      if (entry.failures < max) entry.blocked = false;
    };
    // The address's failures are forgotten (its operator got in); the account's only give back this
    // slot: the guesses made at it from elsewhere still count.
    this.entries.delete(attempt.address);
    if (attempt.account === undefined) return;
    const key = accountKey(attempt.account);
    let account = this.accounts.get(key);
    give(account, this.maxAccountFailures);
    if (account === undefined) {
      // An account that signed in from an address: remembered, to let its owner in when it is locked.
      if (this.accounts.size >= this.maxAddresses) this.evict(this.accounts, now);
      account = { failures: 0, until: now, blocked: false, known: [] };
      this.accounts.set(key, account);
    }
    account.known = [...account.known.filter((a) => a !== attempt.address), attempt.address].slice(-KNOWN_ADDRESSES);
  }

  /** Counts a failed login of `address`; returns its failures within the window. */
  fail(address: string, now = Date.now()): number {
    return this.count(this.entries, address, this.maxFailures, now, () => ({ failures: 0, until: 0, blocked: false }));
  }

  /** A successful login of `address` forgets its failures (and only its own). */
  succeed(address: string): void {
    this.entries.delete(address);
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.entries.size;
  }

  private waitOf<E extends Entry>(map: Map<string, E>, key: string, now: number): number {
    const entry = map.get(key);
    if (entry === undefined) return 0;
    if (entry.until <= now) {
      if ('known' in entry && (entry as unknown as AccountEntry).known.length > 0) {
        // An account's known addresses outlive its failures.
        Object.assign(entry, { failures: 0, blocked: false });
      } else map.delete(key);
      return 0;
    }
    return entry.blocked ? entry.until - now : 0;
  }

  private count<E extends Entry>(map: Map<string, E>, key: string, max: number, now: number, create: () => E): number {
    let entry = map.get(key);
    if (entry === undefined) entry = create();
    if (entry.until <= now) Object.assign(entry, { failures: 0, until: now + this.windowMs, blocked: false });
    entry.failures++;
    if (entry.failures >= max) {
      entry.blocked = true;
      entry.until = now + this.windowMs;
    }
    // Re-inserted at the end: the Map stays ordered by last failure, so eviction starts with the stalest.
    map.delete(key);
    if (map.size >= this.maxAddresses) this.evict(map, now);
    map.set(key, entry);
    return entry.failures;
  }

  private evict(map: Map<string, Entry>, now: number): void {
    for (const [key, entry] of map) {
      if (entry.until > now && map.size < this.maxAddresses) return;
      // Expired entries first (they come first); when none is, the oldest one.
      map.delete(key);
      if (entry.until > now) return;
    }
  }
}

/**
 * Throttles by the credentials they protect: the admin router and the console built from the same
 * `basicAuth` object (or `authenticate` function), as `createGateway` builds them, count failures
 * together.
 */
const shared = new WeakMap<object, LoginThrottle>();

/**
 * The throttle of the routers protected by `credentials`. With `options`, a new one (validated,
 * errors naming `name`) that such routers built later share; without, the one already there or a
 * default one.
 */
export function throttleFor(credentials: object, options: LoginThrottleOptions | undefined, name: string): LoginThrottle {
  const known = shared.get(credentials);
  if (options === undefined && known !== undefined) return known;
  const throttle = new LoginThrottle(options, name);
  shared.set(credentials, throttle);
  return throttle;
}
