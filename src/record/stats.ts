/**
 * The window arithmetic and accumulation of {@link TransactionStore.stats}, shared by the stores so
 * that they bucket and summarize alike.
 *
 * @module
 */
import type { OutcomeCode } from '../errors.js';
import {
  apiKey,
  STATS_TOP_SIZE,
  type OutcomeCounts,
  type TransactionRecord,
  type TransactionStats,
  type TransactionStatsBucket,
  type TransactionStatsEntry,
  type TransactionStatsQuery,
  type TransactionStatsTop,
} from './types.js';

/** Most buckets a statistics window may have. */
export const MAX_STATS_BUCKETS = 1000;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Bucket widths chosen automatically, narrowest first; past the last, whole days. */
const STEPS = [SECOND, 10 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, DAY];
/** Buckets aimed at when the width is chosen automatically. */
const TARGET_BUCKETS = 60;

/** A validated statistics window. */
export interface StatsWindow {
  from: number;
  to: number;
  bucketMs: number;
  /** Start of the first bucket (the one holding `from`). */
  first: number;
  /** Number of buckets, from the one holding `from` to the one holding `to`. */
  count: number;
}

/** The bucket width giving about 60 buckets over `[from, to]`, rounded to a step of {@link STEPS}. */
export function chooseBucketMs(from: number, to: number): number {
  const wanted = (to - from) / TARGET_BUCKETS;
  for (const step of STEPS) if (step >= wanted) return step;
  return Math.ceil(wanted / DAY) * DAY;
}

/** Start of the bucket holding `time`: buckets are aligned on the epoch. */
export function bucketStart(time: number, bucketMs: number): number {
  return Math.floor(time / bucketMs) * bucketMs;
}

/**
 * Checks the window of a statistics query and settles its buckets.
 *
 * @throws TypeError when `from` or `to` is missing or not a finite number, `from` is after `to`,
 * `bucketMs` is not a positive integer, or the window has more than {@link MAX_STATS_BUCKETS} buckets.
 */
export function statsWindow(query: TransactionStatsQuery): StatsWindow {
  const { from, to } = query ?? ({} as TransactionStatsQuery);
  if (typeof from !== 'number' || !Number.isFinite(from) || typeof to !== 'number' || !Number.isFinite(to)) {
    throw new TypeError('Statistics need a bounded window: from and to as epoch milliseconds');
  }
  if (from > to) throw new TypeError('Statistics window: from is after to');
  const bucketMs = query.bucketMs ?? chooseBucketMs(from, to);
  if (typeof bucketMs !== 'number' || !Number.isSafeInteger(bucketMs) || bucketMs <= 0) {
    throw new TypeError('Statistics window: bucketMs must be a positive integer');
  }
  const first = bucketStart(from, bucketMs);
  const count = (bucketStart(to, bucketMs) - first) / bucketMs + 1;
  if (count > MAX_STATS_BUCKETS) {
    throw new TypeError(`Statistics window: ${count} buckets, more than ${MAX_STATS_BUCKETS}; widen bucketMs or narrow the window`);
  }
  return { from, to, bucketMs, first, count };
}

/** The `p` quantile (0 to 1) of ascending `sorted` values, interpolating linearly between ranks (as SQL's `percentile_cont`). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = p * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const low = sorted[lo]!;
  return low + (sorted[hi]! - low) * (rank - lo);
}

/** Empty buckets of a window, oldest first. */
export function emptyBuckets(window: StatsWindow): TransactionStatsBucket[] {
  const buckets: TransactionStatsBucket[] = [];
  for (let i = 0; i < window.count; i++) buckets.push({ start: window.first + i * window.bucketMs, counts: {} });
  return buckets;
}

/** Adds `n` records of `outcome` to `counts`. */
export function addCount(counts: OutcomeCounts, outcome: OutcomeCode, n = 1): void {
  counts[outcome] = (counts[outcome] ?? 0) + n;
}

/** The dimensions of {@link TransactionStatsTop}, in its order. */
export const TOP_DIMENSIONS = ['api', 'operation', 'clientId', 'status', 'gatewayStatus'] as const satisfies ReadonlyArray<
  keyof TransactionStatsTop
>;

/** The {@link STATS_TOP_SIZE} largest counts, most first, ties by value (code-unit order, as SQL's `COLLATE "C"`). */
export function topOf(counts: Iterable<readonly [string, number]>): TransactionStatsEntry[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, STATS_TOP_SIZE)
    .map(([value, count]) => ({ value, count }));
}

/** The value of each top dimension in a record (undefined: not counted). */
function dimensionValues(record: TransactionRecord): Record<(typeof TOP_DIMENSIONS)[number], string | undefined> {
  return {
    api: record.api === undefined ? undefined : apiKey(record.api),
    operation: record.operation,
    clientId: record.sender?.clientId,
    status: record.status === null ? undefined : String(record.status),
    gatewayStatus: record.gatewayStatus,
  };
}

/** Accumulates records of a window one by one (the memory store's walk). */
export class StatsAccumulator {
  private readonly buckets: TransactionStatsBucket[];
  private readonly byOutcome: OutcomeCounts = {};
  private readonly durations: number[] = [];
  private sum = 0;
  private readonly top = new Map<string, Map<string, number>>(TOP_DIMENSIONS.map((d) => [d, new Map()]));

  constructor(private readonly window: StatsWindow) {
    this.buckets = emptyBuckets(window);
  }

  /** Counts one record (started inside the window). */
  add(record: TransactionRecord): void {
    const { startedAt, durationMs } = record;
    const outcome = record.outcome.code;
    const bucket = this.buckets[(bucketStart(startedAt, this.window.bucketMs) - this.window.first) / this.window.bucketMs];
    if (bucket !== undefined) addCount(bucket.counts, outcome);
    addCount(this.byOutcome, outcome);
    this.durations.push(durationMs);
    this.sum += durationMs;
    const values = dimensionValues(record);
    for (const dimension of TOP_DIMENSIONS) {
      const value = values[dimension];
      if (value === undefined) continue;
      const counts = this.top.get(dimension)!;
      counts.set(value, (counts.get(value) ?? 0) + 1);
    }
  }

  /** The statistics of the records added. */
  result(): TransactionStats {
    const count = this.durations.length;
    const sorted = this.durations.sort((a, b) => a - b);
    return {
      from: this.window.from,
      to: this.window.to,
      bucketMs: this.window.bucketMs,
      buckets: this.buckets,
      totals: {
        count,
        byOutcome: this.byOutcome,
        meanDurationMs: count === 0 ? null : this.sum / count,
        p95DurationMs: percentile(sorted, 0.95),
      },
      top: Object.fromEntries(TOP_DIMENSIONS.map((d) => [d, topOf(this.top.get(d)!)])) as unknown as TransactionStatsTop,
    };
  }
}
