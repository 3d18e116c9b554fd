/**
 * Refused requests of nobody (no valid credentials) folded into one audit entry per client
 * address and window: the first refusal of an address is logged as it is, the others counted, and
 * when the window closes one entry says how many there were, between when and when, of what. An
 * anonymous client sending thousands of requests then costs the audit log two entries a window,
 * not thousands, and cannot push an operator's entries out of it.
 *
 * @module
 */
import type { AuditInput } from './audit.js';

/** Options of {@link RefusalAggregator}. */
export interface RefusalAggregatorOptions {
  /** The window, in milliseconds, from an address's first refusal. */
  windowMs: number;
  /** Most addresses counted at once; the refusals of others share one count until windows close. */
  maxAddresses: number;
}

/** The action of a summary entry. */
export const REFUSED_REQUESTS = 'refused-requests';
/** The address of the summary of addresses past `maxAddresses`. */
const OTHERS = 'other addresses';
/** Most distinct actions named in a summary. */
const MAX_ACTIONS = 8;

interface Window {
  readonly address: string;
  readonly first: number;
  last: number;
  /** Refusals in the window, the first (logged on its own) included. */
  count: number;
  readonly actions: Map<string, number>;
}

/** Anonymous refusals, counted per address and window. */
export class RefusalAggregator {
  /** Refusals counted into a summary instead of logged one by one. */
  aggregated = 0;
  readonly #windows = new Map<string, Window>();
  readonly #options: RefusalAggregatorOptions;
  readonly #write: (input: AuditInput) => void;
  #timer: NodeJS.Timeout | undefined;

  /** `write` appends an entry to the audit log (the first refusal of a window, and the summaries). */
  constructor(options: RefusalAggregatorOptions, write: (input: AuditInput) => void) {
    this.#options = options;
    this.#write = write;
  }

  /** One refusal: logged through `write` when it is its address's first in the window, else counted. */
  add(input: AuditInput, now = Date.now()): void {
    this.sweep(now);
    let key = input.address;
    let window = this.#windows.get(key);
    if (window === undefined && this.#windows.size >= this.#options.maxAddresses) {
      key = OTHERS;
      window = this.#windows.get(key);
    }
    if (window === undefined) {
      this.#windows.set(key, { address: key, first: now, last: now, count: 1, actions: new Map([[input.action, 1]]) });
      this.#write(input);
      this.#arm();
      return;
    }
    window.last = now;
    window.count++;
    const actions = window.actions;
    if (actions.has(input.action) || actions.size < MAX_ACTIONS) actions.set(input.action, (actions.get(input.action) ?? 0) + 1);
    this.aggregated++;
  }

  /** Writes the summaries of the windows closed at `now` (all of them with `Infinity`). */
  sweep(now = Date.now()): void {
    // Windows are kept in the order they opened: the first still open ends the sweep.
    for (const [key, window] of this.#windows) {
      if (window.first + this.#options.windowMs > now) break;
      this.#windows.delete(key);
      if (window.count > 1) this.#write(summary(window));
    }
    if (this.#windows.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Writes every summary now (at shutdown). */
  close(): void {
    this.sweep(Infinity);
  }

  #arm(): void {
    if (this.#timer !== undefined) return;
    // Summaries written within a few seconds of their window's end, by a timer that keeps no process alive.
    this.#timer = setInterval(() => this.sweep(), Math.min(this.#options.windowMs, 5_000));
    this.#timer.unref();
  }
}

function summary(window: Window): AuditInput {
  const from = window.address === OTHERS ? 'addresses past the ones counted one by one' : window.address;
  const actions = [...window.actions].map(([action, n]) => `${action} ${n}`).join(', ');
  return {
    actor: null,
    address: window.address,
    action: REFUSED_REQUESTS,
    result: 'refused',
    detail: `${window.count} refused requests from ${from} between ${new Date(window.first).toISOString()} and ${new Date(window.last).toISOString()} (the first logged on its own): ${actions}`,
  };
}
