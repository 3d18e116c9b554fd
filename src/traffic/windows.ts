/**
 * The counts of one group under one policy, in one process: a fixed window (a count and the
 * window's index since the epoch) and a sliding window (the times of the requests counted in the
 * last `windowMs`, in a ring that grows by doubling as they come: exact, 8 bytes per request
 * counted in the window). Both say when their state can be forgotten.
 *
 * @module
 */

/** A fixed window's count. Its index is a small integer (a Smi): no boxed number per group. */
export class FixedCount {
  /** `floor(time / windowMs)` of the window counted. */
  index: number;
  count = 0;
  readonly label: string;

  constructor(label: string, index: number) {
    this.label = label;
    this.index = index;
  }

  /** The count of the window of `index`, the window moved there if it was older. */
  at(index: number): number {
    if (index !== this.index) {
      this.index = index;
      this.count = 0;
    }
    return this.count;
  }
}

const FIRST_CAPACITY = 2;

/** A sliding window's accepted request times, oldest first. */
export class SlidingTimes {
  readonly label: string;
  #times: number[];
  #head = 0;
  #count = 0;

  constructor(label: string) {
    this.label = label;
    this.#times = new Array<number>(FIRST_CAPACITY).fill(0.5);
  }

  /** The count after forgetting the times at or before `now - windowMs`. */
  countAt(now: number, windowMs: number): number {
    const times = this.#times;
    const edge = now - windowMs;
    while (this.#count > 0 && times[this.#head]! <= edge) {
      this.#head = (this.#head + 1) % times.length;
      this.#count--;
    }
    return this.#count;
  }

  /** Adds `now` (not older than the newest time). */
  add(now: number): void {
    if (this.#count === this.#times.length) this.#grow();
    this.#times[(this.#head + this.#count) % this.#times.length] = now;
    this.#count++;
  }

  /** The `i`-th oldest time counted (0: the oldest); `i` below the count. */
  nth(i: number): number {
    return this.#times[(this.#head + i) % this.#times.length]!;
  }

  /** The newest time counted, or `undefined` when none is. */
  newest(): number | undefined {
    return this.#count === 0 ? undefined : this.nth(this.#count - 1);
  }

  #grow(): void {
    const grown = new Array<number>(this.#times.length * 2).fill(0.5);
    for (let i = 0; i < this.#count; i++) grown[i] = this.nth(i);
    this.#times = grown;
    this.#head = 0;
  }
}
