/**
 * A bound on the calls one token policy has in flight to its authorization server: past it, a
 * validation waits for a free slot (first come, first served) up to a deadline, then gives up.
 * So a burst of fresh tokens, or a server that hangs, costs the server at most that many
 * connections, and the gateway at most that many sockets.
 *
 * @module
 */

interface Waiter {
  resolve(): void;
  timer: NodeJS.Timeout;
}

/** A counting semaphore with a FIFO queue and a wait deadline per waiter. */
export class CallLimiter {
  private active = 0;
  private readonly waiting: Waiter[] = [];

  /** @param max - most slots taken at once. */
  constructor(readonly max: number) {}

  /** Calls in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /**
   * Takes a slot: at once when one is free (no promise), else resolves when one frees up, or
   * rejects with `onTimeout()` after `timeoutMs`. Give it back with {@link CallLimiter.release}.
   */
  acquire(timeoutMs: number, onTimeout: () => Error): Promise<void> | undefined {
    if (this.active < this.max) {
      this.active++;
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          const index = this.waiting.indexOf(waiter);
          if (index >= 0) this.waiting.splice(index, 1);
          reject(onTimeout());
        }, timeoutMs),
      };
      waiter.timer.unref();
      this.waiting.push(waiter);
    });
  }

  /** Gives a slot back: to the first waiter, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.active--;
      return;
    }
    // The slot passes on as is: `active` is unchanged.
    clearTimeout(next.timer);
    next.resolve();
  }
}
