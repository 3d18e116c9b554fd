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
  /** The index lists this entry was filed in, to unfile it on eviction. */
  readonly lists: readonly EntryList[];
  /** Set when the record was dropped or replaced; lists skip it and shed it from their front. */
  dead: boolean;
}

/** The filterable fields that have an index: field value (as text) to the entries with it. */
type IndexField = 'outcome' | 'status' | 'api' | 'subject' | 'clientId';
type Index = Map<string, EntryList>;

/**
 * An append-only list of entries in save order. Dead entries are shed from the front by moving a
 * head offset (compacting now and then) so that eviction stays O(1) amortized; a dead entry in
 * the middle (a replaced record, which is rare) is skipped until it reaches the front.
 */
class EntryList {
  private items: Entry[] = [];
  private head = 0;

  /** For an index list: the index it is in and its key there (to drop it once empty). */
  constructor(
    readonly index?: Index,
    readonly key?: string,
  ) {}

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

/**
 * The index values of a record, one per filterable field it has, as text (the index keys; no
 * per-save string building but the API key and a status number's text, which V8 caches).
 */
function indexValues(record: TransactionRecord, each: (field: IndexField, value: string) => void): void {
  each('outcome', record.outcome.code);
  each('status', String(record.status ?? ''));
  if (record.api) each('api', apiKey(record.api));
  if (record.sender.subject !== undefined) each('subject', String(record.sender.subject));
  if (record.sender.clientId !== undefined) each('clientId', String(record.sender.clientId));
}

/** The index values a filter asks for (its equality fields). */
function filterValues(filter: TransactionFilter): Array<[IndexField, string]> {
  const values: Array<[IndexField, string]> = [];
  if (filter.outcome !== undefined) values.push(['outcome', String(filter.outcome satisfies OutcomeCode)]);
  if (filter.status !== undefined) values.push(['status', String(filter.status)]);
  if (filter.api !== undefined) values.push(['api', String(filter.api)]);
  if (filter.subject !== undefined) values.push(['subject', String(filter.subject)]);
  if (filter.clientId !== undefined) values.push(['clientId', String(filter.clientId)]);
  return values;
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
  private indexes = newIndexes();
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
    const lists: EntryList[] = [];
    const entry: Entry = { seq: ++this.seq, record, lists, dead: false };
    indexValues(record, (field, value) => {
      const index = this.indexes[field];
      let list = index.get(value);
      if (list === undefined) {
        list = new EntryList(index, value);
        index.set(value, list);
      }
      list.push(entry);
      lists.push(list);
    });
    this.byId.set(record.id, entry);
    this.all.push(entry);
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
    for (const [field, value] of filterValues(query)) {
      const list = this.indexes[field].get(value);
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
    this.indexes = newIndexes();
    this.all = new EntryList();
  }

  private remove(entry: Entry): void {
    entry.dead = true;
    this.byId.delete(entry.record.id);
    this.all.shed();
    for (const list of entry.lists) {
      if (list.front() !== undefined) continue;
      // Empty now: drop it from its index (unless a newer list already took its key).
      if (list.index!.get(list.key!) === list) list.index!.delete(list.key!);
    }
  }
}

function newIndexes(): Record<IndexField, Index> {
  return { outcome: new Map(), status: new Map(), api: new Map(), subject: new Map(), clientId: new Map() };
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
