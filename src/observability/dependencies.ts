/**
 * The state of each dependency of the gateway, as an operator sees it (docs/deployment.md,
 * "Dependencies: what the operator sees"): PostgreSQL (the records), Redis (shared counts, token
 * results, DPoP proofs), the record journal, each token policy's
 * authorization server. A dependency that becomes unavailable is said once, at `error`, with its
 * cause and what the gateway does meanwhile; its recovery once, at `info`, with how long it was
 * down. The states are what `gateway_dependency_up` and the admin status show.
 *
 * @module
 */
import type { GatewayLogger } from '../log.js';

/** The dependencies the gateway watches; `authorization_server:<policy>` per token policy. */
export type DependencyName = 'postgresql' | 'redis' | 'record_journal' | 'proof_store' | `authorization_server:${string}`;

/** One dependency's state. */
export interface DependencyState {
  /** `up`: it can be used; `down`: it cannot. */
  readonly state: 'up' | 'down';
  /** When it entered that state, ISO 8601. */
  readonly since: string;
  /** Down: why (the error of the last failure). */
  readonly cause?: string | undefined;
  /** Down: what the gateway does meanwhile. */
  readonly action?: string | undefined;
}

/** Longest cause kept, in characters: an error message quoting a large answer stays short. */
const MAX_CAUSE = 512;

interface Held {
  state: 'up' | 'down';
  since: number;
  cause?: string | undefined;
  action?: string | undefined;
}

/** The states of one gateway's dependencies (see the module comment). */
export class DependencyStates {
  readonly #log: GatewayLogger | undefined;
  readonly #states = new Map<DependencyName, Held>();
  readonly #now: () => number;

  constructor(log: GatewayLogger | undefined, now: () => number = Date.now) {
    this.#log = log;
    this.#now = now;
  }

  /** `name` is in use and answering: known from now on, and said back when it was down. */
  up(name: DependencyName, options: { quiet?: boolean } = {}): void {
    const held = this.#states.get(name);
    if (held?.state === 'up') return;
    const now = this.#now();
    this.#states.set(name, { state: 'up', since: now });
    if (held === undefined || options.quiet === true) return;
    const downMs = now - held.since;
    this.#log?.info({ event: 'dependency_up', dependency: name, downMs }, `${name} available again after ${formatDuration(downMs)}`);
  }

  /**
   * `name` cannot be used: said once per outage (a new cause within it is kept, not said again).
   * `action`: what the gateway does meanwhile. `quiet`: another record already said it.
   */
  down(name: DependencyName, cause: string, action: string, options: { quiet?: boolean } = {}): void {
    const held = this.#states.get(name);
    const short = cause.length > MAX_CAUSE ? `${cause.slice(0, MAX_CAUSE)}…` : cause;
    if (held?.state === 'down') {
      held.cause = short;
      return;
    }
    this.#states.set(name, { state: 'down', since: this.#now(), cause: short, action });
    if (options.quiet === true) return;
    this.#log?.error({ event: 'dependency_down', dependency: name, cause: short, action }, `${name} unavailable: ${short}; ${action}`);
  }

  /** Forgets `name` (no longer used: a token policy removed by a reload). */
  forget(name: DependencyName): void {
    this.#states.delete(name);
  }

  /** Every known dependency's state, by name. */
  snapshot(): Record<string, DependencyState> {
    const out: Record<string, DependencyState> = {};
    for (const [name, held] of this.#states) {
      out[name] = {
        state: held.state,
        since: new Date(held.since).toISOString(),
        ...(held.state === 'down' ? { cause: held.cause, action: held.action } : {}),
      };
    }
    return out;
  }

  /** 1 per dependency up, 0 per one down: `gateway_dependency_up`. */
  gauge(): Array<{ labels: { dependency: string }; value: number }> {
    return [...this.#states].map(([name, held]) => ({ labels: { dependency: name }, value: held.state === 'up' ? 1 : 0 }));
  }
}

/** `1.2 s`, `3 min 4 s`. */
function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}
