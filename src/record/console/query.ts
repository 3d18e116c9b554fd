/**
 * Reads the console API's query parameters into a {@link TransactionQuery}.
 *
 * @module
 */
import { outcomeLabels, type OutcomeCode } from '../../errors.js';
import { MAX_PAGE_SIZE, type TransactionQuery } from '../types.js';

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

/**
 * `from`, `to` (ISO 8601 or epoch ms), `outcome` (an outcome code), `api` (`provider/name/vN`),
 * `subject`, `clientId`, `status`, `limit` (1-500), `cursor`.
 *
 * @throws QueryError naming the bad parameter.
 */
export function parseTransactionQuery(query: Record<string, unknown>): TransactionQuery {
  const result: TransactionQuery = {};
  const from = time(query, 'from');
  const to = time(query, 'to');
  if (from !== undefined) result.from = from;
  if (to !== undefined) result.to = to;
  const outcome = single(query, 'outcome');
  if (outcome !== undefined) {
    if (!Object.hasOwn(outcomeLabels, outcome)) {
      throw new QueryError(`Parameter outcome must be one of ${Object.keys(outcomeLabels).join(', ')}`);
    }
    result.outcome = outcome as OutcomeCode;
  }
  for (const name of ['api', 'subject', 'clientId', 'cursor'] as const) {
    const value = single(query, name);
    if (value !== undefined) result[name] = value;
  }
  const status = integer(query, 'status', 100, 599);
  if (status !== undefined) result.status = status;
  const limit = integer(query, 'limit', 1, MAX_PAGE_SIZE);
  if (limit !== undefined) result.limit = limit;
  return result;
}
