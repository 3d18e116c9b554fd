/**
 * The write path of the PostgreSQL store: a bounded queue in memory, written in batches by one
 * writer; while the database is unusable, batches go to the spill file instead, and once it answers
 * again the spill file is replayed, in order, before the queue.
 *
 * Records go to the database in the order they were saved: the spill file holds records older than
 * the queue, so it is replayed first. When the queue overflows while a batch is being inserted, the
 * batch is spilled too, ahead of the queue: whether its insert then succeeds (the replay skips its
 * ids) or fails, nothing is lost and the order holds.
 *
 * @module
 */
import type { Logger } from '../../log.js';
import type { TransactionRecord } from '../types.js';
import { describe, isRecordRefused } from '../../postgres/failure.js';
import { InvalidRecordError } from './rows.js';
import { releaseSpillPath, type SpillFile } from './spill.js';

/** Where batches go. */
export interface WriteSink {
  /** Inserts records in order (ids already stored are skipped); resolves to the rows inserted. Rejects when they are not stored. */
  insert(records: readonly TransactionRecord[]): Promise<number>;
  /** Resolves once the database answers (its table ready), rejects while it does not. */
  probe(): Promise<void>;
}

/** Settings of a {@link RecordWriter}. */
export interface WriterSettings {
  batchSize: number;
  flushDelayMs: number;
  maxQueue: number;
  /** First delay before checking the database again; doubled up to `retryMaxDelayMs`. */
  retryDelayMs: number;
  retryMaxDelayMs: number;
}

/** Why records were dropped, and how many. */
export interface PostgresStoreDropCounts {
  /** The queue was full and the spill file could not be written. */
  queueFull: number;
  /** The spill file was at `maxSpillBytes`. */
  spillFull: number;
  /** The database refused them (a value it cannot take) or they were not records: retrying would fail forever. */
  rejected: number;
  /** Still in memory when the store was closed, with neither the database nor the spill file usable. */
  closed: number;
}

/** Counters of the write path (`PostgresTransactionStore.counters`). */
export interface PostgresStoreCounters {
  /** Records committed to the database (directly or replayed from the spill file). */
  saved: number;
  /** Records in memory now, waiting for the database or the spill file. */
  queued: number;
  /** Records written to the spill file. */
  spilled: number;
  /** Records replayed from the spill file into the database. */
  replayed: number;
  /** Bytes of spill files waiting to be replayed. */
  spillBytes: number;
  /** Whether the database is believed usable (false between a failed write and a successful check). */
  available: boolean;
  /** Records dropped, by reason. */
  dropped: PostgresStoreDropCounts;
}

/** Records taken from the queue together; `from` is the queue ordinal of the first. */
interface Batch {
  from: number;
  records: TransactionRecord[];
}

/** What a batch insert did. */
interface Stored {
  /** Rows inserted (ids already stored are not). */
  inserted: number;
  /** Records the database refused. */
  rejected: number;
}

/** A batch insert that stopped part way: `remaining` records were not stored. */
class BatchFailure {
  constructor(
    readonly error: unknown,
    readonly remaining: TransactionRecord[],
    readonly done: Stored,
  ) {}
}

/** The batch being inserted from the queue, and the append of its copy when the queue overflowed meanwhile. */
interface InFlight {
  batch: Batch;
  spilled?: Promise<boolean>;
}

type Step = () => Promise<void>;

const isRefused = (error: unknown): boolean => error instanceof InvalidRecordError || isRecordRefused(error);

/** The queue, the spill file and the writer between them. */
export class RecordWriter {
  private readonly queue: TransactionRecord[] = [];
  /** Queue ordinal of `queue[0]`; `enqueued` is that of the next record queued. */
  private queueStart = 0;
  private enqueued = 0;
  /** Batches out of the queue and not yet settled (being inserted or spilled, or stuck). */
  private readonly live = new Set<Batch>();
  /** Batches waiting for a retry (their insert or spill failed), oldest first. */
  private stuck: Batch[] = [];
  /** Spill files of processes gone, to replay before this store's own. */
  private orphans: SpillFile[] = [];
  private up = true;
  /** Told at each change of the database's availability (with the failure's cause when it went). */
  onAvailability: ((up: boolean, cause?: string) => void) | undefined;
  private spillFailing = false;
  /** Records on their way to the spill file because the queue overflowed. */
  private overflowing = 0;
  private inFlight: InFlight | undefined;
  private flushDue = false;
  private retryDue = false;
  private retryDelay: number;
  private flushTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private running = false;
  private closing = false;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  private waiters: Array<{ target: number; resolve: () => void }> = [];
  private readonly dropped: PostgresStoreDropCounts = { queueFull: 0, spillFull: 0, rejected: 0, closed: 0 };
  private saved = 0;
  private spilled = 0;
  private replayed = 0;
  private readonly started: Promise<void>;

  constructor(
    private readonly sink: WriteSink,
    private readonly own: SpillFile,
    private readonly settings: WriterSettings,
    private readonly log: Logger,
    /** The spill files to take over, found at start (see `claimOrphans`). */
    findOrphans: () => Promise<SpillFile[]>,
    /** Told of the records out of memory for good: stored, refused, or in the spill file (the journal's trim). */
    private readonly confirmed: (records: readonly TransactionRecord[]) => void = () => undefined,
  ) {
    this.retryDelay = settings.retryDelayMs;
    this.started = (async () => {
      try {
        await own.load();
        if (own.holdsRecords) log('replaying %d bytes left in %s', own.size, own.path);
      } catch (error) {
        log('spill file %s unreadable: %s', own.path, describe(error));
      }
      try {
        for (const orphan of await findOrphans()) {
          await orphan.load();
          log('replaying %d bytes left by another process in %s', orphan.size, orphan.path);
          this.orphans.push(orphan);
        }
      } catch (error) {
        log('looking for spill files left by other processes failed: %s', describe(error));
      }
    })();
    this.kick();
  }

  /** A snapshot of the counters. */
  get counters(): PostgresStoreCounters {
    let queued = this.queue.length;
    for (const batch of this.live) queued += batch.records.length;
    let spillBytes = this.own.size - this.own.offset;
    for (const orphan of this.orphans) spillBytes += orphan.size - orphan.offset;
    return {
      saved: this.saved,
      queued,
      spilled: this.spilled,
      replayed: this.replayed,
      spillBytes,
      available: this.up,
      dropped: { ...this.dropped },
    };
  }

  /** Queues a record (never waits, never throws because of the database). */
  save(record: TransactionRecord): void {
    if (this.queue.length >= this.settings.maxQueue && !this.overflow()) {
      this.dropped.queueFull++;
      this.log('queue full and spill file unusable: record %s dropped', record.id);
      return;
    }
    this.queue.push(record);
    this.enqueued++;
    if (this.queue.length >= this.settings.batchSize || this.flushDue) this.kick();
    else if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.flushDue = true;
        this.kick();
      }, this.settings.flushDelayMs);
    }
  }

  /** A record still in memory. */
  find(id: string): TransactionRecord | undefined {
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i]!.id === id) return this.queue[i];
    for (const batch of this.live) for (const record of batch.records) if (record.id === id) return record;
    return undefined;
  }

  /** Resolves once every record queued so far is in the database or the spill file (or waits in memory for a retry that cannot happen now). */
  flush(): Promise<void> {
    const target = this.enqueued;
    this.flushDue = true;
    this.kick();
    if (this.settled(target, !this.running)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ target, resolve }));
  }

  /** Flushes, then stops: nothing is written afterwards (the spill file stays for the next start). */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flush();
    this.stopped = true;
    clearTimeout(this.retryTimer);
    if (this.running) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    // Overflow appends under way end on their own; wait for them.
    while (this.overflowing > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const left = this.queue.length + this.stuck.reduce((n, b) => n + b.records.length, 0);
    if (left > 0) {
      this.dropped.closed += left;
      this.log('closed with %d records neither in the database nor in the spill file: dropped', left);
    }
    await this.own.close();
    for (const orphan of this.orphans) {
      await orphan.close();
      releaseSpillPath(orphan.path);
    }
  }

  // ---- the writer loop ------------------------------------------------------------------------

  private kick(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    void this.run();
  }

  private async run(): Promise<void> {
    try {
      await this.started;
      for (let step = this.next(); step !== undefined; step = this.next()) await step();
    } catch (error) {
      // Steps handle their failures; this is a defect. Keep the records and try again later.
      this.log('writer failed: %s', describe(error));
      this.scheduleRetry();
    } finally {
      this.running = false;
      this.settle(true);
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** What to do now, or `undefined` when there is nothing to do until a timer or a save. */
  private next(): Step | undefined {
    if (this.stopped) return undefined;
    const { queue, settings } = this;
    const due = this.flushDue || this.closing || queue.length >= settings.batchSize;
    if (!this.up) {
      if (this.retryDue && !this.closing) return () => this.probe();
      if (!this.spillFailing && (this.stuck.length > 0 || (queue.length > 0 && due))) return () => this.spillAll();
      return undefined;
    }
    if (this.orphans.length > 0 || this.own.holdsRecords) {
      // The spill file is older than the queue: replay it first; a queue growing meanwhile (or
      // waiting at close) goes to the spill file's end.
      const waiting = this.stuck.length > 0 || queue.length > 0;
      if (waiting && !this.spillFailing && (this.closing || this.stuck.length > 0 || queue.length >= settings.maxQueue / 2))
        return () => this.spillAll();
      if (this.closing) return undefined;
      return () => this.replay();
    }
    if (this.stuck.length > 0) return () => this.insertBatch(this.takeStuck());
    if (queue.length > 0 && due) return () => this.insertBatch(this.takeQueue(settings.batchSize));
    if (queue.length === 0) this.flushDue = false;
    return undefined;
  }

  private takeQueue(max: number): Batch {
    const records = this.queue.splice(0, max);
    const batch = { from: this.queueStart, records };
    this.queueStart += records.length;
    if (this.queue.length === 0) this.flushDue = false;
    this.live.add(batch);
    return batch;
  }

  private takeStuck(): Batch {
    const first = this.stuck[0]!;
    if (first.records.length <= this.settings.batchSize) return this.stuck.shift()!;
    const batch = { from: first.from, records: first.records.splice(0, this.settings.batchSize) };
    first.from += batch.records.length;
    this.live.add(batch);
    return batch;
  }

  /**
   * Inserts records; a batch the database refuses is retried record by record, and the records it
   * refuses alone are dropped.
   *
   * @throws BatchFailure when the database could not be used: its `remaining` records were not stored.
   */
  private async store(records: TransactionRecord[]): Promise<Stored> {
    try {
      return { inserted: await this.sink.insert(records), rejected: 0 };
    } catch (error) {
      if (!isRefused(error)) throw new BatchFailure(error, records, { inserted: 0, rejected: 0 });
      if (records.length === 1) {
        this.log('record %s refused by the database, dropped: %s', records[0]!.id, describe(error));
        return { inserted: 0, rejected: 1 };
      }
    }
    const done: Stored = { inserted: 0, rejected: 0 };
    for (let i = 0; i < records.length; i++) {
      try {
        const one = await this.store([records[i]!]);
        done.inserted += one.inserted;
        done.rejected += one.rejected;
      } catch (failure) {
        throw new BatchFailure((failure as BatchFailure).error, records.slice(i), done);
      }
    }
    return done;
  }

  /** Counts what a batch insert did. */
  private count(done: Stored, replay: boolean): void {
    this.saved += done.inserted;
    if (replay) this.replayed += done.inserted;
    this.dropped.rejected += done.rejected;
  }

  private async insertBatch(batch: Batch): Promise<void> {
    const flight: InFlight = { batch };
    this.inFlight = flight;
    try {
      this.count(await this.store(batch.records), false);
      this.live.delete(batch);
      this.confirmed(batch.records);
    } catch (caught) {
      const failure = caught as BatchFailure;
      this.count(failure.done, false);
      this.down(failure.error);
      // Copied to the spill file when the queue overflowed: the copy stands for it.
      if (flight.spilled !== undefined && (await flight.spilled)) {
        this.live.delete(batch);
        this.confirmed(batch.records);
      } else {
        this.confirmed(batch.records.slice(0, batch.records.length - failure.remaining.length));
        batch.from += batch.records.length - failure.remaining.length;
        batch.records = failure.remaining;
        this.stuck = [batch, ...this.stuck].sort((a, b) => a.from - b.from);
      }
    } finally {
      this.inFlight = undefined;
    }
    this.settle(false);
  }

  /** Moves the stuck batches, then the whole queue, to the end of the spill file. */
  private async spillAll(): Promise<void> {
    const batches = this.stuck;
    this.stuck = [];
    if (this.queue.length > 0) batches.push(this.takeQueue(this.queue.length));
    for (let i = 0; i < batches.length; i++) {
      if (!(await this.spill(batches[i]!))) {
        this.stuck = batches
          .slice(i)
          .concat(this.stuck)
          .sort((a, b) => a.from - b.from);
        break;
      }
    }
    this.settle(false);
  }

  /**
   * Appends a batch to the spill file (after `ahead`, records of the batch being inserted); false
   * (the batch kept) when the file cannot be written.
   */
  private async spill(batch: Batch, ahead: readonly TransactionRecord[] = []): Promise<boolean> {
    try {
      const { written, overflow } = await this.own.append(ahead.length === 0 ? batch.records : [...ahead, ...batch.records]);
      this.spilled += written;
      if (overflow > 0) {
        this.dropped.spillFull += overflow;
        this.log('spill file %s full (%d bytes): %d records dropped', this.own.path, this.own.size, overflow);
      }
      this.spillFailing = false;
      this.live.delete(batch);
      this.confirmed(batch.records);
      return true;
    } catch (error) {
      if (!this.spillFailing) this.log('spill file %s cannot be written: %s', this.own.path, describe(error));
      this.spillFailing = true;
      return false;
    }
  }

  /**
   * The queue is full: moves it to the spill file now, whatever the writer is doing (an insert
   * that hangs must not make saves drop records). One append at a time: while one is under way the
   * queue keeps growing and goes to the file in the next append, as soon as this one ends (one sync
   * for all of it). False when the record cannot be held: the spill file cannot be written, or
   * `2 × maxQueue` records are in memory already (saves come faster than the disk takes them).
   */
  private overflow(): boolean {
    if (this.spillFailing || this.stopped) return false;
    if (this.overflowing > 0) return this.queue.length + this.overflowing < 2 * this.settings.maxQueue;
    const count = this.queue.length;
    this.overflowing = count;
    // The batch being inserted is older than the queue: copy it first, in case its insert fails.
    const flight = this.inFlight !== undefined && this.inFlight.spilled === undefined ? this.inFlight : undefined;
    const batch = this.takeQueue(this.queue.length);
    const spilled = this.spill(batch, flight?.batch.records);
    if (flight !== undefined) flight.spilled = spilled;
    void spilled.then((ok) => {
      if (!ok) this.stuck = [...this.stuck, batch].sort((a, b) => a.from - b.from);
      this.overflowing = 0;
      // What piled up meanwhile goes next.
      if (ok && this.queue.length >= this.settings.maxQueue) this.overflow();
      this.settle(false);
      this.kick();
    });
    return true;
  }

  /** Replays one batch of the oldest spill file. */
  private async replay(): Promise<void> {
    const file = this.orphans[0] ?? this.own;
    let read;
    try {
      read = await file.read(this.settings.batchSize);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        // Perhaps for a moment (too many open files): wait for the next check, as for the database.
        this.log('spill file %s cannot be read now: %s', file.path, describe(error));
        this.down(error);
        return;
      }
      // The file was removed outside the store: nothing more can come out of it.
      this.log('spill file %s is gone, its %d bytes are lost', file.path, file.size - file.offset);
      read = { records: [], invalid: 0, end: file.size };
    }
    if (read.records.length === 0 && read.invalid === 0 && read.end <= file.offset && file.pending === 0 && file.offset < file.size) {
      // Nothing readable where bytes should be (the file was cut short outside the store).
      this.log('spill file %s ends before its expected %d bytes: the rest is lost', file.path, file.size);
      read = { ...read, end: file.size };
    }
    if (read.invalid > 0) {
      this.dropped.rejected += read.invalid;
      this.log('spill file %s: %d lines are not records, skipped', file.path, read.invalid);
    }
    if (read.records.length > 0) {
      try {
        this.count(await this.store(read.records), true);
      } catch (caught) {
        const failure = caught as BatchFailure;
        // The file stays as it is: records of this batch already stored are skipped next time.
        this.count(failure.done, true);
        this.down(failure.error);
        return;
      }
    }
    let removed: boolean;
    try {
      removed = await file.commit(read.end);
    } catch (error) {
      this.log('spill file %s cannot be removed: %s', file.path, describe(error));
      removed = false;
    }
    if (removed && file !== this.own) {
      this.orphans.shift();
      releaseSpillPath(file.path);
    }
  }

  /** Checks the database (the retry timer fired). */
  private async probe(): Promise<void> {
    this.retryDue = false;
    try {
      await this.sink.probe();
      this.up = true;
      this.retryDelay = this.settings.retryDelayMs;
      this.log('database available again');
      this.onAvailability?.(true);
    } catch (error) {
      this.log('database still unavailable: %s', describe(error));
      // Try the spill file again too, if it was failing.
      this.spillFailing = false;
      this.scheduleRetry();
    }
  }

  private down(error: unknown): void {
    if (this.up) {
      this.log('database unavailable (%s): spilling to %s', describe(error), this.own.path);
      this.onAvailability?.(false, describe(error));
    }
    this.up = false;
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.stopped) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(delay * 2, this.settings.retryMaxDelayMs);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryDue = true;
      this.kick();
    }, delay);
    // A process may exit while the database is away: what is held is in the spill file.
    this.retryTimer.unref();
  }

  // ---- flush waiters --------------------------------------------------------------------------

  /**
   * Whether every record queued before ordinal `target` is settled. When the writer is idle,
   * stuck batches and the queue count as settled: they wait for a timer (a retry, the database).
   */
  private settled(target: number, idle: boolean): boolean {
    if (!idle && this.queue.length > 0 && this.queueStart < target) return false;
    for (const batch of this.live) {
      if (batch.from >= target) continue;
      if (idle && this.stuck.includes(batch)) continue;
      return false;
    }
    return true;
  }

  private settle(idle: boolean): void {
    if (this.waiters.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => {
      if (!this.settled(waiter.target, idle)) return true;
      waiter.resolve();
      return false;
    });
  }
}
