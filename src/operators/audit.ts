/**
 * The audit log of operator actions: who, when, from where, what and the result of every sign-in,
 * configuration change, policy upload, rollback, ResetAllCaches and forget.
 *
 * @module
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { logger } from '../log.js';
import { optionKeys, refuseUnknownKeys } from '../options.js';
import type { OperatorRole } from './roles.js';

const log = logger('operators');

/** How an action ended. */
export type AuditResult = 'ok' | 'refused' | 'failed';

/** What an action is, before the log gives it an id and a time. */
export interface AuditInput {
  /** The user name, or `null` when nobody could be identified (a failed sign-in names the user tried in `detail`). */
  actor: string | null;
  /** The actor's role, when signed in. */
  role?: OperatorRole;
  /** The client address the request came from. */
  address: string;
  /**
   * What was done: `sign-in`, `sign-out`, `reset-caches`, `forget`, `config.save`, `api.add`,
   * `api.remove`, `policy.upload`, `rollback`...
   */
  action: string;
  /** What it was done to (an API, a token policy, a version), when it applies. */
  target?: string;
  /** How it ended. */
  result: AuditResult;
  /** The HTTP status answered. */
  status?: number;
  /** More: the comment of a save, the fields changed, why it was refused. Never a secret or a token. */
  detail?: string;
}

/** One entry of the audit log. */
export interface AuditEntry extends AuditInput {
  /** Position in the log, from 1. */
  readonly id: number;
  /** When, ISO 8601 UTC. */
  readonly time: string;
}

/** Where the audit log is kept. */
export interface AuditLog {
  /** Appends an entry; resolves when it is written. */
  append(input: AuditInput): Promise<AuditEntry>;
  /** Entries newest first: at most `limit` (default 100), older than id `before` when given. */
  list(options?: { limit?: number; before?: number }): Promise<AuditEntry[]>;
}

/** Options of {@link MemoryAuditLog}. */
export interface MemoryAuditLogOptions {
  /** Most entries kept in memory (the oldest dropped). Default `10000`. */
  maxEntries?: number;
  /**
   * A file every entry is appended to as one JSON line (created with its folder); at creation the
   * last `maxEntries` entries of an existing file are read back.
   */
  file?: string;
}

/** Longest tail of an existing audit file read back at start. */
const MAX_TAIL = 16 * 1024 * 1024;

const AUDIT_LOG_KEYS = optionKeys<MemoryAuditLogOptions>({ maxEntries: true, file: true });

/**
 * The default audit log: the recent entries in memory, and every entry appended to a JSON-lines
 * file when `file` is given (which is how it outlives a restart).
 */
export class MemoryAuditLog implements AuditLog {
  readonly #entries: AuditEntry[] = [];
  readonly #max: number;
  readonly #file: string | undefined;
  #next = 1;
  #writing: Promise<void> = Promise.resolve();

  constructor(options: MemoryAuditLogOptions = {}) {
    refuseUnknownKeys('MemoryAuditLog: options', options, AUDIT_LOG_KEYS);
    const max = options.maxEntries ?? 10_000;
    if (!Number.isSafeInteger(max) || max < 1) throw new TypeError('MemoryAuditLog: options.maxEntries must be a positive integer');
    this.#max = max;
    this.#file = options.file === undefined ? undefined : path.resolve(options.file);
    if (this.#file !== undefined) this.#readBack(this.#file);
  }

  #readBack(file: string): void {
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return;
    }
    const length = Math.min(size, MAX_TAIL);
    const buffer = Buffer.alloc(length);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, buffer, 0, length, size - length);
    } finally {
      closeSync(fd);
    }
    const lines = buffer.toString('utf8').split('\n');
    if (length < size) lines.shift();
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        const entry = JSON.parse(line) as AuditEntry;
        if (typeof entry.id === 'number' && typeof entry.action === 'string') this.#keep(entry);
      } catch {
        // A torn last line (a crash mid-write) is skipped.
      }
    }
    const last = this.#entries[this.#entries.length - 1];
    if (last !== undefined) this.#next = last.id + 1;
  }

  #keep(entry: AuditEntry): void {
    this.#entries.push(entry);
    if (this.#entries.length > this.#max) this.#entries.splice(0, this.#entries.length - this.#max);
  }

  append(input: AuditInput): Promise<AuditEntry> {
    const entry: AuditEntry = { id: this.#next++, time: new Date().toISOString(), ...clean(input) };
    this.#keep(entry);
    log('audit: %s %s by %s from %s: %s', entry.action, entry.target ?? '', entry.actor ?? '(unknown)', entry.address, entry.result);
    const file = this.#file;
    if (file === undefined) return Promise.resolve(entry);
    // One write at a time, in order.
    this.#writing = this.#writing
      .then(() => mkdir(path.dirname(file), { recursive: true }))
      .then(() => appendFile(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 }))
      .catch((err: unknown) => log('audit file not written: %s', (err as Error)?.message ?? String(err)));
    return this.#writing.then(() => entry);
  }

  list(options: { limit?: number; before?: number } = {}): Promise<AuditEntry[]> {
    const limit = Math.min(Math.max(options.limit ?? 100, 1), this.#max);
    const out: AuditEntry[] = [];
    for (let i = this.#entries.length - 1; i >= 0 && out.length < limit; i--) {
      const entry = this.#entries[i]!;
      if (options.before !== undefined && entry.id >= options.before) continue;
      out.push(entry);
    }
    return Promise.resolve(out);
  }
}

/** Bounds every text of an entry: an entry is a line, not a place to store data. */
function clean(input: AuditInput): AuditInput {
  const cut = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s);
  return {
    actor: input.actor === null ? null : cut(String(input.actor), 64),
    ...(input.role === undefined ? {} : { role: input.role }),
    address: cut(String(input.address), 64),
    action: cut(String(input.action), 64),
    ...(input.target === undefined ? {} : { target: cut(String(input.target), 300) }),
    result: input.result,
    ...(input.status === undefined ? {} : { status: input.status }),
    ...(input.detail === undefined ? {} : { detail: cut(String(input.detail), 2000) }),
  };
}
