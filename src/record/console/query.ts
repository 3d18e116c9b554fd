/**
 * Reads the console API's query parameters into a {@link TransactionQuery}.
 *
 * @module
 */
import { outcomeLabels, type OutcomeCode } from '../../errors.js';
import { MAX_STATS_BUCKETS } from '../stats.js';
import { MAX_PAGE_SIZE, type TransactionFilter, type TransactionQuery, type TransactionStatsQuery } from '../types.js';

/** A query parameter the console API refuses. */
export class QueryError extends Error {
  override readonly name = 'QueryError';
}

function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new QueryError(`Parameter ${name} must be given once`);
  if (value.length > 512) throw new QueryError(`Parameter ${name} is too long`);
  return value === '' ? undefined : value;
}

function time(query: Record<string, unknown>, name: string): number | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new QueryError(`Parameter ${name} must be an ISO 8601 date-time or epoch milliseconds`);
  return ms;
}

function integer(query: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new QueryError(`Parameter ${name} must be an integer from ${min} to ${max}`);
  return n;
}

/** The text filters, each read from the query parameter of the same name. */
const TEXT_FILTERS = [
  'api',
  'subject',
  'clientId',
  'nodeId',
  'operation',
  'method',
  'gatewayStatus',
  'username',
  'issuer',
  'clientAddress',
  'messageId',
] as const satisfies ReadonlyArray<keyof TransactionFilter>;

/** The {@link TransactionFilter} of the parameters (`from` and `to` aside). */
function parseFilter(query: Record<string, unknown>, result: TransactionFilter): void {
  const outcome = single(query, 'outcome');
  if (outcome !== undefined) {
    if (!Object.hasOwn(outcomeLabels, outcome)) {
      throw new QueryError(`Parameter outcome must be one of ${Object.keys(outcomeLabels).join(', ')}`);
    }
    result.outcome = outcome as OutcomeCode;
  }
  for (const name of TEXT_FILTERS) {
    const value = single(query, name);
    if (value !== undefined) result[name] = value;
  }
  const status = integer(query, 'status', 100, 599);
  if (status !== undefined) result.status = status;
}

/**
 * `from`, `to` (ISO 8601 or epoch ms), `outcome` (an outcome code), `api` (`provider/name/vN`),
 * `subject`, `clientId`, `status`, `nodeId`, `operation`, `method`, `gatewayStatus`, `username`,
 * `issuer`, `clientAddress`, `messageId`, `limit` (1-500), `cursor`.
 *
 * @throws QueryError naming the bad parameter.
 */
export function parseTransactionQuery(query: Record<string, unknown>): TransactionQuery {
  const result: TransactionQuery = {};
  const from = time(query, 'from');
  const to = time(query, 'to');
  if (from !== undefined) result.from = from;
  if (to !== undefined) result.to = to;
  parseFilter(query, result);
  const cursor = single(query, 'cursor');
  if (cursor !== undefined) result.cursor = cursor;
  const limit = integer(query, 'limit', 1, MAX_PAGE_SIZE);
  if (limit !== undefined) result.limit = limit;
  return result;
}

/** Window of a statistics query without `from`: the hour before `to`. */
export const DEFAULT_STATS_WINDOW_MS = 60 * 60 * 1000;

/**
 * The parameters of a statistics query: the filters of {@link parseTransactionQuery} (no `limit`,
 * no `cursor`), `from` and `to` (default: the hour up to now), `bucketMs` (whole milliseconds;
 * default chosen by the store).
 *
 * @throws QueryError naming the bad parameter (a window with more than 1,000 buckets included).
 */
export function parseTransactionStatsQuery(query: Record<string, unknown>, now: number = Date.now()): TransactionStatsQuery {
  const to = time(query, 'to') ?? now;
  const from = time(query, 'from') ?? to - DEFAULT_STATS_WINDOW_MS;
  if (from > to) throw new QueryError('Parameter from must not be after to');
  const result: TransactionStatsQuery = { from, to };
  parseFilter(query, result);
  const bucketMs = single(query, 'bucketMs');
  if (bucketMs !== undefined) {
    const n = /^\d{1,12}$/.test(bucketMs) ? Number(bucketMs) : NaN;
    if (!(n >= 1)) throw new QueryError('Parameter bucketMs must be a positive integer (milliseconds)');
    if (Math.floor(to / n) - Math.floor(from / n) + 1 > MAX_STATS_BUCKETS) {
      throw new QueryError(`Parameter bucketMs is too small for the window (more than ${MAX_STATS_BUCKETS} buckets)`);
    }
    result.bucketMs = n;
  }
  return result;
}
