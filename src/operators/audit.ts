/**
 * The audit log of operator actions: who, when, from where, what and the result of every sign-in,
 * configuration change, policy upload, rollback, ResetAllCaches and forget.
 *
 * @module
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { logger } from '../log.js';
import { AuditFileWriter } from './audit-file.js';
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
  /** Writes what is still waiting (the gateway calls it when it closes). */
  close?(): Promise<void>;
}

/** `log`, with `watch` told of each entry before it is appended (a failing watch is ignored). */
export function watchedAuditLog(log: AuditLog, watch: (input: AuditInput) => void): AuditLog {
  return {
    append(input) {
      try {
        watch(input);
      } catch {
        // Watching never fails the action.
      }
      return log.append(input);
    },
    list: (options) => log.list(options),
    ...(log.close === undefined ? {} : { close: () => log.close!() }),
  };
}

/** Options of {@link MemoryAuditLog}. */
export interface MemoryAuditLogOptions {
  /** Most entries of operators kept in memory (the oldest dropped). Default `10000`. */
  maxEntries?: number;
  /**
   * Most entries of nobody (refusals of requests without valid credentials, and their summaries)
   * kept in memory, apart from the operators' ones: they never push an operator's entry out.
   * Default `1000`.
   */
  maxAnonymousEntries?: number;
  /**
   * A file every entry is appended to as one JSON line (created with its folder); at creation the
   * last entries of an existing file are read back.
   */
  file?: string;
  /**
   * Most bytes of entries waiting for the file (a disk slower than the entries come): past it an
   * entry of nobody is dropped, an operator's past twice as much; drops are counted
   * ({@link MemoryAuditLog.dropped}, `gateway_audit_events_dropped_total`) and logged once a
   * minute. Default `1048576` (1 MiB).
   */
  maxQueueBytes?: number;
}

/** Longest tail of an existing audit file read back at start. */
const MAX_TAIL = 16 * 1024 * 1024;

function positive(value: number | undefined, fallback: number, name: string): number {
  const n = value ?? fallback;
  if (!Number.isSafeInteger(n) || n < 1) throw new TypeError(`MemoryAuditLog: options.${name} must be a positive integer`);
  return n;
}

/** Entries of one kind, oldest first, at most `max`. */
class Bounded {
  readonly items: AuditEntry[] = [];
  constructor(readonly max: number) {}
  push(entry: AuditEntry): void {
    this.items.push(entry);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
  }
}

const AUDIT_LOG_KEYS = optionKeys<MemoryAuditLogOptions>({ maxEntries: true, maxAnonymousEntries: true, maxQueueBytes: true, file: true });

/**
 * The default audit log: the recent entries in memory (operators' and nobody's apart, each
 * bounded), and every entry appended to a JSON-lines file when `file` is given (which is how it
 * outlives a restart), through a bounded queue.
 */
export class MemoryAuditLog implements AuditLog {
  readonly #operators: Bounded;
  readonly #anonymous: Bounded;
  readonly #writer: AuditFileWriter | undefined;
  #next = 1;

  constructor(options: MemoryAuditLogOptions = {}) {
    refuseUnknownKeys('MemoryAuditLog: options', options, AUDIT_LOG_KEYS);
    this.#operators = new Bounded(positive(options.maxEntries, 10_000, 'maxEntries'));
    this.#anonymous = new Bounded(positive(options.maxAnonymousEntries, 1000, 'maxAnonymousEntries'));
    const maxQueueBytes = positive(options.maxQueueBytes, 1024 * 1024, 'maxQueueBytes');
    const file = options.file === undefined ? undefined : path.resolve(options.file);
    if (file === undefined) return;
    this.#readBack(file);
    this.#writer = new AuditFileWriter(file, maxQueueBytes);
  }

  /**
   * Entries the file did not receive, by reason (all zero without a file): `queue_full` (the disk
   * slower than the entries), `write_failed` (the append failed).
   */
  get dropped(): Readonly<Record<'queue_full' | 'write_failed', number>> {
    return this.#writer?.dropped ?? { queue_full: 0, write_failed: 0 };
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
    this.#next = Math.max(this.#operators.items.at(-1)?.id ?? 0, this.#anonymous.items.at(-1)?.id ?? 0) + 1;
  }

  #keep(entry: AuditEntry): void {
    (entry.actor === null ? this.#anonymous : this.#operators).push(entry);
  }

  append(input: AuditInput): Promise<AuditEntry> {
    const entry: AuditEntry = { id: this.#next++, time: new Date().toISOString(), ...clean(input) };
    this.#keep(entry);
    log('audit: %s %s by %s from %s: %s', entry.action, entry.target ?? '', entry.actor ?? '(unknown)', entry.address, entry.result);
    const writer = this.#writer;
    if (writer === undefined) return Promise.resolve(entry);
    return writer.write(JSON.stringify(entry), entry.actor !== null).then(() => entry);
  }

  list(options: { limit?: number; before?: number } = {}): Promise<AuditEntry[]> {
    const limit = Math.min(Math.max(options.limit ?? 100, 1), this.#operators.max + this.#anonymous.max);
    const before = options.before ?? Infinity;
    const out: AuditEntry[] = [];
    // Both lists are in id order: merged from their newest ends.
    const a = this.#operators.items;
    const b = this.#anonymous.items;
    let i = a.length - 1;
    let j = b.length - 1;
    while (i >= 0 && a[i]!.id >= before) i--;
    while (j >= 0 && b[j]!.id >= before) j--;
    while (out.length < limit && (i >= 0 || j >= 0)) {
      if (j < 0 || (i >= 0 && a[i]!.id > b[j]!.id)) out.push(a[i--]!);
      else out.push(b[j--]!);
    }
    return Promise.resolve(out);
  }

  /** Resolves once the entries appended so far are in the file. */
  close(): Promise<void> {
    return this.#writer?.drained() ?? Promise.resolve();
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
