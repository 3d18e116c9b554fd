/**
 * What-if: a draft XACML policy evaluated against the XACML requests recorded for an API's last
 * transactions, listing every decision that would change. The transactions are read from the
 * store on the gateway's event loop ({@link readWhatIfRecords}); the draft is compiled once and
 * evaluated ({@link evaluateWhatIf}) in an operators' worker thread, once per recorded request
 * (and explained only where the decision changes), over at most {@link WHAT_IF_MAX} transactions.
 * Nothing is saved.
 *
 * @module
 */
import { xacmlRequestOf } from '../record/xacml-request.js';
import { apiKey, MAX_PAGE_SIZE, type TransactionRecord, type TransactionStore } from '../record/types.js';
import type { Pdp } from '../xacml/pdp.js';
import type { XacmlDecision } from '../xacml/response.js';
import type { RequestContext } from '../xacml/request-context.js';

/** Transactions read when the request names no `limit`. */
export const WHAT_IF_DEFAULT = 200;
/** Most transactions one what-if reads (a larger `limit` is capped to it). */
export const WHAT_IF_MAX = 2000;
/**
 * Most records read to find the API's `limit` transactions, as a multiple of `limit`: the store's
 * `api` filter matches by prefix (`Ente/PetStore/v1` also finds `v10`), so records of another API
 * are read and left out; past this many the run stops with what it found.
 */
const SCAN_FACTOR = 5;
/** Records read per page: each page's serialization is one turn of the gateway's event loop. */
const READ_PAGE = Math.min(MAX_PAGE_SIZE, 200);

/** Why a transaction was not evaluated. */
export type WhatIfSkipReason = 'permit' | 'noAuthorization' | 'noRequest' | 'unreadable';

/** Counted transactions that were not evaluated, by reason. */
export interface WhatIfSkipped {
  /** The reason, as a stable code. */
  reason: WhatIfSkipReason;
  /** How many transactions. */
  count: number;
  /** Why, in a sentence. */
  why: string;
}

const WHY: Record<WhatIfSkipReason, string> = {
  permit:
    'authorization permitted them, and the record of a Permit keeps no XACML request unless the API\'s recording.xacmlRequests is "all" (by default only decisions that are not Permit keep it, to keep the permitted path free of that work): a Permit that the draft would turn into Deny cannot be shown',
  noAuthorization:
    'authorization did not run (the request was refused or failed before it, for example at the token): the policy never saw them',
  noRequest: 'the record has a decision but no XACML request (an obligation not fulfilled, or a record made before records kept requests)',
  unreadable: 'the recorded XACML request is malformed and cannot be evaluated',
};

/** The side of a decision: the decision and, when known, what decided it. */
export interface WhatIfDecision {
  /** The decision (first result). */
  decision: XacmlDecision;
  /** The rule that decided, when one did. */
  rule?: string;
  /** The innermost policy on the path to what decided. */
  policy?: string;
  /** The elements from the top-level policy (set) down to what decided, as `Kind "id"`. */
  path?: string[];
  /** The status message of the decision (an Indeterminate's cause). */
  statusMessage?: string;
}

/** One transaction whose decision the draft would change. */
export interface WhatIfChange {
  /** The transaction id (the monitoring console's `#/transactions/<id>`). */
  id: string;
  /** When the gateway took the request (epoch ms); the draft is evaluated at that time. */
  time: number;
  /** Who called, as recorded from the token. */
  caller: {
    /** `sub` of the token. */
    subject?: string;
    /** `azp` or `client_id` of the token. */
    clientId?: string;
    /** `username` (or `preferred_username`) of the token. */
    username?: string;
  };
  /** The HTTP method. */
  method: string;
  /** The operation, when known. */
  operation?: string;
  /** The HTTP status the caller received. */
  status: number | null;
  /** The decision recorded, with the rule that gave it when the record says. */
  recorded: WhatIfDecision;
  /** The draft's decision, with the rule that gives it (`Pdp.explain`). */
  draft: WhatIfDecision;
  /** Set when the recorded request had values redacted or cut: the replay may differ from the original. */
  incomplete?: true;
}

/** The answer of a what-if. */
export interface WhatIfReport {
  /** The API, as `<provider>/<name>/v<version>`. */
  api: string;
  /** Most transactions read (the request's `limit`, capped at 2000). */
  limit: number;
  /** The API's transactions read, newest first (at most `limit`). */
  transactions: number;
  /** When the oldest and the newest of them were made, when there are some. */
  window?: {
    /** `startedAt` of the oldest (epoch ms). */
    from: number;
    /** `startedAt` of the newest (epoch ms). */
    to: number;
  };
  /** Transactions whose recorded XACML request was evaluated against the draft. */
  evaluated: number;
  /** Of those, the ones the draft decides as recorded. */
  unchanged: number;
  /** Of those evaluated, how many had an incomplete recorded request. */
  incomplete: number;
  /** Every decision the draft would change, newest first. */
  changed: WhatIfChange[];
  /** Transactions counted but not evaluated, by reason (reasons with none left out). */
  skipped: WhatIfSkipped[];
  /** Set when the records read reached their bound before `limit` transactions of the API were found. */
  scanLimited?: true;
}

function decisionOf(record: WhatIfRecord): WhatIfDecision {
  const az = record.authorization!;
  const out: WhatIfDecision = { decision: az.decision };
  const by = az.explanation?.decidedBy;
  if (by?.rule !== undefined) out.rule = by.rule;
  if (by?.policy !== undefined) out.policy = by.policy;
  if (az.statusMessage !== undefined) out.statusMessage = az.statusMessage;
  return out;
}

function draftDecision(pdp: Pdp, request: RequestContext, decision: XacmlDecision, message: string | undefined): WhatIfDecision {
  const out: WhatIfDecision = { decision };
  if (message !== undefined) out.statusMessage = message;
  let explained;
  try {
    explained = pdp.explain?.(request)[0];
  } catch {
    return out;
  }
  const by = explained?.decidedBy;
  if (by === undefined) return out;
  if (by.rule !== undefined) out.rule = by.rule;
  if (by.policy !== undefined) out.policy = by.policy;
  out.path = by.path.map((p) => `${p.kind} "${p.id}"`);
  return out;
}

function changeOf(record: WhatIfRecord, draft: WhatIfDecision): WhatIfChange {
  const caller: WhatIfChange['caller'] = {};
  if (record.sender.subject !== undefined) caller.subject = record.sender.subject;
  if (record.sender.clientId !== undefined) caller.clientId = record.sender.clientId;
  if (record.sender.username !== undefined) caller.username = record.sender.username;
  const change: WhatIfChange = {
    id: record.id,
    time: record.startedAt,
    caller,
    method: record.method,
    status: record.status,
    recorded: decisionOf(record),
    draft,
  };
  if (record.operation !== undefined) change.operation = record.operation;
  if (record.authorization?.request?.incomplete === true) change.incomplete = true;
  return change;
}

/** A recorded transaction as the what-if reads it: what it replays and what it shows of it. */
export type WhatIfRecord = Pick<TransactionRecord, 'id' | 'startedAt' | 'method' | 'operation' | 'status' | 'authorization'> & {
  /** Who called, as recorded. */
  sender: Pick<TransactionRecord['sender'], 'subject' | 'clientId' | 'username'>;
};

/** The transactions a what-if replays, newest first, as {@link readWhatIfRecords} found them. */
export interface WhatIfRecords {
  /** The API's transactions, at most `limit`, without what the what-if does not read (bodies, headers). */
  records: WhatIfRecord[];
  /** Set when the records read reached their bound before `limit` transactions of the API were found. */
  scanLimited: boolean;
}

/**
 * {@link WhatIfRecords} on their way to the worker: the records as the UTF-8 bytes of their JSON
 * array, moved rather than copied (work/transfer.ts).
 */
export interface WhatIfRecordBytes {
  /** The JSON array of the records, UTF-8. */
  records: Uint8Array;
  /** As {@link WhatIfRecords.scanLimited}. */
  scanLimited: boolean;
}

/** The records of {@link WhatIfRecordBytes}, read back (in the worker). */
export function whatIfRecordsOf(bytes: WhatIfRecordBytes): WhatIfRecords {
  return { records: JSON.parse(new TextDecoder().decode(bytes.records)) as WhatIfRecord[], scanLimited: bytes.scanLimited };
}

function whatIfRecordOf(record: TransactionRecord): WhatIfRecord {
  const sender: WhatIfRecord['sender'] = {};
  if (record.sender.subject !== undefined) sender.subject = record.sender.subject;
  if (record.sender.clientId !== undefined) sender.clientId = record.sender.clientId;
  if (record.sender.username !== undefined) sender.username = record.sender.username;
  const out: WhatIfRecord = { id: record.id, startedAt: record.startedAt, sender, method: record.method, status: record.status };
  if (record.operation !== undefined) out.operation = record.operation;
  if (record.authorization !== undefined) out.authorization = record.authorization;
  return out;
}

/**
 * Reads `api`'s last `limit` transactions from `store` (newest first), one page at a time, keeping
 * only what a what-if reads, as the bytes the worker that evaluates them reads (see
 * {@link WhatIfRecordBytes}).
 */
export async function readWhatIfRecords(store: TransactionStore, api: string, limit: number): Promise<WhatIfRecordBytes> {
  // Each page's records as JSON bytes, made in that page's turn: no turn holds the whole work.
  const chunks: Uint8Array[] = [];
  let count = 0;
  const maxScanned = limit * SCAN_FACTOR;
  let scanned = 0;
  let cursor: string | undefined;
  do {
    // One page at a time: the event loop gets a turn between pages.
    const page = await store.query({
      api,
      limit: Math.min(READ_PAGE, Math.max(limit - count, 1)),
      ...(cursor === undefined ? {} : { cursor }),
    });
    const lines: string[] = [];
    for (const record of page.items) {
      if (count >= limit) break;
      scanned++;
      if (record.api === undefined || apiKey(record.api) !== api) continue;
      lines.push(JSON.stringify(whatIfRecordOf(record)));
      count++;
    }
    if (lines.length > 0) chunks.push(new TextEncoder().encode(`${chunks.length === 0 ? '' : ','}${lines.join(',')}`));
    cursor = page.next;
  } while (cursor !== undefined && count < limit && scanned < maxScanned);
  return { records: jsonArray(chunks), scanLimited: cursor !== undefined && count < limit };
}

/** The JSON array `[` chunks `]`, in one buffer of its own. */
function jsonArray(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 2));
  out[0] = 0x5b;
  let at = 1;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  out[at] = 0x5d;
  return out;
}

/**
 * Evaluates a compiled draft against the recorded XACML requests of `read` (the last `limit`
 * transactions of `api`, from {@link readWhatIfRecords}). `clock` is the draft's `now`: it is set
 * to each transaction's time before its evaluation, so that a request without the time attributes
 * is decided at the time it was made.
 */
export function evaluateWhatIf(pdp: Pdp, clock: { at: number }, api: string, limit: number, read: WhatIfRecords): WhatIfReport {
  const report: WhatIfReport = { api, limit, transactions: 0, evaluated: 0, unchanged: 0, incomplete: 0, changed: [], skipped: [] };
  const skipped = new Map<WhatIfSkipReason, number>();
  const skip = (reason: WhatIfSkipReason): void => void skipped.set(reason, (skipped.get(reason) ?? 0) + 1);
  for (const record of read.records.slice(0, limit)) {
    report.transactions++;
    report.window = { from: record.startedAt, to: report.window?.to ?? record.startedAt };
    const recorded = record.authorization;
    if (recorded === undefined) {
      skip('noAuthorization');
      continue;
    }
    if (recorded.request === undefined) {
      skip(recorded.decision === 'Permit' ? 'permit' : 'noRequest');
      continue;
    }
    let request: RequestContext | undefined;
    try {
      request = xacmlRequestOf(record);
    } catch {
      request = undefined;
    }
    if (request === undefined) {
      skip('unreadable');
      continue;
    }
    clock.at = record.startedAt;
    const first = pdp.evaluate(request).results[0];
    const decision: XacmlDecision = first?.decision ?? 'Indeterminate';
    report.evaluated++;
    if (recorded.request.incomplete === true) report.incomplete++;
    if (decision === recorded.decision) {
      report.unchanged++;
      continue;
    }
    report.changed.push(changeOf(record, draftDecision(pdp, request, decision, first?.status.message)));
  }
  if (read.scanLimited) report.scanLimited = true;
  for (const reason of ['permit', 'noAuthorization', 'noRequest', 'unreadable'] as const) {
    const count = skipped.get(reason);
    if (count !== undefined) report.skipped.push({ reason, count, why: WHY[reason] });
  }
  return report;
}

/** The audit log's line of a what-if: how many were read, evaluated, would change and how, skipped. */
export function whatIfSummary(report: WhatIfReport): string {
  const moves = new Map<string, number>();
  for (const c of report.changed) {
    const key = `${c.recorded.decision}→${c.draft.decision}`;
    moves.set(key, (moves.get(key) ?? 0) + 1);
  }
  const how = [...moves].map(([k, n]) => `${n} ${k}`).join(', ');
  const skippedText = report.skipped.map((s) => `${s.count} ${s.reason}`).join(', ');
  return (
    `draft evaluated against the last ${report.transactions} transactions (limit ${report.limit}): ${report.evaluated} evaluated, ` +
    `${report.changed.length} would change${how === '' ? '' : ` (${how})`}, ${report.transactions - report.evaluated} skipped${skippedText === '' ? '' : ` (${skippedText})`}; nothing saved`
  );
}
