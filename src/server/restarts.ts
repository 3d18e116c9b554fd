/**
 * When the primary of `serve --workers <n>` starts a worker again, and when it gives up: the
 * restart policy of one worker slot, without timers or processes (supervisor.ts applies it).
 *
 * A worker that dies before it has served for {@link RESTART_POLICY}`.stableMs` failed to start;
 * its slot is started again after a delay that doubles with each consecutive failure, up to a cap.
 * When a slot fails `startLimit` times in a row within `startLimitWindowMs`, the primary stops
 * (as systemd's start limit does), so that whatever runs it sees the failure.
 *
 * @module
 */

/** The restart policy of `serve --workers` (documented in docs/deployment.md). */
export const RESTART_POLICY = {
  /** The delay before the first restart of a slot, ms; doubled for each consecutive failure. */
  initialDelayMs: 1_000,
  /** The longest delay before a restart, ms. */
  maxDelayMs: 30_000,
  /** How long a worker must have served for its death not to count as a failed start, ms. */
  stableMs: 10_000,
  /** Failed starts of one slot, in a row, that stop the primary... */
  startLimit: 5,
  /** ...when they fall within this window, ms. */
  startLimitWindowMs: 120_000,
} as const;

export type RestartPolicy = { readonly [K in keyof typeof RESTART_POLICY]: number };

/** What to do after a worker died: start another after `delayMs`, or stop (`giveUp`). */
export type RestartDecision =
  | { readonly giveUp: false; readonly delayMs: number; readonly failures: number }
  | { readonly giveUp: true; readonly failures: number; readonly withinMs: number };

/** The failed starts of one slot since its worker last served for `stableMs`. */
export class SlotRestarts {
  /** Failures in a row. */
  private consecutive = 0;
  /** When the latest of them happened (ms), `startLimit` at most. */
  private failures: number[] = [];

  constructor(private readonly policy: RestartPolicy = RESTART_POLICY) {}

  /**
   * A worker of the slot died at `now`, after serving for `servedMs` (`undefined`: it never
   * listened). Decides the restart.
   */
  died(now: number, servedMs: number | undefined): RestartDecision {
    const { initialDelayMs, maxDelayMs, stableMs, startLimit, startLimitWindowMs } = this.policy;
    // A worker that served long enough started well: its death begins a new count.
    if (servedMs !== undefined && servedMs >= stableMs) {
      this.consecutive = 0;
      this.failures = [];
    }
    const consecutive = ++this.consecutive;
    this.failures.push(now);
    if (this.failures.length > startLimit) this.failures.shift();
    const recent = this.failures.filter((at) => now - at < startLimitWindowMs);
    if (recent.length >= startLimit) return { giveUp: true, failures: recent.length, withinMs: now - recent[0]! };
    const delayMs = Math.min(initialDelayMs * 2 ** Math.min(consecutive - 1, 30), maxDelayMs);
    return { giveUp: false, delayMs, failures: consecutive };
  }
}
