/**
 * Throttles the client addresses that send invalid tokens: after `maxRefusals` tokens refused by
 * the authorization server within `windowSeconds` from one address, further tokens that address
 * sends and the policy does not know yet are answered 429 without calling the server, until the
 * window ends. A negative cache cannot stop a flood of tokens never seen; this does, while tokens
 * already known valid (cached) keep working, from that address too.
 *
 * @module
 */
import { LRUCache } from 'lru-cache';

/** Settings of an {@link InvalidTokenThrottle}. */
export interface ThrottleSettings {
  /** Refused tokens from one address within the window that start the throttle. */
  maxRefusals: number;
  /** The window, seconds, counted from the first refusal. */
  windowSeconds: number;
  /** Most addresses remembered (least recently refused forgotten first). */
  maxAddresses: number;
}

/** Refusals of one address in its current window (counted in place: the window keeps its end). */
interface Window {
  refusals: number;
}

/** One policy's throttle of invalid tokens, per client address. */
export class InvalidTokenThrottle {
  private readonly windows: LRUCache<string, Window>;

  constructor(private readonly settings: ThrottleSettings) {
    this.windows = new LRUCache<string, Window>({ max: settings.maxAddresses, ttl: settings.windowSeconds * 1000, ttlAutopurge: false });
  }

  /** Whether unknown tokens from `address` are refused for now. */
  throttled(address: string | undefined): boolean {
    if (address === undefined) return false;
    const window = this.windows.get(address);
    return window !== undefined && window.refusals >= this.settings.maxRefusals;
  }

  /** Whole seconds until `address`'s window ends (at least 1). */
  retryAfterSeconds(address: string): number {
    return Math.max(1, Math.ceil(this.windows.getRemainingTTL(address) / 1000));
  }

  /** Counts a token of `address` that the authorization server refused. */
  refused(address: string | undefined): void {
    if (address === undefined) return;
    const window = this.windows.get(address);
    if (window === undefined) this.windows.set(address, { refusals: 1 });
    else window.refusals++;
  }

  /** Forgets every address. */
  clear(): void {
    this.windows.clear();
  }
}
