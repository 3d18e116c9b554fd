/**
 * The instance's cap on requests in flight (`maxConcurrentRequests`): a counter, checked before any
 * other work; past the cap a request is refused at once, never queued.
 *
 * @module
 */

/** The requests in flight on this instance, up to a cap. */
export class InstanceCap {
  /** The cap. */
  readonly max: number;
  #inFlight = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Requests in flight now (the `gateway_concurrent_requests` gauge). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Takes a place: the function that gives it back (idempotent; call it once the exchange ends),
   * or `undefined` when the cap is reached.
   */
  admit(): (() => void) | undefined {
    if (this.#inFlight >= this.max) return undefined;
    this.#inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
    };
  }
}
