/**
 * `PostgresTransactionStore`: transaction records kept in a PostgreSQL table, shared by every
 * gateway instance, surviving restarts and database outages.
 *
 * @module
 */
import { dirname, join } from 'node:path';
import { logger, type Logger } from '../../log.js';
import { optionChecks, optionKeys } from '../../options.js';
import { statsWindow } from '../stats.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type TransactionPage,
  type TransactionQuery,
  type TransactionRecord,
  type TransactionStats,
  type TransactionStatsQuery,
  type TransactionStore,
  RECORD_JOURNAL,
  type JournalEntry,
  type StoreAvailabilityListener,
  type StoreDependency,
} from '../types.js';
import { postgresConnection } from '../../postgres/connection.js';
import { describe, isSchemaMissing, withTimeout } from '../../postgres/failure.js';
import { createOwnPool, type PgPoolLike } from '../../postgres/pool.js';
import { bucketSql, insertSql, pageSql, statsOf, summarySql, topOfRows, topSql } from './queries.js';
import { purgeOld } from './retention.js';
import { recordsParameter } from './rows.js';
import { tableNames, type TableNames } from '../../postgres/schema.js';
import { migrate } from './schema.js';
import { claimOrphans, claimOrphansIn, claimSpillPath, journalSegmentPaths, releaseSpillPath, SpillFile } from './spill.js';
import { RecordJournal, type JournalCounters, type JournalUnavailableMode } from './journal.js';
import { journalDirectory } from './trust.js';
import { RecordWriter, type PostgresStoreCounters } from './writer.js';

const log: Logger = logger('record:postgres');

/** Options of {@link PostgresTransactionStore}. Give `connectionString` or `pool`. */
export interface PostgresTransactionStoreOptions {
  /** `postgres://user:password@host:5432/database`: the store makes (and closes) its own pool. Needs the `pg` package. */
  connectionString?: string;
  /**
   * A pool of your own (`new pg.Pool(...)`), used as it is and left open by `close()`. Give it a
   * `query_timeout` and a `connectionTimeoutMillis`: the store also gives up waiting after
   * `queryTimeoutMs`, but a statement that hangs keeps its connection until the pool times it out.
   */
  pool?: PgPoolLike;
  /** Schema of the table (created when missing). Default `public`. */
  schema?: string;
  /** Table name (at most 40 characters: letters, digits, `_`). Default `gateway_transactions`. */
  table?: string;
  /** Most records of one insert; a full batch is written at once. Default 200. */
  batchSize?: number;
  /** Longest wait (ms) between the first record queued and its batch being written. Default 200. */
  flushDelayMs?: number;
  /**
   * Most records queued in memory waiting to be written. A full queue moves to the spill file, and
   * while that append is under way up to as many again are held (at most `2 × maxQueue` in memory);
   * past that, or when the spill file cannot be written, further records are dropped (counted).
   * Default 10,000.
   */
  maxQueue?: number;
  /**
   * Local file (JSON lines, appended and synced per batch) holding the records while the database
   * is unusable; replayed in order once it answers, then removed. One file per store: give each
   * process its own. Default: a file in the user's own directory of record files (the journal's
   * default, `express-access-gateway-journal-<uid>` in the system's temporary directory, mode
   * 0700) named after the host, the table and the process; a new process replays the default files
   * of processes gone.
   */
  spillFile?: string;
  /**
   * The record journal: the record of every answer the gateway ends (`createGateway`'s answers,
   * relayed or refused) is appended to a local file before the answer's last byte leaves, and
   * removed from it once in the database (or the spill file); the next start replays what it still
   * holds, each record once (its transaction id is the key). A crash of the process then loses no
   * record of an answered exchange. `true`, or the journal's settings: `directory` (default:
   * `express-access-gateway-journal-<uid>` in the system's temporary directory; the spill files'
   * replay takes over the journals of processes gone found there), `fsync` (sync each write to the
   * disk, for a power loss too; default `false`), `segmentBytes` (size of a journal file before the
   * next, default 4 MiB). Default `false`. The directory must be the process's own, writable by
   * nobody else (made with mode 0700 when missing; anything else throws), segments are new files
   * of mode 0600 (never an existing file, nor a link's target), and only files of the process's
   * user that grant nothing to group or others are replayed (others are left, named in a warning).
   */
  journal?: boolean | RecordJournalOptions;
  /** Largest size of the spill file; records beyond it are dropped (counted). Default 256 MiB. */
  maxSpillBytes?: number;
  /** Days records are kept (older ones deleted hourly); `0` keeps them forever. Default 30. */
  retentionDays?: number;
  /** Id of this gateway instance, given to records that have none ({@link TransactionRecord.nodeId}). */
  nodeId?: string;
  /**
   * Longest wait (ms) for a statement or a connection: past it a write counts the database as
   * unavailable (its records go to the spill file) and a read fails. Default 10,000.
   */
  queryTimeoutMs?: number;
  /** Longest wait (ms) between two checks of an unavailable database (the first comes after 100 ms, then doubling). Default 5,000. */
  retryMaxDelayMs?: number;
}

/** Settings of the record journal ({@link PostgresTransactionStoreOptions.journal}). */
export interface RecordJournalOptions {
  /**
   * Directory of the journal's files: the process's user's, writable by it alone (made with mode
   * 0700 when missing). Default: `express-access-gateway-journal-<uid>` in the system's temporary
   * directory.
   */
  directory?: string;
  /** Sync every write to the disk (a power loss then loses no record written). Default `false`. */
  fsync?: boolean;
  /** Size of a journal file past which the next records go to a new one. Default 4 MiB. */
  segmentBytes?: number;
  /**
   * While the journal cannot be written (a full or failing disk): `answer` (default: answers go
   * out, their records not journaled, said at `error`) or `refuse` (new requests get 503 with
   * `Retry-After`, and answers ending meanwhile are cut: nothing is answered whose record a crash
   * could lose). See docs/deployment.md, "Dependencies: what the operator sees".
   */
  onUnavailable?: JournalUnavailableMode;
}

/** Counters of the record journal ({@link PostgresTransactionStore.journalCounters}). */
export type { JournalCounters } from './journal.js';

/** Counters of a {@link PostgresTransactionStore}'s write path. */
export type { PostgresStoreCounters, PostgresStoreDropCounts } from './writer.js';

const MiB = 1024 * 1024;
/** Tells the probe files of this process's journals apart. */
let probeCounter = 0;
/** First wait before checking an unavailable database again. */
const RETRY_DELAY_MS = 100;
/** Retention runs this often (and once when the table is ready). */
const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

function parseCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (!/^\d{1,18}$/.test(cursor)) throw new TypeError('Invalid cursor');
  return cursor;
}

const POSTGRES_STORE_KEYS = optionKeys<PostgresTransactionStoreOptions>({
  connectionString: true,
  pool: true,
  schema: true,
  table: true,
  batchSize: true,
  flushDelayMs: true,
  maxQueue: true,
  spillFile: true,
  journal: true,
  maxSpillBytes: true,
  retentionDays: true,
  nodeId: true,
  queryTimeoutMs: true,
  retryMaxDelayMs: true,
});

/**
 * A {@link TransactionStore} in a PostgreSQL table, for gateways that keep records across restarts
 * or share them between instances. It creates and migrates its table itself.
 *
 * Saving never waits for the database and never fails because of it: records are queued in memory
 * and written in batches (`batchSize`, or `flushDelayMs` after the first). While the database is
 * unreachable or hangs (`queryTimeoutMs`), records go to a local spill file; the database is
 * checked again with a growing delay (up to `retryMaxDelayMs`), and once it answers the spill file
 * is replayed in order, then removed. A replay never duplicates a record (ids are unique; a record
 * saved again with a known id is ignored). Records are dropped (and counted in `counters.dropped`)
 * only past `maxSpillBytes`, past `maxQueue` while the spill file cannot be written, or when the
 * database refuses them. With `journal`, the record of each answer the gateway ends is also written
 * to a local journal before the answer's last byte leaves, so that a crash of the process loses none
 * (see the option). `DEBUG=express-access-gateway:record:postgres` logs what happens.
 *
 * `query` pages newest first by insertion order; `get` also finds records still queued. Records
 * older than `retentionDays` are deleted every hour by one instance at a time.
 *
 * @example
 * ```ts
 * import { PostgresTransactionStore, recordTransaction } from 'express-access-gateway';
 *
 * const store = await PostgresTransactionStore.create({ connectionString: process.env.DATABASE_URL, nodeId: 'gw-1' });
 * app.use(recordTransaction({ store }));
 * // on shutdown
 * await store.close();
 * ```
 */
export class PostgresTransactionStore implements TransactionStore {
  /** Schema of the table. */
  readonly schema: string;
  /** Table name. */
  readonly table: string;
  /** Days records are kept (0: forever). */
  readonly retentionDays: number;
  /** Id given to records that have none. */
  readonly nodeId: string | undefined;
  /** Path of the spill file. */
  readonly spillFile: string;
  private readonly names: TableNames;
  private readonly hostPool: PgPoolLike | undefined;
  private readonly connectionString: string | undefined;
  /** The pool made from `connectionString`, once asked for. */
  private ownPool: Promise<PgPoolLike> | undefined;
  private readonly writer: RecordWriter;
  private readonly listeners = new Set<StoreAvailabilityListener>();
  private readonly timeoutMs: number;
  private migrated = false;
  private purgedAtStart = false;
  private migrating: Promise<void> | undefined;
  private retentionTimer: NodeJS.Timeout | undefined;
  private purging: Promise<number> | undefined;
  private closing: Promise<void> | undefined;
  private readonly journal: RecordJournal | undefined;
  /** Where the recorder writes an answer's record down before the answer ends (with `journal`).  @internal */
  readonly [RECORD_JOURNAL]: JournalEntry | undefined;

  /**
   * Makes the store and starts it; records can be saved at once. `await store.ready()` (or use
   * {@link PostgresTransactionStore.create}) to know the table is usable.
   *
   * @throws InvalidOptionError (a `TypeError`, code `ERR_INVALID_OPTION`) on a malformed option.
   */
  constructor(options: PostgresTransactionStoreOptions) {
    const check = optionChecks('PostgresTransactionStore');
    check.object(options, '');
    check.known(options, '', POSTGRES_STORE_KEYS);
    const { connectionString, pool, schema, table } = postgresConnection(check, options, 'gateway_transactions');
    this.schema = schema;
    this.table = table;
    const batchSize = check.positive(options.batchSize, 'batchSize', 200, true);
    const flushDelayMs = check.nonNegative(options.flushDelayMs, 'flushDelayMs', 200);
    const maxQueue = check.positive(options.maxQueue, 'maxQueue', 10_000, true);
    if (maxQueue < batchSize) check.fail('maxQueue', 'must be at least batchSize');
    const explicitSpill = options.spillFile === undefined ? undefined : check.string(options.spillFile, 'spillFile');
    const maxSpillBytes = check.positive(options.maxSpillBytes, 'maxSpillBytes', 256 * MiB, true);
    this.retentionDays = check.nonNegative(options.retentionDays, 'retentionDays', 30, true);
    this.nodeId = options.nodeId === undefined ? undefined : check.string(options.nodeId, 'nodeId');
    this.timeoutMs = check.positive(options.queryTimeoutMs, 'queryTimeoutMs', 10_000, true);
    const retryMaxDelayMs = check.positive(options.retryMaxDelayMs, 'retryMaxDelayMs', 5_000, true);
    // Before the spill path is claimed: a journal refused leaves nothing claimed.
    const journal = journalSettings(check, options.journal);
    const spillPath =
      claimSpillPath(explicitSpill, this.schema, this.table) ??
      check.fail('spillFile', 'is in use by another PostgresTransactionStore of this process');
    this.spillFile = spillPath;
    this.names = tableNames(this.schema, this.table);

    this.hostPool = pool;
    this.connectionString = connectionString;
    if (journal !== undefined) {
      this.journal = new RecordJournal(
        {
          segmentPath: journalSegmentPaths(journal.directory, this.schema, this.table),
          fsync: journal.fsync,
          segmentBytes: journal.segmentBytes,
          onUnavailable: journal.onUnavailable,
          probePath: join(journal.directory, `express-access-gateway-probe-${process.pid}-${probeCounter++}.tmp`),
        },
        log,
      );
      const entry: JournalEntry = (build, send, cut) =>
        this.journal!.append(
          () => {
            const source = build();
            return { source, record: this.prepare(source) };
          },
          send,
          cut,
        );
      this[RECORD_JOURNAL] = entry;
      const action =
        journal.onUnavailable === 'refuse'
          ? 'new requests are refused (503) and answers ending meanwhile are cut, until the journal can be written (onUnavailable: refuse)'
          : 'answers go out without their journal line: a crash now loses their records (onUnavailable: answer)';
      this.journal.onAvailability = (available, cause) => this.tell('record_journal', available, cause, action);
    }

    const insert = insertSql(this.names);
    this.writer = new RecordWriter(
      {
        insert: async (records) => {
          const batch = recordsParameter(records, this.journal?.lineOf);
          await withTimeout(this.ensureSchema(), this.timeoutMs, 'creating the table');
          const db = await this.poolPromise();
          try {
            const { rowCount } = await withTimeout(db.query(insert, [batch]), this.timeoutMs, 'insert');
            return rowCount ?? 0;
          } catch (error) {
            if (isSchemaMissing(error)) this.migrated = false;
            throw error;
          }
        },
        probe: async () => {
          await withTimeout(this.ensureSchema(), this.timeoutMs, 'creating the table');
          const db = await this.poolPromise();
          await withTimeout(db.query('SELECT 1'), this.timeoutMs, 'check');
        },
      },
      new SpillFile(spillPath, maxSpillBytes),
      { batchSize, flushDelayMs, maxQueue, retryDelayMs: Math.min(RETRY_DELAY_MS, retryMaxDelayMs), retryMaxDelayMs },
      log,
      async () => {
        const paths = await claimOrphans(spillPath, this.schema, this.table);
        // The journals of processes gone: in their directory, unless it is the spill file's (searched).
        if (journal !== undefined && journal.directory !== dirname(spillPath))
          paths.push(...(await claimOrphansIn(journal.directory, this.schema, this.table)));
        return paths.map((path) => new SpillFile(path, Number.MAX_SAFE_INTEGER));
      },
      this.journal === undefined ? undefined : (records) => this.journal!.confirm(records),
    );
    const spilling = `records go to the spill file ${spillPath} (at most ${maxSpillBytes} bytes), replayed once the database answers`;
    this.writer.onAvailability = (available, cause) => this.tell('postgresql', available, cause, spilling);
    if (this.retentionDays > 0) {
      this.retentionTimer = setInterval(() => void this.purgeQuietly(), RETENTION_INTERVAL_MS);
      this.retentionTimer.unref();
    }
  }

  /**
   * A store whose table is ready.
   *
   * @throws InvalidOptionError on a malformed option; the database's error when the table cannot
   * be created (the store is closed then).
   */
  static async create(options: PostgresTransactionStoreOptions): Promise<PostgresTransactionStore> {
    const store = new PostgresTransactionStore(options);
    try {
      await store.ready();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /**
   * Resolves once the table exists at the current schema version (creating or migrating it, once
   * whatever the number of processes starting together). Rejects when the database cannot be used
   * now; the store keeps working meanwhile (records go to the spill file) and checks again.
   */
  ready(): Promise<void> {
    return this.ensureSchema();
  }

  /** Calls `listener` at each change of the database's or the journal's availability (see `TransactionStore`). */
  onAvailability(listener: StoreAvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Why new exchanges are refused now: the journal cannot be written under `onUnavailable: "refuse"`. */
  get refusing(): string | undefined {
    const cause = this.journal?.refusing;
    return cause === undefined ? undefined : `the record journal cannot be written (${cause})`;
  }

  private tell(dependency: StoreDependency, available: boolean, cause?: string, action?: string): void {
    for (const listener of this.listeners) {
      try {
        listener(dependency, available, cause, action);
      } catch (error) {
        log('an availability listener failed: %s', describe(error));
      }
    }
  }

  /** Counters of the write path (saved, queued, spilled, replayed, dropped by reason). */
  get counters(): Readonly<PostgresStoreCounters> {
    return this.writer.counters;
  }

  /**
   * Queues a record; it reaches the database within `flushDelayMs` (or the spill file while the
   * database is unusable). Never waits, never fails because of the database.
   *
   * @throws TypeError when `record` has no string `id`; Error once the store is closed.
   */
  save(record: TransactionRecord): void {
    if (this.closing !== undefined) throw new Error('PostgresTransactionStore: closed');
    if (record === null || typeof record !== 'object' || typeof record.id !== 'string')
      throw new TypeError('PostgresTransactionStore: a record needs a string id');
    // The record written to the journal, when it is the one the recorder saves: stored as written (its line reused).
    const written = this.journal?.writtenFor(record.id);
    this.writer.save(written?.source === record ? written.record : this.prepare(record));
  }

  /** Counters of the record journal (records, bytes and writes; files; records not journaled), when the store keeps one. */
  get journalCounters(): Readonly<JournalCounters> | undefined {
    return this.journal === undefined ? undefined : { ...this.journal.counters };
  }

  /** The record as stored: with this store's `nodeId` when it has none. */
  private prepare(record: TransactionRecord): TransactionRecord {
    return this.nodeId !== undefined && record.nodeId === undefined ? { ...record, nodeId: this.nodeId } : record;
  }

  /** The record with that transaction id (also one still queued in memory; not one in the spill file). */
  async get(id: string): Promise<TransactionRecord | undefined> {
    const queued = this.writer.find(id);
    if (queued !== undefined) return queued;
    await this.ensureSchema();
    const { rows } = await (await this.poolPromise()).query(`SELECT record FROM ${this.names.table} WHERE id = $1`, [id]);
    return rows[0]?.['record'] as TransactionRecord | undefined;
  }

  /**
   * Records matching the filters, newest first (by insertion), one page at a time. Records still
   * queued or in the spill file are not listed yet.
   *
   * @throws TypeError on a cursor that this store did not produce, or a filter of the wrong type.
   */
  async query(query: TransactionQuery = {}): Promise<TransactionPage> {
    const limit = Math.min(Math.max(1, Math.trunc(query.limit ?? DEFAULT_PAGE_SIZE)), MAX_PAGE_SIZE);
    const before = parseCursor(query.cursor);
    const statement = pageSql(this.names, query, before, limit);
    await this.ensureSchema();
    const { rows } = await (await this.poolPromise()).query(statement.sql, statement.values);
    const items = rows.slice(0, limit).map((row) => row['record'] as TransactionRecord);
    if (rows.length <= limit) return { items };
    return { items, next: String(rows[limit - 1]!['cursor']) };
  }

  /**
   * Counts of the stored records matching the filters over the window, by outcome and time bucket,
   * with the most frequent APIs, operations, clients, statuses and `gateway_status`, computed by
   * the database.
   *
   * @throws TypeError when the window is not bounded or has more than 1,000 buckets.
   */
  async stats(query: TransactionStatsQuery): Promise<TransactionStats> {
    const window = statsWindow(query);
    const buckets = bucketSql(this.names, query, window);
    const summary = summarySql(this.names, query, window);
    await this.ensureSchema();
    const db = await this.poolPromise();
    const top = topSql(this.names, query, window);
    const [bucketRows, summaryRows, topRows] = await Promise.all([
      db.query(buckets.sql, buckets.values),
      db.query(summary.sql, summary.values),
      db.query(top.sql, top.values),
    ]);
    return { ...statsOf(window, bucketRows.rows, summaryRows.rows[0]), top: topOfRows(topRows.rows) };
  }

  /**
   * Deletes the records older than `retentionDays` now (as the hourly job does) and returns how
   * many; 0 when retention is off or another instance is deleting them right now.
   */
  purge(): Promise<number> {
    if (this.retentionDays === 0) return Promise.resolve(0);
    // One purge at a time in this store: a call waits for the one under way, then runs.
    const previous = this.purging;
    const run = (async () => {
      await previous?.catch(() => undefined);
      await this.ensureSchema();
      const deleted = await purgeOld(await this.poolPromise(), this.names, this.retentionDays);
      if (deleted === undefined) log('retention: another instance is purging %s', this.names.table);
      else if (deleted > 0) log('retention: %d records older than %d days deleted', deleted, this.retentionDays);
      return deleted ?? 0;
    })();
    this.purging = run;
    return run;
  }

  /**
   * Resolves once every record saved so far is in the database or the spill file (or, when neither
   * can be written now, waits in memory for the next attempt).
   */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /**
   * Flushes, stops the timers and closes the pool the store made (a pool given in `pool` stays
   * open). Records in the spill file stay there for the next start. Further saves throw.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.retentionTimer);
      await this.writer.close();
      this.journal?.close();
      releaseSpillPath(this.spillFile);
      await this.purging?.catch(() => undefined);
      if (this.ownPool !== undefined) {
        await this.migrating?.catch(() => undefined);
        const pool = await this.ownPool.catch(() => undefined);
        await pool?.end();
      }
    })();
    return this.closing;
  }

  /** Creates or migrates the table once; a failed attempt is tried again by the next call. */
  private ensureSchema(): Promise<void> {
    if (this.migrated) return Promise.resolve();
    this.migrating ??= (async () => {
      try {
        const applied = await migrate(await this.poolPromise(), this.names);
        if (applied.length > 0) log('table %s migrated to version %s', this.names.table, applied.join(', '));
        this.migrated = true;
        if (!this.purgedAtStart && this.retentionDays > 0 && this.closing === undefined) {
          this.purgedAtStart = true;
          void this.purgeQuietly();
        }
      } finally {
        this.migrating = undefined;
      }
    })();
    return this.migrating;
  }

  /** The pool: the host's, or the one made from `connectionString` (loading `pg` then). */
  private poolPromise(): Promise<PgPoolLike> {
    if (this.hostPool !== undefined) return Promise.resolve(this.hostPool);
    this.ownPool ??= createOwnPool({
      owner: 'PostgresTransactionStore',
      // One writer, reads, the retention job.
      max: 4,
      connectionString: this.connectionString!,
      timeoutMs: this.timeoutMs,
      onError: (error) => log('idle connection failed: %s', describe(error)),
    });
    return this.ownPool;
  }

  private async purgeQuietly(): Promise<void> {
    try {
      await this.purge();
    } catch (error) {
      log('retention failed: %s', describe(error));
    }
  }
}

/**
 * The journal's settings, checked, its directory made and checked (the process's own, writable by
 * nobody else: docs/security.md); `undefined` without a journal.
 */
function journalSettings(
  check: ReturnType<typeof optionChecks>,
  value: boolean | RecordJournalOptions | undefined,
): { directory: string; fsync: boolean; segmentBytes: number; onUnavailable: JournalUnavailableMode } | undefined {
  if (value === undefined || value === false) return undefined;
  const given = value === true ? {} : value;
  check.object(given, 'journal');
  check.known(given, 'journal', JOURNAL_KEYS);
  const directory = given.directory === undefined ? undefined : check.string(given.directory, 'journal.directory');
  const fsync = check.boolean(given.fsync, 'journal.fsync', false);
  const segmentBytes = check.positive(given.segmentBytes, 'journal.segmentBytes', 4 * MiB, true);
  const onUnavailable = check.oneOf(given.onUnavailable, 'journal.onUnavailable', JOURNAL_UNAVAILABLE_MODES, 'answer');
  try {
    return { directory: journalDirectory(directory), fsync, segmentBytes, onUnavailable };
  } catch (error) {
    return check.fail(directory === undefined ? 'journal' : 'journal.directory', `directory ${(error as Error).message}`);
  }
}

const JOURNAL_KEYS = optionKeys<RecordJournalOptions>({ directory: true, fsync: true, segmentBytes: true, onUnavailable: true });
const JOURNAL_UNAVAILABLE_MODES = ['answer', 'refuse'] as const;
