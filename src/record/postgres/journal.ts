/**
 * The record journal: every answer's record, appended to a local file before the answer's last
 * byte leaves, so that a crash of the process loses no record of an answered exchange. The file
 * has the spill file's format (one JSON record per line), and a process that finds the journal of
 * a process gone replays it as it replays a spill file (records whose id is stored are skipped:
 * each is stored once).
 *
 * Writes are gathered: the records of every answer ending in one turn of the event loop are
 * written by one `write`, then those answers end. No `fsync` unless asked: once written, the
 * bytes are the operating system's, which keeps them whatever happens to the process; a power
 * loss can take what it had not yet put on disk.
 *
 * The journal is a series of segment files. A record confirmed (in the database, or in the spill
 * file, synced) is done; a segment whose records are all done is removed. Records are known by
 * their transaction id: the record saved for an exchange may not be the one written (its client
 * went away before the answer's end: it is built again, cut short), and it confirms the line all
 * the same.
 *
 * @module
 */
import { closeSync, constants, fsyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import type { Logger } from '../../log.js';
import type { TransactionRecord } from '../types.js';
import { describe } from '../../postgres/failure.js';
import { safeJsonText, type JournalLine } from './rows.js';
import { releaseSpillPath } from './spill.js';

/** Settings of a {@link RecordJournal}. */
export interface JournalSettings {
  /** Path of segment `n` (claimed: no other store of this process uses it), in a directory of the process's own. */
  segmentPath(n: number): string;
  /** Sync each write to the disk (a power loss then loses nothing written). */
  fsync: boolean;
  /** A segment this large takes no more records: the next goes to a new one. */
  segmentBytes: number;
  /**
   * What an answer does while the journal cannot be written: `answer` (it goes out, its record
   * not journaled) or `refuse` (it is cut: nothing is answered whose record a crash could lose).
   */
  onUnavailable: JournalUnavailableMode;
  /** A file of the journal's directory that a probe writes and removes while the journal fails. */
  probePath: string;
}

/**
 * What an answer does while the journal cannot be written: `answer` (it goes out, its record not
 * journaled) or `refuse` (it is cut, and new requests get 503).
 */
export type JournalUnavailableMode = 'answer' | 'refuse';

/** How often the journal tries its directory again while it cannot write, milliseconds. */
const PROBE_INTERVAL_MS = 1000;
/** What a probe writes: enough to need a block of a full disk. */
const PROBE_BYTES = Buffer.alloc(4096, 0x0a);

/** Counters of a journal. */
export interface JournalCounters {
  /** Records written to the journal. */
  written: number;
  /** Bytes written to the journal. */
  bytes: number;
  /** Writes (one per event-loop turn in which answers ended). */
  writes: number;
  /** Journal files opened. */
  segments: number;
  /** Records not written because the journal could not be written (their answers went out, or were cut under `refuse`). */
  failed: number;
  /** Answers cut because their record could not be journaled (`onUnavailable: "refuse"`). */
  refused: number;
}

const NEWLINE = 0x0a;

/**
 * A segment is a new file, or none: created here (`O_EXCL`), never an existing file or whatever a
 * link at its name points to (`O_EXCL` fails on a link, `O_NOFOLLOW` says so twice).
 */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_APPEND | (constants.O_NOFOLLOW ?? 0);
/** Names in a row found taken before a segment gives up (its records then go unjournaled, logged). */
const MAX_TAKEN = 16;

/** A record written to the journal: what was written, where its line is, its segment. */
interface JournalEntry extends Written, JournalLine {
  readonly segment: Segment;
}

/** One segment file. */
class Segment {
  fd: number | undefined;
  bytes = 0;
  /** Records written (or about to be) and not yet confirmed. */
  outstanding = 0;
  constructor(readonly path: string) {}
}

/** What the journal writes for an exchange. */
export interface Written {
  /** The recorder's record, before the store's changes (what the recorder will save). */
  readonly source: TransactionRecord;
  /** The record as written (and as stored). */
  readonly record: TransactionRecord;
}

export class RecordJournal {
  readonly counters: JournalCounters = { written: 0, bytes: 0, writes: 0, segments: 0, failed: 0, refused: 0 };
  /** Told at each change of the journal's availability (with the failure's cause when it went). */
  onAvailability: ((up: boolean, cause?: string) => void) | undefined;
  private current: Segment | undefined;
  private next = 0;
  /** Records written and not confirmed, by transaction id. */
  private readonly entries = new Map<string, JournalEntry>();
  /** The records to build and the answer ends of this turn. */
  private builds: Array<() => Written> = [];
  private sends: Array<() => void> = [];
  private cuts: Array<() => void> = [];
  private scheduled = false;
  private closed = false;
  /** Why the journal cannot be written now; `undefined` while it can. */
  private failing: string | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly flushNow = (): void => this.flush();

  constructor(
    private readonly settings: JournalSettings,
    private readonly log: Logger,
  ) {}

  /**
   * At the end of this turn, builds a record with `build`, writes it down with the others of the
   * turn, then runs `send` (the end of its answer). When the record cannot be built, the answer
   * still goes (counted in `failed`); when it cannot be written, the answer goes too, or under
   * `onUnavailable: "refuse"` `cut` runs instead. After `close`, `send` runs at once.
   */
  append(build: () => Written, send: () => void, cut: () => void = send): void {
    if (this.closed) return send();
    this.builds.push(build);
    this.sends.push(send);
    this.cuts.push(cut);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /**
   * Why new exchanges are refused now: the journal cannot be written and `onUnavailable` is
   * `refuse`; `undefined` otherwise.
   */
  get refusing(): string | undefined {
    return this.settings.onUnavailable === 'refuse' ? this.failing : undefined;
  }

  /** What the journal wrote for the exchange whose transaction id is `id`, while it is not confirmed. */
  writtenFor(id: string): Written | undefined {
    return this.entries.get(id);
  }

  /** Where `record`'s line is, when `record` is the one written and not confirmed (the insert reuses it). */
  readonly lineOf = (record: TransactionRecord): JournalLine | undefined => {
    const entry = this.entries.get(record.id);
    return entry?.record === record ? entry : undefined;
  };

  /** The records are in the database or the spill file: the lines of their exchanges are done. */
  confirm(records: readonly TransactionRecord[]): void {
    if (this.entries.size === 0) return;
    for (const record of records) {
      const entry = this.entries.get(record.id);
      if (entry === undefined) continue;
      this.entries.delete(record.id);
      this.release(entry.segment);
    }
  }

  /** One line of `segment` is done: the segment goes once none is outstanding. */
  private release(segment: Segment): void {
    if (--segment.outstanding === 0) this.done(segment);
  }

  /**
   * Writes what this turn gathered, then stops: later records are not journaled. Segments holding
   * records not confirmed stay for the next start; the others are removed.
   */
  close(): void {
    this.flush();
    this.closed = true;
    if (this.probeTimer !== undefined) clearInterval(this.probeTimer);
    const segment = this.current;
    this.current = undefined;
    if (segment !== undefined) {
      if (segment.outstanding === 0) this.remove(segment);
      else this.closeFile(segment);
    }
  }

  /** Builds the turn's records, writes their lines in one write, then ends their answers. */
  private flush(): void {
    this.scheduled = false;
    const { builds, sends, cuts } = this;
    if (builds.length === 0) return;
    this.builds = [];
    this.sends = [];
    this.cuts = [];
    const { records, lines } = this.build(builds);
    const written = records.length === 0 || this.write(records, lines);
    const cut = !written && this.settings.onUnavailable === 'refuse';
    if (cut) this.counters.refused += sends.length;
    for (const end of cut ? cuts : sends) {
      try {
        end();
      } catch (error) {
        this.log('ending an answer failed: %s', describe(error));
      }
    }
  }

  /** The turn's records and their JSON lines. */
  private build(builds: ReadonlyArray<() => Written>): { records: Written[]; lines: string[] } {
    const records: Written[] = [];
    const lines: string[] = [];
    for (const build of builds) {
      try {
        const written = build();
        lines.push(JSON.stringify(written.record));
        records.push(written);
      } catch (error) {
        this.counters.failed++;
        this.log('a record cannot be journaled: %s', describe(error));
      }
    }
    return { records, lines };
  }

  /**
   * Appends the lines in one write, and gives each record its entry (where its line is in the
   * bytes written). Returns whether they were written.
   */
  private write(records: readonly Written[], lines: string[]): boolean {
    // One text, made safe for PostgreSQL in one pass, encoded once; the lines are found again in
    // the bytes by their newlines (JSON text holds none).
    lines.push('');
    const bytes = Buffer.from(safeJsonText(lines.join('\n')));
    const length = bytes.length;
    try {
      const segment = this.segment();
      let written = writeSync(segment.fd!, bytes);
      // A regular file takes the whole write; should one be short, the rest follows.
      while (written < length) written += writeSync(segment.fd!, bytes, written);
      if (this.settings.fsync) fsyncSync(segment.fd!);
      segment.bytes += length;
      segment.outstanding += records.length;
      let start = 0;
      for (const { source, record } of records) {
        const end = bytes.indexOf(NEWLINE, start);
        // An id written twice (a host's records): the earlier line is done now (its segment is
        // not this one when it reaches nothing outstanding: this one counts the later line).
        const earlier = this.entries.get(record.id);
        if (earlier !== undefined) this.release(earlier.segment);
        this.entries.set(record.id, { source, record, bytes, start, end, segment });
        start = end + 1;
      }
      this.counters.written += records.length;
      this.counters.bytes += length;
      this.counters.writes++;
      this.available();
      return true;
    } catch (error) {
      this.counters.failed += records.length;
      this.unavailable(describe(error));
      // A segment cut short: the next write starts a new one (a cut line is skipped at replay).
      if (this.current !== undefined) {
        const segment = this.current;
        this.current = undefined;
        this.closeFile(segment);
        if (segment.outstanding === 0) this.remove(segment);
      }
      return false;
    }
  }

  /** The journal could not write: said once, then its directory is tried every second. */
  private unavailable(cause: string): void {
    if (this.failing !== undefined) return;
    this.failing = cause;
    this.log(
      'journal cannot be written (%s): %s',
      cause,
      this.settings.onUnavailable === 'refuse' ? 'answers are refused' : 'answers go out unjournaled',
    );
    this.onAvailability?.(false, cause);
    this.probeTimer = setInterval(() => this.probe(), PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  private available(): void {
    if (this.failing === undefined) return;
    this.failing = undefined;
    if (this.probeTimer !== undefined) clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.log('journal written again');
    this.onAvailability?.(true);
  }

  /** Writes and removes a probe file in the journal's directory: its success ends the outage. */
  private probe(): void {
    const path = this.settings.probePath;
    let fd: number | undefined;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | (constants.O_NOFOLLOW ?? 0), 0o600);
      writeSync(fd, PROBE_BYTES);
      if (this.settings.fsync) fsyncSync(fd);
      closeSync(fd);
      fd = undefined;
      unlinkSync(path);
      this.available();
    } catch (error) {
      try {
        if (fd !== undefined) closeSync(fd);
        unlinkSync(path);
      } catch {
        // Not made, or gone.
      }
      this.failing = describe(error);
    }
  }

  /** The segment to write to: the current one, or a new one when it is full or there is none. */
  private segment(): Segment {
    let segment = this.current;
    if (segment !== undefined && segment.bytes >= this.settings.segmentBytes) {
      this.current = undefined;
      this.closeFile(segment);
      if (segment.outstanding === 0) this.remove(segment);
      segment = undefined;
    }
    if (segment === undefined) {
      segment = this.create();
      this.counters.segments++;
      this.current = segment;
    }
    return segment;
  }

  /**
   * A new segment file, mode 0600. A name already taken (a file left by an earlier process of the
   * same pid, replayed by the spill files' replay, or one planted) is passed over, its file left
   * as it is.
   */
  private create(): Segment {
    for (let taken = 0; ; taken++) {
      const segment = new Segment(this.settings.segmentPath(this.next++));
      try {
        segment.fd = openSync(segment.path, CREATE_NEW, 0o600);
        return segment;
      } catch (error) {
        releaseSpillPath(segment.path);
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || taken + 1 >= MAX_TAKEN) throw error;
        this.log('journal segment %s: the name is taken by a file this journal did not make; left as it is', segment.path);
      }
    }
  }

  /**
   * Every record of `segment` is confirmed: it is removed (the current one too: the next record
   * opens a new one). A quiet gateway keeps no file; a busy one removes a segment about every
   * `segmentBytes`.
   */
  private done(segment: Segment): void {
    if (segment === this.current) this.current = undefined;
    this.remove(segment);
  }

  private closeFile(segment: Segment): void {
    if (segment.fd === undefined) return;
    try {
      closeSync(segment.fd);
    } catch {
      // Closed already.
    }
    segment.fd = undefined;
  }

  private remove(segment: Segment): void {
    this.closeFile(segment);
    try {
      unlinkSync(segment.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log('journal segment %s cannot be removed: %s', segment.path, describe(error));
    }
    releaseSpillPath(segment.path);
  }
}
