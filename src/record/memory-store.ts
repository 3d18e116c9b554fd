/**
 * The default {@link TransactionStore}: bounded, in memory, indexed for the console's filters.
 *
 * @module
 */
import type { OutcomeCode } from '../errors.js';
import {
  apiKey,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type TransactionFilter,
  type TransactionPage,
  type TransactionQuery,
  type TransactionRecord,
  type TransactionStore,
} from './types.js';

/** Options of {@link MemoryTransactionStore}. */
export interface MemoryTransactionStoreOptions {
  /** Most records kept; when full, the oldest is dropped. Default 10,000. */
  maxRecords?: number;
}

/** One stored record with its save sequence number (the paging order). */
interface Entry {
  readonly seq: number;
  readonly record: TransactionRecord;
  /** The index keys this entry was filed under, to unfile it on eviction. */
  readonly keys: readonly string[];
  /** Set when the record was dropped or replaced; lists skip it and shed it from their front. */
  dead: boolean;
}

/**
 * An append-only list of entries in save order. Dead entries are shed from the front by moving a
 * head offset (compacting now and then) so that eviction stays O(1) amortized; a dead entry in
 * the middle (a replaced record, which is rare) is skipped until it reaches the front.
 */
class EntryList {
  private items: Entry[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(entry: Entry): void {
    this.items.push(entry);
  }

  /** The oldest live entry. */
  front(): Entry | undefined {
    this.shed();
    return this.items[this.head];
  }

  /** Removes dead entries from the front. */
  shed(): void {
    while (this.head < this.items.length && this.items[this.head]!.dead) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** Entries older than `beforeSeq` (or all), newest first. */
  *newestFirst(beforeSeq?: number): Generator<Entry> {
    let i = this.items.length - 1;
    if (beforeSeq !== undefined) {
      // Binary search for the last entry with seq < beforeSeq (seq grows along the list).
      let lo = this.head;
      let hi = this.items.length - 1;
      i = this.head - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (this.items[mid]!.seq < beforeSeq) {
          i = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
    }
    for (; i >= this.head; i--) yield this.items[i]!;
  }
}

/** Index keys of one record: one per filterable field, prefixed by the field name. */
function indexKeys(record: TransactionRecord): string[] {
  const keys = [`outcome:${record.outcome.code}`, `status:${record.status ?? ''}`];
  if (record.api) keys.push(`api:${apiKey(record.api)}`);
  if (record.sender.subject !== undefined) keys.push(`subject:${record.sender.subject}`);
  if (record.sender.clientId !== undefined) keys.push(`clientId:${record.sender.clientId}`);
  return keys;
}

/** Index keys a filter asks for (its equality fields). */
function filterKeys(filter: TransactionFilter): string[] {
  const keys: string[] = [];
  if (filter.outcome !== undefined) keys.push(`outcome:${filter.outcome satisfies OutcomeCode}`);
  if (filter.status !== undefined) keys.push(`status:${filter.status}`);
  if (filter.api !== undefined) keys.push(`api:${filter.api}`);
  if (filter.subject !== undefined) keys.push(`subject:${filter.subject}`);
  if (filter.clientId !== undefined) keys.push(`clientId:${filter.clientId}`);
  return keys;
}

function parseCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (!/^\d{1,15}$/.test(cursor)) throw new TypeError('Invalid cursor');
  return Number(cursor);
}

/**
 * The default transaction store: keeps the latest `maxRecords` records in memory (the oldest is
 * dropped when full) with an index per filter field, so that a filtered query walks only the
 * records of its most selective field. Records are lost when the process ends; implement
 * {@link TransactionStore} to keep them elsewhere.
 *
 * @example
 * ```ts
 * import { MemoryTransactionStore, recordTransaction } from 'express-access-gateway';
 * const store = new MemoryTransactionStore({ maxRecords: 50_000 });
 * const record = recordTransaction({ store });
 * ```
 */
export class MemoryTransactionStore implements TransactionStore {
  /** Most records kept. */
  readonly maxRecords: number;
  private all = new EntryList();
  private readonly byId = new Map<string, Entry>();
  private readonly indexes = new Map<string, EntryList>();
  private seq = 0;

  constructor(options: MemoryTransactionStoreOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError('MemoryTransactionStore: options must be an object');
    }
    const max = options.maxRecords ?? 10_000;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new TypeError('MemoryTransactionStore: options.maxRecords must be a positive integer');
    }
    this.maxRecords = max;
  }

  /** Number of records held. */
  get size(): number {
    return this.byId.size;
  }

  /** Stores a record; when the store is full the oldest record is dropped. A saved id replaces the earlier record. */
  save(record: TransactionRecord): void {
    const previous = this.byId.get(record.id);
    // Same id saved again (a custom middleware re-saving): keep the newest record only.
    if (previous !== undefined) this.remove(previous);
    const entry: Entry = { seq: ++this.seq, record, keys: indexKeys(record), dead: false };
    this.byId.set(record.id, entry);
    this.all.push(entry);
    for (const key of entry.keys) {
      let list = this.indexes.get(key);
      if (list === undefined) {
        list = new EntryList();
        this.indexes.set(key, list);
      }
      list.push(entry);
    }
    while (this.byId.size > this.maxRecords) {
      const oldest = this.all.front();
      if (oldest === undefined) break;
      this.remove(oldest);
    }
  }

  /** The record with that transaction id. */
  get(id: string): TransactionRecord | undefined {
    return this.byId.get(id)?.record;
  }

  /**
   * Records matching the filters, newest first.
   *
   * @throws TypeError on a cursor that this store did not produce.
   */
  query(query: TransactionQuery = {}): TransactionPage {
    const limit = Math.min(Math.max(1, Math.trunc(query.limit ?? DEFAULT_PAGE_SIZE)), MAX_PAGE_SIZE);
    const before = parseCursor(query.cursor);
    // Walk the smallest index among the filter's equality fields; check the rest on each entry.
    let source: EntryList | undefined = this.all;
    for (const key of filterKeys(query)) {
      const list = this.indexes.get(key);
      if (list === undefined) return { items: [] };
      if (list.size < source.size) source = list;
    }
    const items: TransactionRecord[] = [];
    let last: Entry | undefined;
    for (const entry of source.newestFirst(before)) {
      if (entry.dead) continue;
      if (!matches(entry.record, query)) continue;
      if (items.length === limit) return { items, next: String(last!.seq) };
      items.push(entry.record);
      last = entry;
    }
    return { items };
  }

  /** Drops every record. */
  clear(): void {
    for (const entry of this.byId.values()) entry.dead = true;
    this.byId.clear();
    this.indexes.clear();
    this.all = new EntryList();
  }

  private remove(entry: Entry): void {
    entry.dead = true;
    this.byId.delete(entry.record.id);
    this.all.shed();
    for (const key of entry.keys) {
      const list = this.indexes.get(key);
      if (list === undefined) continue;
      list.shed();
      if (list.front() === undefined) this.indexes.delete(key);
    }
  }
}

function matches(record: TransactionRecord, filter: TransactionFilter): boolean {
  if (filter.from !== undefined && record.startedAt < filter.from) return false;
  if (filter.to !== undefined && record.startedAt > filter.to) return false;
  if (filter.outcome !== undefined && record.outcome.code !== filter.outcome) return false;
  if (filter.status !== undefined && record.status !== filter.status) return false;
  if (filter.api !== undefined && (record.api === undefined || apiKey(record.api) !== filter.api)) return false;
  if (filter.subject !== undefined && record.sender.subject !== filter.subject) return false;
  if (filter.clientId !== undefined && record.sender.clientId !== filter.clientId) return false;
  return true;
}
