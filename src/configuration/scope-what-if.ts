/**
 * What-if of scope rules (an OpenAPI import's preview): which of the calls recorded over a past
 * window the API's scope rules after the import would refuse with 403 `insufficient_scope`, by
 * operation, with a sample of each. The transactions are read from the store on the gateway's
 * event loop, one page at a time with a turn of the loop between pages, newest first, at most a
 * bounded number ({@link readScopeWhatIfRecords}); only what the check reads is kept (the call,
 * who made it, the scopes its token held), in a compact form cheap to hand over. Each call is
 * routed to the operations after the import (its method and resource path against their
 * templates, as the gateway routes) and its token's scopes checked against the API's rule and the
 * operation's ({@link scopeWhatIf}, in an operators' worker thread). Nothing is saved.
 *
 * Claim rules (`requiredClaims`) are not replayed: an import does not change them, and records keep
 * only what the check reads.
 *
 * @module
 */
import { heldWay, scopeWays, type ScopeRules } from '../authorize/scopes.js';
import type { OperationConfig } from '../config/types.js';
import { apiKey, MAX_PAGE_SIZE, type TransactionRecord, type TransactionStore } from '../record/types.js';
import { toTokenInfo } from '../token/normalize.js';
import { compilePathTemplate } from '../url/template.js';

/** Minutes of the window when the request names none. */
export const SCOPE_WHAT_IF_MINUTES = 60;
/** Longest window, in minutes: 7 days. */
export const SCOPE_WHAT_IF_MAX_MINUTES = 7 * 24 * 60;
/** Transactions read when the request names no `limit`. */
export const SCOPE_WHAT_IF_DEFAULT = 5000;
/** Most transactions one what-if reads (a larger `limit` is capped to it). */
export const SCOPE_WHAT_IF_MAX = 20_000;
/** Calls shown of each operation's refusals. */
export const SCOPE_WHAT_IF_SAMPLE = 5;

/** Numbers a call: `startedAt`, `status` (`NaN`: none), then the numbers of its strings. */
const COLUMNS = 10;

/**
 * The calls a scope what-if checks, newest first, in a compact form: {@link COLUMNS} numbers a
 * call (`startedAt`, `status`, then the numbers in `strings` of its id, method, resource path,
 * recorded operation, subject, client id, scopes held (space-separated) and error code; `-1`
 * for an absent one).
 */
export interface ScopeWhatIfRows {
  readonly strings: string[];
  readonly rows: Float64Array;
}

/** The calls of the window, as {@link readScopeWhatIfRecords} found them. */
export interface ScopeWhatIfRecords {
  /** The calls with a validated token, newest first. */
  calls: ScopeWhatIfRows;
  /** Records of the window read (those left out included). */
  read: number;
  /** Of those, calls without a validated token (refused before, or without token management), or whose URL does not name the API: not checked. */
  noToken: number;
  /** Set when the window holds more records than `limit`: only the newest were read. */
  truncated: boolean;
}

/** One refused call of the sample. */
export interface ScopeRefusal {
  /** The transaction id (the monitoring console's `#/transactions/<id>`). */
  id: string;
  /** When the gateway took the request (epoch ms). */
  time: number;
  method: string;
  /** The resource path below the API. */
  path: string;
  /** Who called, as recorded from the token. */
  subject?: string;
  clientId?: string;
  /** The scopes the token held. */
  scopes: string[];
  /** The HTTP status the caller received then. */
  status: number | null;
}

/** The refusals of one operation (or of the API's calls that no operation takes). */
export interface ScopeRefusals {
  /** The operation after the import; absent for calls of an API without operations. */
  operation?: string;
  /** The ways to pass (each the scopes it needs), as the gateway would check them. */
  ways: string[][];
  /** Calls checked. */
  checked: number;
  /** Calls the rules would refuse. */
  refused: number;
  /** Of those, calls that were not refused for their scopes when they were made. */
  newlyRefused: number;
  /** The newest refused calls, at most {@link SCOPE_WHAT_IF_SAMPLE}. */
  sample: ScopeRefusal[];
}

/** The answer of a scope what-if. */
export interface ScopeWhatIfReport {
  /** Calls checked (with a validated token, taken by an operation). */
  checked: number;
  /** Calls the rules would refuse, all operations together. */
  refused: number;
  /** Of those, calls not refused for their scopes when they were made. */
  newlyRefused: number;
  /** Calls no operation after the import takes: the gateway would answer 404, not checked. */
  noOperation: number;
  /** By operation, in the API's order: those with a refusal only. */
  operations: ScopeRefusals[];
}

/** Records read in one turn of the event loop. */
const TURN_RECORDS = 100;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The resource path of a recorded call below its API (`/pet/1`), or `undefined` when the URL does not hold the API's. */
export function resourcePathOf(url: string, api: { provider: string; name: string; version: number }): string | undefined {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const prefix = `/${api.provider}/${api.name}/v${api.version}`;
  let at = path.indexOf(prefix);
  while (at !== -1) {
    const end = at + prefix.length;
    if (end === path.length) return '/';
    if (path[end] === '/') return path.slice(end);
    at = path.indexOf(prefix, at + 1);
  }
  return undefined;
}

/** The scopes a recorded token held, as the gateway read them (introspection's over the JWT's over UserInfo's). */
function scopesOf(token: NonNullable<TransactionRecord['tokenInfo']>): string {
  const sources: Parameters<typeof toTokenInfo>[0] = {};
  if (token.introspection !== undefined) sources.introspection = token.introspection;
  if (token.jwt !== undefined) sources.jwt = token.jwt;
  if (token.userInfo !== undefined) sources.userInfo = token.userInfo;
  return toTokenInfo(sources).scopes.join(' ');
}

/**
 * Reads the calls of `api` that started in `[from, to]`, newest first, at most `limit`, one page
 * at a time, the event loop getting a turn every {@link TURN_RECORDS} records; keeps only what
 * the check reads, in the compact form handed to another thread.
 */
export async function readScopeWhatIfRecords(
  store: TransactionStore,
  window: { from: number; to: number },
  limit: number,
  api: string,
): Promise<ScopeWhatIfRecords> {
  const out: ScopeWhatIfRecords = { calls: { strings: [], rows: new Float64Array(0) }, read: 0, noToken: 0, truncated: false };
  const numbers = new Map<string, number>();
  const number = (value: string | undefined): number => {
    if (value === undefined) return -1;
    let n = numbers.get(value);
    if (n === undefined) {
      n = out.calls.strings.length;
      numbers.set(value, n);
      out.calls.strings.push(value);
    }
    return n;
  };
  const row: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.query({
      from: window.from,
      to: window.to,
      api,
      limit: Math.min(MAX_PAGE_SIZE, limit - out.read + 1),
      ...(cursor === undefined ? {} : { cursor }),
    });
    for (let i = 0; i < page.items.length; i++) {
      if (i > 0 && i % TURN_RECORDS === 0) await turn();
      const record = page.items[i]!;
      // The store's `api` filter matches by prefix (`v1` also finds `v10`): another API's records are not read.
      if (record.api === undefined || apiKey(record.api) !== api) continue;
      if (out.read >= limit) {
        out.truncated = true;
        break;
      }
      out.read++;
      const path = resourcePathOf(record.url, record.api);
      if (record.tokenInfo === undefined || path === undefined) {
        out.noToken++;
        continue;
      }
      row.push(
        record.startedAt,
        record.status ?? Number.NaN,
        number(record.id),
        number(record.method),
        number(path),
        number(record.operation),
        number(record.sender.subject),
        number(record.sender.clientId),
        number(scopesOf(record.tokenInfo)),
        number(record.errorCode),
      );
    }
    cursor = page.next;
    await turn();
  } while (cursor !== undefined && !out.truncated);
  out.calls = { strings: out.calls.strings, rows: Float64Array.from(row) };
  return out;
}

/** An operation with its template compiled, as routing matches it. */
interface Routed {
  readonly operation: OperationConfig;
  readonly test: (path: string) => boolean;
}

/** The operation a call invokes, among `operations` (HEAD is served by a GET unless one is declared for it). */
function route(operations: readonly Routed[], method: string, path: string): OperationConfig | undefined {
  let fallback: OperationConfig | undefined;
  for (const { operation, test } of operations) {
    if (!test(path)) continue;
    if (operation.method === method) return operation;
    if (method === 'HEAD' && operation.method === 'GET') fallback ??= operation;
  }
  return fallback;
}

/**
 * The worker's part: each call routed to `operations` (an API without operations: every call is
 * the API's) and its scopes checked against the API's rule (`api`) and its operation's.
 */
export function scopeWhatIf(
  api: ScopeRules,
  operations: readonly OperationConfig[] | undefined,
  calls: ScopeWhatIfRows,
): ScopeWhatIfReport {
  const report: ScopeWhatIfReport = { checked: 0, refused: 0, newlyRefused: 0, noOperation: 0, operations: [] };
  const routed: Routed[] = (operations ?? []).map((operation) => {
    const template = compilePathTemplate(operation.path);
    return { operation, test: (path: string) => template.test(path) };
  });
  const byOperation = new Map<string | undefined, ScopeRefusals>();
  const groupOf = (operation: OperationConfig | undefined): ScopeRefusals => {
    let group = byOperation.get(operation?.name);
    if (group === undefined) {
      const ways = operation === undefined ? scopeWays(api) : scopeWays(api, operation);
      group = {
        ...(operation === undefined ? {} : { operation: operation.name }),
        ways,
        checked: 0,
        refused: 0,
        newlyRefused: 0,
        sample: [],
      };
      byOperation.set(operation?.name, group);
    }
    return group;
  };
  const { strings, rows } = calls;
  const text = (n: number): string | undefined => (n < 0 ? undefined : strings[n]);
  for (let i = 0; i + COLUMNS <= rows.length; i += COLUMNS) {
    const method = text(rows[i + 3]!)!;
    const path = text(rows[i + 4]!)!;
    const operation = routed.length === 0 ? undefined : route(routed, method, path);
    if (routed.length > 0 && operation === undefined) {
      report.noOperation++;
      continue;
    }
    const group = groupOf(operation);
    group.checked++;
    report.checked++;
    const held = new Set((text(rows[i + 8]!) ?? '').split(' ').filter((s) => s !== ''));
    if (heldWay(group.ways, held) !== undefined) continue;
    group.refused++;
    report.refused++;
    const status = Number.isNaN(rows[i + 1]!) ? null : rows[i + 1]!;
    if (!(status === 403 && text(rows[i + 9]!) === 'ERR_INSUFFICIENT_SCOPE')) {
      group.newlyRefused++;
      report.newlyRefused++;
    }
    if (group.sample.length >= SCOPE_WHAT_IF_SAMPLE) continue;
    const subject = text(rows[i + 6]!);
    const clientId = text(rows[i + 7]!);
    group.sample.push({
      id: text(rows[i + 2]!)!,
      time: rows[i]!,
      method,
      path,
      ...(subject === undefined ? {} : { subject }),
      ...(clientId === undefined ? {} : { clientId }),
      scopes: [...held],
      status,
    });
  }
  const order = new Map((operations ?? []).map((op, k) => [op.name, k]));
  report.operations = [...byOperation.values()]
    .filter((group) => group.refused > 0)
    .sort((a, b) => (order.get(a.operation ?? '') ?? -1) - (order.get(b.operation ?? '') ?? -1));
  return report;
}

/** The audit log's line of a scope what-if. */
export function scopeWhatIfLine(minutes: number, read: ScopeWhatIfRecords, report: ScopeWhatIfReport): string {
  const by = report.operations.map((o) => `${o.refused} ${o.operation ?? '(API)'}`).join(', ');
  return (
    `scope rules over the ${read.read} call(s) of the last ${minutes} min${read.truncated ? ' (the newest; the window holds more)' : ''}: ` +
    `${report.checked} checked, ${report.refused} would be refused${by === '' ? '' : ` (${by})`}, ${report.newlyRefused} newly`
  );
}
