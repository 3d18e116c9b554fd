/**
 * The console's export: the records of a filter and window as CSV (chosen columns) or JSON Lines,
 * streamed page by page, up to a row limit.
 *
 * @module
 */
import type { Response } from 'express';
import { MAX_PAGE_SIZE, apiKey, type TransactionQuery, type TransactionRecord, type TransactionStore } from '../record/types.js';
import { QueryError } from './query.js';

/** Rows of an export when `limit` is not given. */
export const DEFAULT_EXPORT_ROWS = 10_000;
/** Most rows of one export. */
export const MAX_EXPORT_ROWS = 100_000;

/** The CSV columns and how each reads a record. */
export const EXPORT_COLUMNS: Readonly<Record<string, (r: TransactionRecord) => string | number | null | undefined>> = {
  id: (r) => r.id,
  messageId: (r) => r.messageId,
  startedAt: (r) => isoOf(r.startedAt),
  endedAt: (r) => isoOf(r.endedAt),
  durationMs: (r) => r.durationMs,
  nodeId: (r) => r.nodeId,
  api: (r) => (r.api === undefined ? undefined : apiKey(r.api)),
  operation: (r) => r.operation,
  method: (r) => r.method,
  url: (r) => r.url,
  clientAddress: (r) => r.clientAddress,
  status: (r) => r.status,
  outcome: (r) => r.outcome?.code,
  outcomeLabel: (r) => r.outcome?.label,
  errorCode: (r) => r.errorCode,
  gatewayStatus: (r) => r.gatewayStatus,
  subject: (r) => r.sender?.subject,
  clientId: (r) => r.sender?.clientId,
  username: (r) => r.sender?.username,
  issuer: (r) => r.sender?.issuer,
  decision: (r) => r.authorization?.decision,
  traceId: (r) => (r as { traceId?: unknown }).traceId as string | undefined,
};

/** Columns of a CSV export when `columns` is not given. */
export const DEFAULT_EXPORT_COLUMNS = [
  'startedAt',
  'id',
  'api',
  'operation',
  'method',
  'url',
  'status',
  'outcome',
  'gatewayStatus',
  'subject',
  'clientId',
  'durationMs',
];

function isoOf(ms: number): string | undefined {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? d.toISOString() : undefined;
}

/**
 * One CSV cell (RFC 4180): quoted when it holds a quote, comma or line break; a text starting with
 * `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` so that a spreadsheet shows it
 * as text instead of running it as a formula. Numbers are written as they are.
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** What an export writes, read from the query parameters `format`, `columns` and `limit`. */
export interface ExportRequest {
  format: 'csv' | 'jsonl';
  columns: string[];
  limit: number;
}

/**
 * `format` (`csv`, default, or `jsonl`), `columns` (comma-separated names of
 * {@link EXPORT_COLUMNS}, CSV only), `limit` (1 to {@link MAX_EXPORT_ROWS}).
 *
 * @throws QueryError naming the bad parameter.
 */
export function parseExportRequest(query: Record<string, unknown>): ExportRequest {
  const read = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') throw new QueryError(`Parameter ${name} must be given once`);
    if (value.length > 1024) throw new QueryError(`Parameter ${name} is too long`);
    return value;
  };
  const format = read('format') ?? 'csv';
  if (format !== 'csv' && format !== 'jsonl') throw new QueryError('Parameter format must be csv or jsonl');
  const columns = (read('columns') ?? DEFAULT_EXPORT_COLUMNS.join(',')).split(',');
  for (const column of columns) {
    if (!Object.hasOwn(EXPORT_COLUMNS, column))
      throw new QueryError(`Parameter columns must be a comma-separated list of ${Object.keys(EXPORT_COLUMNS).join(', ')}`);
  }
  const limitText = read('limit');
  const limit = limitText === undefined ? DEFAULT_EXPORT_ROWS : /^\d{1,6}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_EXPORT_ROWS)) throw new QueryError(`Parameter limit must be an integer from 1 to ${MAX_EXPORT_ROWS}`);
  return { format, columns, limit };
}

/** Waits until the response can take more (backpressure), or rejects when the client went away. */
function drained(res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', gone);
      resolve();
    };
    const gone = (): void => {
      res.off('drain', done);
      reject(new Error('client went away'));
    };
    res.once('drain', done);
    res.once('close', gone);
  });
}

/**
 * Streams the export: the store's pages of the query, newest first, written as they come, until
 * `limit` rows or the last page. The status and headers go out with the first page: a store failure
 * after that cuts the response short (the client sees an incomplete download, never a wrong one).
 */
export async function streamExport(
  res: Response,
  store: TransactionStore,
  query: TransactionQuery,
  request: ExportRequest,
  now: Date = new Date(),
): Promise<void> {
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const first = await store.query({ ...query, limit: Math.min(MAX_PAGE_SIZE, request.limit) });
  res.status(200);
  res.setHeader('Content-Type', request.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="transactions-${stamp}.${request.format === 'csv' ? 'csv' : 'jsonl'}"`);
  const getters = request.columns.map((c) => EXPORT_COLUMNS[c]!);
  const line =
    request.format === 'csv'
      ? (r: TransactionRecord) => `${getters.map((get) => csvCell(get(r))).join(',')}\r\n`
      : (r: TransactionRecord) => `${JSON.stringify(r)}\n`;
  if (request.format === 'csv') res.write(`${request.columns.join(',')}\r\n`);
  let written = 0;
  let page = first;
  for (;;) {
    let chunk = '';
    for (const record of page.items) {
      if (written === request.limit) break;
      chunk += line(record);
      written++;
    }
    if (chunk !== '' && !res.write(chunk)) await drained(res);
    if (written === request.limit || page.next === undefined || res.destroyed) break;
    page = await store.query({ ...query, cursor: page.next, limit: Math.min(MAX_PAGE_SIZE, request.limit - written) });
  }
  res.end();
}
