/**
 * The spill file: records that could not reach PostgreSQL, as JSON lines appended (and synced) to a
 * local file, read back in order once the database answers, then removed.
 *
 * @module
 */
import { lstatSync } from 'node:fs';
import { lstat, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { TransactionRecord } from '../types.js';
import { fileProblem, journalDirectory, warnUntrusted } from './trust.js';

/** What an append did. */
export interface AppendResult {
  /** Records written (and synced). */
  written: number;
  /** Records left out because the file would have grown past its bound. */
  overflow: number;
}

/** A batch read back from the file. */
export interface ReadResult {
  /** Records, in the order they were appended. */
  records: TransactionRecord[];
  /** Lines that were not a record (a write cut short by a crash): skipped. */
  invalid: number;
  /** Offset after the lines read. */
  end: number;
}

/** First read of a batch; doubled while a single line is longer. */
const READ_CHUNK = 1024 * 1024;

/**
 * One spill file. Every operation is serialized (appends, reads, removal) so that a read never sees
 * half an append and the file is only removed once everything in it has been read and committed.
 */
export class SpillFile {
  /** Bytes in the file. */
  size = 0;
  /** Offset up to which the records were committed to the database. */
  offset = 0;
  /** Operations queued or running. */
  pending = 0;
  private handle: FileHandle | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  /** The file may end with a line cut short: the next append starts a new line. */
  private needsNewline = false;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {}

  /** Whether records are waiting in the file (or an append is under way). */
  get holdsRecords(): boolean {
    return this.size > this.offset || this.pending > 0;
  }

  /** Finds what a previous process left in the file. */
  load(): Promise<void> {
    return this.serialize(async () => {
      let bytes: number;
      try {
        bytes = (await stat(this.path)).size;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      this.size = bytes;
      if (bytes === 0) return;
      const last = Buffer.alloc(1);
      const handle = await open(this.path, 'r');
      try {
        await handle.read(last, 0, 1, bytes - 1);
      } finally {
        await handle.close();
      }
      this.needsNewline = last[0] !== 0x0a;
    });
  }

  /**
   * Appends records, one JSON line each, and syncs the file; records that would take it past its
   * bound are left out (counted in `overflow`).
   *
   * @throws the file system's error (nothing of the batch is counted as written then).
   */
  append(records: readonly TransactionRecord[]): Promise<AppendResult> {
    return this.serialize(async () => {
      const lines: string[] = [];
      let bytes = this.needsNewline ? 1 : 0;
      let overflow = 0;
      for (const record of records) {
        const line = `${JSON.stringify(record)}\n`;
        const length = Buffer.byteLength(line);
        if (this.size + bytes + length > this.maxBytes) {
          overflow++;
          continue;
        }
        lines.push(line);
        bytes += length;
      }
      if (lines.length === 0) return { written: 0, overflow };
      const data = (this.needsNewline ? '\n' : '') + lines.join('');
      this.handle ??= await open(this.path, 'a', 0o600);
      try {
        await this.handle.writeFile(data);
        await this.handle.sync();
      } catch (error) {
        // Part of it may be in the file: learn its size again and end the partial line.
        await this.closeHandle();
        this.size = await stat(this.path).then(
          (s) => s.size,
          () => this.size,
        );
        this.needsNewline = true;
        throw error;
      }
      this.needsNewline = false;
      this.size += bytes;
      return { written: lines.length, overflow };
    });
  }

  /** Reads up to `max` records from `offset`. */
  read(max: number): Promise<ReadResult> {
    return this.serialize(async () => {
      const records: TransactionRecord[] = [];
      let invalid = 0;
      let position = this.offset;
      const handle = await open(this.path, 'r');
      try {
        let chunk = READ_CHUNK;
        while (records.length + invalid < max && position < this.size) {
          const length = Math.min(chunk, this.size - position);
          const buffer = Buffer.alloc(length);
          const { bytesRead } = await handle.read(buffer, 0, length, position);
          if (bytesRead === 0) break;
          const data = buffer.subarray(0, bytesRead);
          const atEnd = position + bytesRead >= this.size;
          let start = 0;
          while (records.length + invalid < max && start < data.length) {
            let end = data.indexOf(0x0a, start);
            if (end < 0) {
              if (!atEnd) break;
              end = data.length; // The last line of a file cut short by a crash.
            }
            const text = data.toString('utf8', start, end).trim();
            if (text !== '') {
              const record = parseRecord(text);
              if (record === undefined) invalid++;
              else records.push(record);
            }
            start = end + 1;
          }
          if (start === 0) {
            // One line longer than the chunk: read more at once.
            chunk *= 2;
            continue;
          }
          position += Math.min(start, data.length);
          chunk = READ_CHUNK;
        }
      } finally {
        await handle.close();
      }
      return { records, invalid, end: position };
    });
  }

  /**
   * Marks the records read up to `end` as committed; when that is the whole file (and nothing is
   * being appended), removes the file. Returns whether it was removed.
   */
  commit(end: number): Promise<boolean> {
    return this.serialize(async () => {
      this.offset = Math.max(this.offset, end);
      // `pending` counts this operation itself.
      if (this.offset < this.size || this.pending > 1) return false;
      await this.closeHandle();
      await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      this.size = 0;
      this.offset = 0;
      this.needsNewline = false;
      return true;
    });
  }

  /** Closes the file (it stays on disk with whatever it holds). */
  close(): Promise<void> {
    return this.serialize(() => this.closeHandle());
  }

  private async closeHandle(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }

  private serialize<T>(operation: () => Promise<T>): Promise<T> {
    this.pending++;
    const run = this.chain.then(operation);
    this.chain = run.then(
      () => void this.pending--,
      () => void this.pending--,
    );
    return run;
  }
}

function parseRecord(text: string): TransactionRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string')
      return value as TransactionRecord;
  } catch {
    // A line cut short.
  }
  return undefined;
}

/** Spill paths in use by stores of this process: two stores must not share one file. */
const inUse = new Set<string>();

/** Prefix of the default spill files of `schema`.`table` on this host. */
function defaultPrefix(schema: string, table: string): string {
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
  return `express-access-gateway-${host}-${schema}.${table}-`;
}

/**
 * Takes a spill path for a store: `explicit` when given (refused when another store of this process
 * uses it), else a file in the user's own record directory (the journal's default one, mode 0700:
 * no other user can plant a file or a link at a name there) named after the host, the table and
 * this process (`...-<pid>.jsonl`, `...-<pid>-<n>.jsonl` for further stores of the table).
 *
 * @returns the path, or `undefined` when `explicit` is in use.
 * @throws Error when the default directory cannot be used (see {@link journalDirectory}).
 */
export function claimSpillPath(explicit: string | undefined, schema: string, table: string): string | undefined {
  if (explicit !== undefined) {
    if (inUse.has(explicit)) return undefined;
    inUse.add(explicit);
    return explicit;
  }
  const base = join(journalDirectory(undefined), `${defaultPrefix(schema, table)}${process.pid}`);
  for (let n = 0; ; n++) {
    const path = `${base}${n === 0 ? '' : `-${n}`}.jsonl`;
    if (!inUse.has(path) && trustedOrAbsent(path)) {
      inUse.add(path);
      return path;
    }
  }
}

/**
 * Whether a default spill path may be this store's: nothing there, or a file this process's user
 * left (replayed). A file planted there by anyone else is neither replayed nor written to.
 */
function trustedOrAbsent(path: string): boolean {
  let problem: string | undefined;
  try {
    problem = fileProblem(lstatSync(path));
  } catch {
    return true;
  }
  if (problem !== undefined) warnUntrusted(path, problem);
  return problem === undefined;
}

/** Gives a spill path back (its store is closed). */
export function releaseSpillPath(path: string): void {
  inUse.delete(path);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Default spill files of `schema`.`table` left on this host by processes that are gone (or by
 * closed stores of this process), each claimed by renaming it, so that one store only replays it.
 * Only default paths are searched: an explicit `spillFile` is replayed by the store given it.
 */
export async function claimOrphans(ownPath: string, schema: string, table: string): Promise<string[]> {
  if (!basename(ownPath).startsWith(defaultPrefix(schema, table))) return [];
  // And where default spill files were before: the temporary directory itself (only what this
  // process's user left there, as everywhere).
  const before = await claimOrphansIn(tmpdir(), schema, table);
  return [...(await claimOrphansIn(dirname(ownPath), schema, table, ownPath)), ...before];
}

/**
 * The default spill files and the journal segments of `schema`.`table` in `dir` left by processes
 * gone (or by closed stores of this process), each claimed by renaming it (see {@link claimOrphans}).
 */
export async function claimOrphansIn(dir: string, schema: string, table: string, ownPath?: string): Promise<string[]> {
  const prefix = defaultPrefix(schema, table);
  const pattern = new RegExp(
    `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\d+)(?:-\\d+|-journal-\\d+-\\d+)?\\.jsonl(?:\\.claimed-\\d+-\\d+)?$`,
  );
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const claimed: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const match = pattern.exec(name);
    if (match === null || path === ownPath || inUse.has(path)) continue;
    const pid = Number(match[1]);
    const claimedBy = /\.claimed-(\d+)-\d+$/.exec(name);
    // A file being replayed by a live process is its; one claimed by a process now gone is free.
    if (claimedBy !== null ? alive(Number(claimedBy[1])) && Number(claimedBy[1]) !== process.pid : pid !== process.pid && alive(pid))
      continue;
    // Only what this process's user made is replayed: a file planted by anyone else is left alone.
    let problem: string | undefined;
    try {
      problem = fileProblem(await lstat(path));
    } catch {
      continue; // Gone: another process claimed it.
    }
    if (problem !== undefined) {
      warnUntrusted(path, problem);
      continue;
    }
    const target = `${join(dir, name.replace(/\.claimed-\d+-\d+$/, ''))}.claimed-${process.pid}-${claimCounter++}`;
    try {
      await rename(path, target);
    } catch {
      continue; // Another process claimed it first.
    }
    inUse.add(target);
    claimed.push(target);
  }
  return claimed;
}

let claimCounter = 0;
let journalCounter = 0;

/**
 * The segment paths of a new journal of `schema`.`table` in `dir` (the journal's directory, checked):
 * `...-<pid>-journal-<journal>-<n>.jsonl`, each claimed when asked for (given back when the segment
 * is removed, or when its name is taken), so that the spill files' replay takes them over once this
 * process is gone.
 */
export function journalSegmentPaths(dir: string, schema: string, table: string): (n: number) => string {
  const base = join(dir, `${defaultPrefix(schema, table)}${process.pid}-journal-${journalCounter++}-`);
  return (n) => {
    const path = `${base}${n}.jsonl`;
    inUse.add(path);
    return path;
  };
}
