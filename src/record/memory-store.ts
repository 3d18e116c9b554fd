/**
 * The default {@link TransactionStore}: bounded, in memory, a ring of the latest records.
 *
 * @module
 */
import { optionChecks, optionKeys } from '../options.js';
import { estimateSize } from './size.js';
import { StatsAccumulator, statsWindow } from './stats.js';
import {
  apiKey,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type TransactionFilter,
  type TransactionPage,
  type TransactionQuery,
  type TransactionRecord,
  type TransactionStats,
  type TransactionStatsQuery,
  type TransactionStore,
} from './types.js';

/** Options of {@link MemoryTransactionStore}. */
export interface MemoryTransactionStoreOptions {
  /** Most records kept; when full, the oldest is dropped. Default 10,000. */
  maxRecords?: number;
  /**
   * Most bytes of records kept, as estimated from their contents (see {@link MemoryTransactionStore.bytes});
   * past it the oldest records are dropped. A record larger than the whole budget is refused.
   * Default 32 MiB.
   */
  maxBytes?: number;
}

/** Default byte budget of a {@link MemoryTransactionStore}. */
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

function parseCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (!/^\d{1,15}$/.test(cursor)) throw new TypeError('Invalid cursor');
  return Number(cursor);
}

const MEMORY_STORE_KEYS = optionKeys<MemoryTransactionStoreOptions>({ maxRecords: true, maxBytes: true });

/**
 * The default transaction store: keeps the latest `maxRecords` records in memory, within
 * `maxBytes` (the oldest is dropped when either is reached), in a ring. Saving is O(1) and allocates nothing but the id's map entry: it
 * runs once per request. A filtered query walks the ring newest first (at most `maxRecords`
 * records, a few hundred microseconds for 10,000): queries come from an operator's console, a
 * rare event next to saves, so they pay instead of every request keeping indexes up to date.
 * Records are lost when the process ends; implement {@link TransactionStore} to keep them
 * elsewhere.
 *
 * @example
 * ```ts
 * import { MemoryTransactionStore, recordTransaction } from 'express-access-gateway';
 * const store = new MemoryTransactionStore({ maxRecords: 50_000, maxBytes: 128 * 1024 * 1024 });
 * const record = recordTransaction({ store });
 * ```
 */
export class MemoryTransactionStore implements TransactionStore {
  /** Most records kept. */
  readonly maxRecords: number;
  /** Most bytes of records kept (estimated). */
  readonly maxBytes: number;
  // A queue in save order, as parallel arrays from `head` on: save numbers (increasing: the paging
  // cursors, never repeated), records (`undefined` once replaced by a later save of the same id)
  // and their estimated sizes. Dropped entries are shed from the front by moving `head`,
  // compacting now and then.
  private seqs: number[] = [];
  private records: Array<TransactionRecord | undefined> = [];
  private sizes: number[] = [];
  private total = 0;
  private head = 0;
  /** Transaction id to the save number of its (live) record. */
  private readonly bySeq = new Map<string, number>();
  private seq = 0;

  constructor(options: MemoryTransactionStoreOptions = {}) {
    const check = optionChecks('MemoryTransactionStore');
    check.object(options, '');
    check.known(options, '', MEMORY_STORE_KEYS);
    this.maxRecords = check.positive(options.maxRecords, 'maxRecords', 10_000, true);
    this.maxBytes = check.positive(options.maxBytes, 'maxBytes', DEFAULT_MAX_BYTES, true);
  }

  /** Number of records held. */
  get size(): number {
    return this.bySeq.size;
  }

  /**
   * Estimated bytes of the records held (strings by their length plus per-string, per-object and
   * per-property overheads; shared sections counted with each record), at most `maxBytes`.
   */
  get bytes(): number {
    return this.total;
  }

  /**
   * Stores a record; when the store is full (records or bytes) the oldest records are dropped. A
   * saved id replaces the earlier record.
   *
   * @throws RangeError when the record alone is larger than `maxBytes` (it is not kept).
   */
  save(record: TransactionRecord): void {
    const bytes = estimateSize(record);
    if (bytes > this.maxBytes) {
      throw new RangeError(`MemoryTransactionStore: a record of about ${bytes} bytes exceeds the store's budget of ${this.maxBytes} bytes`);
    }
    const id = record.id;
    const previous = this.bySeq.get(id);
    // Same id saved again (a custom middleware re-saving): keep the newest record only.
    if (previous !== undefined) this.drop(this.position(previous));
    const seq = ++this.seq;
    this.seqs.push(seq);
    this.records.push(record);
    this.sizes.push(bytes);
    this.total += bytes;
    this.bySeq.set(id, seq);
    while (this.bySeq.size > this.maxRecords || this.total > this.maxBytes) {
      this.drop(this.head);
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.records = this.records.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  /** The record with that transaction id. */
  get(id: string): TransactionRecord | undefined {
    const seq = this.bySeq.get(id);
    return seq === undefined ? undefined : this.records[this.position(seq)];
  }

  /**
   * Records matching the filters, newest first.
   *
   * @throws TypeError on a cursor that this store did not produce.
   */
  query(query: TransactionQuery = {}): TransactionPage {
    const limit = Math.min(Math.max(1, Math.trunc(query.limit ?? DEFAULT_PAGE_SIZE)), MAX_PAGE_SIZE);
    const before = parseCursor(query.cursor);
    const items: TransactionRecord[] = [];
    let lastSeq = 0;
    let i = before === undefined ? this.seqs.length - 1 : this.position(before, true);
    for (; i >= this.head; i--) {
      const record = this.records[i];
      if (record === undefined || !matches(record, query)) continue;
      if (items.length === limit) return { items, next: String(lastSeq) };
      items.push(record);
      lastSeq = this.seqs[i]!;
    }
    return { items };
  }

  /**
   * Counts of the records held that match the filters over the window, by outcome and time bucket
   * (see {@link TransactionStatsQuery}). Walks every record held.
   *
   * @throws TypeError when the window is not bounded or has more than 1,000 buckets.
   */
  stats(query: TransactionStatsQuery): TransactionStats {
    const window = statsWindow(query);
    const filter = { ...query, from: window.from, to: window.to };
    const stats = new StatsAccumulator(window);
    for (let i = this.head; i < this.records.length; i++) {
      const record = this.records[i];
      if (record !== undefined && matches(record, filter)) stats.add(record);
    }
    return stats.result();
  }

  /** Drops every record. */
  clear(): void {
    this.seqs = [];
    this.records = [];
    this.sizes = [];
    this.total = 0;
    this.head = 0;
    this.bySeq.clear();
  }

  /** Forgets the record at queue index `i` (its slot stays, empty). */
  private drop(i: number): void {
    const record = this.records[i];
    if (record === undefined) return;
    this.records[i] = undefined;
    this.total -= this.sizes[i]!;
    this.sizes[i] = 0;
    this.bySeq.delete(record.id);
  }

  /**
   * Index of save number `seq` in the queue (binary search: save numbers increase along it); with
   * `before`, the index of the last entry saved before `seq` instead.
   */
  private position(seq: number, before = false): number {
    let lo = this.head;
    let hi = this.seqs.length - 1;
    let found = this.head - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.seqs[mid]!;
      if (at === seq && !before) return mid;
      if (at < seq) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}

/** Case-insensitive prefix match of a text filter (an absent value never matches). */
function startsWith(value: string | undefined, prefix: string): boolean {
  return value !== undefined && value.toLowerCase().startsWith(prefix.toLowerCase());
}

/** A claim's value as the claim filter compares it: text for strings, numbers and booleans. */
function claimText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return undefined;
  return JSON.stringify(value);
}

function claimMatches(record: TransactionRecord, name: string, value: string): boolean {
  const info = record.tokenInfo;
  if (info === undefined) return false;
  for (const claims of [info.introspection, info.jwt, info.userInfo]) {
    if (claims === null || typeof claims !== 'object' || !Object.hasOwn(claims, name)) continue;
    const claim = claims[name];
    const values = Array.isArray(claim) ? claim : [claim];
    if (values.some((v) => startsWith(claimText(v), value))) return true;
  }
  return false;
}

function matches(record: TransactionRecord, filter: TransactionFilter): boolean {
  if (filter.from !== undefined && record.startedAt < filter.from) return false;
  if (filter.to !== undefined && record.startedAt > filter.to) return false;
  if (filter.outcome !== undefined && record.outcome.code !== filter.outcome) return false;
  if (filter.outcomes !== undefined && !filter.outcomes.includes(record.outcome.code)) return false;
  if (filter.status !== undefined && record.status !== filter.status) return false;
  if (filter.statusClass !== undefined && (record.status === null || Math.floor(record.status / 100) !== filter.statusClass)) return false;
  if (filter.minDurationMs !== undefined && !(record.durationMs >= filter.minDurationMs)) return false;
  if (filter.api !== undefined && !startsWith(record.api === undefined ? undefined : apiKey(record.api), filter.api)) return false;
  if (filter.subject !== undefined && !startsWith(record.sender.subject, filter.subject)) return false;
  if (filter.clientId !== undefined && !startsWith(record.sender.clientId, filter.clientId)) return false;
  if (filter.nodeId !== undefined && !startsWith(record.nodeId, filter.nodeId)) return false;
  if (filter.operation !== undefined && !startsWith(record.operation, filter.operation)) return false;
  if (filter.method !== undefined && record.method !== filter.method) return false;
  if (filter.gatewayStatus !== undefined && !startsWith(record.gatewayStatus, filter.gatewayStatus)) return false;
  if (filter.username !== undefined && !startsWith(record.sender.username, filter.username)) return false;
  if (filter.issuer !== undefined && !startsWith(record.sender.issuer, filter.issuer)) return false;
  if (filter.clientAddress !== undefined && !startsWith(record.clientAddress, filter.clientAddress)) return false;
  if (filter.messageId !== undefined && record.messageId !== filter.messageId) return false;
  if (filter.claim !== undefined && !claimMatches(record, filter.claim.name, filter.claim.value)) return false;
  if (filter.trafficPolicy !== undefined && !trafficPolicyMatches(record, filter.trafficPolicy)) return false;
  return true;
}

/** Whether a traffic policy named with that prefix covered the request. */
function trafficPolicyMatches(record: TransactionRecord, prefix: string): boolean {
  return record.traffic?.policies.some((p) => startsWith(p.policy, prefix)) ?? false;
}
