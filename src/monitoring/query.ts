/**
 * Reads the console API's query parameters into a {@link TransactionQuery}.
 *
 * @module
 */
import { outcomeLabels, type OutcomeCode } from '../errors.js';
import { outcomeGroups, type OutcomeGroup } from '../record/outcome-groups.js';
import { MAX_STATS_BUCKETS } from '../record/stats.js';
import { MAX_PAGE_SIZE, type TransactionFilter, type TransactionQuery, type TransactionStatsQuery } from '../record/types.js';

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

/** The text filters, each read from the query parameter of the same name (`method` and `messageId` exact, the others case-insensitive prefixes). */
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
  'trafficPolicy',
] as const satisfies ReadonlyArray<keyof TransactionFilter>;

/** The {@link TransactionFilter} of the parameters (`from` and `to` aside). */
function parseFilter(query: Record<string, unknown>, result: TransactionFilter): void {
  // outcome=A or outcome=A,B,...; outcomeGroup=g or g,h: any of the outcomes given or in the groups.
  const outcomes = new Set<OutcomeCode>();
  const outcome = single(query, 'outcome');
  for (const code of outcome?.split(',') ?? []) {
    if (!Object.hasOwn(outcomeLabels, code))
      throw new QueryError(`Parameter outcome must be a comma-separated list of ${Object.keys(outcomeLabels).join(', ')}`);
    outcomes.add(code as OutcomeCode);
  }
  const group = single(query, 'outcomeGroup');
  for (const name of group?.split(',') ?? []) {
    if (!Object.hasOwn(outcomeGroups, name))
      throw new QueryError(`Parameter outcomeGroup must be a comma-separated list of ${Object.keys(outcomeGroups).join(', ')}`);
    for (const code of outcomeGroups[name as OutcomeGroup]) outcomes.add(code);
  }
  if (outcomes.size === 1 && group === undefined) result.outcome = [...outcomes][0]!;
  else if (outcomes.size > 0) result.outcomes = [...outcomes];
  for (const name of TEXT_FILTERS) {
    const value = single(query, name);
    if (value !== undefined) result[name] = name === 'method' ? value.toUpperCase() : value;
  }
  // status=404 or status=4xx (a class).
  const status = single(query, 'status');
  if (status !== undefined) {
    const klass = /^([1-5])xx$/i.exec(status);
    if (klass !== null) result.statusClass = Number(klass[1]);
    else if (/^[1-5]\d\d$/.test(status)) result.status = Number(status);
    else throw new QueryError('Parameter status must be a status (100-599) or a class (1xx-5xx)');
  }
  const minDuration = single(query, 'minDurationMs');
  if (minDuration !== undefined) {
    if (!/^\d{1,9}$/.test(minDuration)) throw new QueryError('Parameter minDurationMs must be a whole number of milliseconds');
    result.minDurationMs = Number(minDuration);
  }
  // claim=name=value: the first `=` separates them (a value may hold more).
  const claim = single(query, 'claim');
  if (claim !== undefined) {
    const at = claim.indexOf('=');
    if (at <= 0 || at === claim.length - 1) throw new QueryError('Parameter claim must be name=value');
    result.claim = { name: claim.slice(0, at), value: claim.slice(at + 1) };
  }
}

/**
 * `from`, `to` (ISO 8601 or epoch ms), `outcome` (outcome codes, comma-separated), `outcomeGroup`
 * (`success`, `token`, `denied`, `limited`, `gateway`, `backend`, comma-separated), `status` (`404` or a class
 * `4xx`), `minDurationMs`, `claim` (`name=value`), the text filters `api` (`provider/name/vN`),
 * `subject`, `clientId`, `nodeId`, `operation`, `gatewayStatus`, `username`, `issuer`,
 * `clientAddress`, `trafficPolicy` (case-insensitive prefixes), `method`, `messageId` (exact), `limit` (1-500), `cursor`.
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
