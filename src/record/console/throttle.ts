/**
 * Throttling of failed logins to the console and the admin routes, per client address.
 *
 * @module
 */
import { InvalidOptionError, optionKeys, refuseUnknownKeys } from '../../options.js';

/** Options of the login throttle of the console and the admin routes. */
export interface LoginThrottleOptions {
  /**
   * Failed logins allowed from one client address within `windowMs`. After that many, every
   * request from the address is answered 429 (`Retry-After`) without looking at its credentials,
   * for `windowMs` from the last failure. Default `5`.
   */
  maxFailures?: number;
  /** The window, in milliseconds. Default `60000`. */
  windowMs?: number;
  /**
   * Most client addresses remembered at once; past it the oldest is forgotten (after the expired
   * ones). Default `10000`.
   */
  maxAddresses?: number;
}

interface Entry {
  failures: number;
  /** When the failures counted so far are forgotten (epoch ms). */
  until: number;
  /** Whether the address is refused until `until`. */
  blocked: boolean;
}

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new InvalidOptionError(name, 'must be a positive integer');
  return value as number;
}

const THROTTLE_KEYS = optionKeys<LoginThrottleOptions>({ maxFailures: true, windowMs: true, maxAddresses: true });

/**
 * Failed logins by client address (`req.socket.remoteAddress`: a proxy's `X-Forwarded-For` is not
 * a client's to choose here), in a bounded Map kept in the order of each address's last failure.
 */
export class LoginThrottle {
  /** Failures allowed within the window. */
  readonly maxFailures: number;
  /** The window, in milliseconds. */
  readonly windowMs: number;
  /** Most addresses remembered. */
  readonly maxAddresses: number;
  private readonly entries = new Map<string, Entry>();

  /**
   * @param name - the options as errors name them, for example `adminRouter: options.loginThrottle`.
   * @throws InvalidOptionError naming the option (`name.windowMs`...) when one is not a positive integer.
   */
  constructor(options: LoginThrottleOptions = {}, name = 'loginThrottle') {
    if (options === null || typeof options !== 'object') throw new InvalidOptionError(name, 'must be an object');
    refuseUnknownKeys(name, options, THROTTLE_KEYS);
    this.maxFailures = positiveInteger(options.maxFailures, 5, `${name}.maxFailures`);
    this.windowMs = positiveInteger(options.windowMs, 60_000, `${name}.windowMs`);
    this.maxAddresses = positiveInteger(options.maxAddresses, 10_000, `${name}.maxAddresses`);
  }

  /** Milliseconds until `address` may try again; `0` when it may now. */
  blockedFor(address: string, now = Date.now()): number {
    const entry = this.entries.get(address);
    if (entry === undefined) return 0;
    if (entry.until <= now) {
      this.entries.delete(address);
      return 0;
    }
    return entry.blocked ? entry.until - now : 0;
  }

  /** Counts a failed login of `address`; returns its failures within the window. */
  fail(address: string, now = Date.now()): number {
    let entry = this.entries.get(address);
    if (entry === undefined || entry.until <= now) entry = { failures: 0, until: now + this.windowMs, blocked: false };
    entry.failures++;
    if (entry.failures >= this.maxFailures) {
      entry.blocked = true;
      entry.until = now + this.windowMs;
    }
    // Re-inserted at the end: the Map stays ordered by last failure, so eviction starts with the stalest.
    this.entries.delete(address);
    if (this.entries.size >= this.maxAddresses) this.evict(now);
    this.entries.set(address, entry);
    return entry.failures;
  }

  /** A successful login of `address` forgets its failures (and only its own). */
  succeed(address: string): void {
    this.entries.delete(address);
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.entries.size;
  }

  private evict(now: number): void {
    for (const [address, entry] of this.entries) {
      if (entry.until > now && this.entries.size < this.maxAddresses) return;
      // Expired entries first (they come first); when none is, the oldest one.
      this.entries.delete(address);
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
