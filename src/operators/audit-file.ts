/**
 * The audit file's writer: entries appended as JSON lines, in order, in batches (one `appendFile`
 * for everything queued while the previous one ran), behind a queue bounded in bytes. A disk
 * slower than the entries come must cost neither memory nor the event loop: past the bound an
 * entry is dropped, counted and logged once a minute.
 *
 * @module
 */
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { logger } from '../log.js';

const log = logger('operators');

/** How often drops and failed writes are logged, at most. */
const LOG_INTERVAL_MS = 60_000;

/** Entries the audit file did not receive, by reason. */
export interface AuditFileDrops {
  /** Dropped because the queue was full (the disk slower than the entries). */
  queue_full: number;
  /** Lost because the append failed (the file not writable, the disk full). */
  write_failed: number;
}

/** A bounded, ordered appender of JSON lines to one file. */
export class AuditFileWriter {
  /** Entries not written, by reason. */
  readonly dropped: AuditFileDrops = { queue_full: 0, write_failed: 0 };
  readonly #file: string;
  readonly #maxBytes: number;
  #lines: string[] = [];
  #bytes = 0;
  #running: Promise<void> | undefined;
  #folderMade = false;
  #unlogged = { queue_full: 0, write_failed: 0 };
  #loggedAt = -Infinity;

  /** `maxBytes`: most bytes waiting in memory; entries that must be kept may use as much again. */
  constructor(file: string, maxBytes: number) {
    this.#file = file;
    this.#maxBytes = maxBytes;
  }

  /** Bytes waiting to be written. */
  get queuedBytes(): number {
    return this.#bytes;
  }

  /**
   * Queues `line` (without its line break); resolves when it is written, or at once with `false`
   * when it was dropped. An entry with `reserved` (an operator's) may use the second half of the
   * room, which anonymous ones cannot: noise never takes the place of an operator's entry.
   */
  write(line: string, reserved: boolean): Promise<boolean> {
    const size = Buffer.byteLength(line) + 1;
    if (this.#bytes + size > (reserved ? 2 : 1) * this.#maxBytes) {
      this.#drop('queue_full', 1);
      return Promise.resolve(false);
    }
    this.#lines.push(line);
    this.#bytes += size;
    this.#running ??= this.#drain();
    return this.#running.then(() => true);
  }

  /** Resolves once everything queued now is written (or failed). */
  async drained(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #drain(): Promise<void> {
    // Every call queued while a batch is written waits for the next batch: one promise per batch.
    await Promise.resolve();
    while (this.#lines.length > 0) {
      const batch = this.#lines;
      this.#lines = [];
      this.#bytes = 0;
      try {
        if (!this.#folderMade) {
          await mkdir(path.dirname(this.#file), { recursive: true });
          this.#folderMade = true;
        }
        await appendFile(this.#file, `${batch.join('\n')}\n`, { mode: 0o600 });
      } catch (err) {
        this.#folderMade = false;
        this.#drop('write_failed', batch.length, (err as Error)?.message ?? String(err));
      }
    }
    this.#running = undefined;
  }

  #drop(reason: keyof AuditFileDrops, count: number, why?: string): void {
    this.dropped[reason] += count;
    this.#unlogged[reason] += count;
    const now = Date.now();
    if (now - this.#loggedAt < LOG_INTERVAL_MS) return;
    this.#loggedAt = now;
    const { queue_full: full, write_failed: failed } = this.#unlogged;
    log('audit file %s: %d entries dropped (queue full), %d not written%s', this.#file, full, failed, why === undefined ? '' : ` (${why})`);
    this.#unlogged = { queue_full: 0, write_failed: 0 };
  }
}
