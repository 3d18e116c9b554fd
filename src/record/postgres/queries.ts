/**
 * The statements of the store: batch insert, page and statistics reads, retention.
 *
 * @module
 */
import type { OutcomeCode } from '../../errors.js';
import { addCount, emptyBuckets, TOP_DIMENSIONS, type StatsWindow } from '../stats.js';
import { STATS_TOP_SIZE, type TransactionFilter, type TransactionStats, type TransactionStatsTop } from '../types.js';
import { ROW_COLUMNS } from './rows.js';
import type { TableNames } from '../../postgres/schema.js';

/**
 * One multi-row insert of a JSON array of records (one parameter, whatever the batch size), in the
 * array's order so that `seq` follows it; a row whose id is already stored is skipped (a replay
 * never duplicates).
 */
export function insertSql(names: TableNames): string {
  const columns = Object.keys(ROW_COLUMNS);
  return (
    `INSERT INTO ${names.table} (${columns.join(', ')}) ` +
    `SELECT ${Object.values(ROW_COLUMNS).join(', ')} ` +
    `FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(r, n) ` +
    `ORDER BY e.n ON CONFLICT (id) DO NOTHING`
  );
}

/** The equality filters and their columns. */
const EQUALS: ReadonlyArray<readonly [keyof TransactionFilter, string]> = [
  ['outcome', 'outcome'],
  ['status', 'status'],
  ['method', 'method'],
  ['messageId', 'message_id'],
];

/** The text filters (case-insensitive prefix) and their columns. */
const PREFIXES: ReadonlyArray<readonly [keyof TransactionFilter, string]> = [
  ['api', 'api'],
  ['subject', 'subject'],
  ['clientId', 'client_id'],
  ['nodeId', 'node_id'],
  ['operation', 'operation'],
  ['gatewayStatus', 'gateway_status'],
  ['username', 'username'],
  ['issuer', 'issuer'],
  ['clientAddress', 'client_address'],
];

/** The LIKE pattern of a case-insensitive prefix: lower case, `\`, `%` and `_` escaped, `%` appended. */
export function prefixPattern(prefix: string): string {
  return `${prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Whether a claim of the introspection, JWT or UserInfo claims (name `$<name>`) has a value, or an
 * array item, whose text starts with the pattern `$<pattern>` (case-insensitive).
 */
function claimClause(name: string, pattern: string): string {
  return (
    `EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(record->'tokenInfo') = 'object' THEN record->'tokenInfo' ELSE '{}'::jsonb END) AS s(k, v) ` +
    `CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(v) <> 'object' THEN '[]'::jsonb ` +
    `WHEN jsonb_typeof(v->${name}) = 'array' THEN v->${name} WHEN v ? ${name} THEN jsonb_build_array(v->${name}) ELSE '[]'::jsonb END) AS e(x) ` +
    `WHERE s.k IN ('introspection', 'jwt', 'userInfo') AND lower(x #>> '{}') LIKE ${pattern} ESCAPE '\\')`
  );
}

/** Whether a traffic policy of the record (`traffic.policies[].policy`) starts with the pattern `$<pattern>` (case-insensitive). */
function trafficPolicyClause(pattern: string): string {
  return (
    `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(record->'traffic'->'policies') = 'array' ` +
    `THEN record->'traffic'->'policies' ELSE '[]'::jsonb END) AS t(p) WHERE lower(p->>'policy') LIKE ${pattern} ESCAPE '\\')`
  );
}

/** A WHERE clause (or `''`) and its parameters. */
export interface Where {
  sql: string;
  values: unknown[];
}

function time(value: unknown, name: string): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`Invalid filter ${name}: epoch milliseconds expected`);
  return new Date(value).toISOString();
}

/**
 * The WHERE clause of a filter (every field given must match), parameters from `$<first>` on.
 *
 * @throws TypeError on a filter value of the wrong type.
 */
export function whereOf(filter: TransactionFilter, extra: string[] = [], values: unknown[] = []): Where {
  const clauses = [...extra];
  const add = (clause: (p: string) => string, value: unknown): void => {
    values.push(value);
    clauses.push(clause(`$${values.length}`));
  };
  if (filter.from !== undefined) add((p) => `started_at >= ${p}::timestamptz`, time(filter.from, 'from'));
  if (filter.to !== undefined) add((p) => `started_at <= ${p}::timestamptz`, time(filter.to, 'to'));
  for (const [field, column] of EQUALS) {
    const value = filter[field];
    if (value === undefined) continue;
    if (field === 'status' ? !Number.isSafeInteger(value) : typeof value !== 'string') throw new TypeError(`Invalid filter ${field}`);
    add((p) => `${column} = ${p}`, value);
  }
  for (const [field, column] of PREFIXES) {
    const value = filter[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new TypeError(`Invalid filter ${field}`);
    add((p) => `lower(${column}) LIKE ${p} ESCAPE '\\'`, prefixPattern(value));
  }
  if (filter.outcomes !== undefined) {
    if (!Array.isArray(filter.outcomes) || filter.outcomes.some((o) => typeof o !== 'string'))
      throw new TypeError('Invalid filter outcomes');
    add((p) => `outcome = ANY(${p}::text[])`, [...filter.outcomes]);
  }
  if (filter.statusClass !== undefined) {
    const c = filter.statusClass;
    if (!Number.isSafeInteger(c)) throw new TypeError('Invalid filter statusClass');
    add((p) => `status >= ${p}::int * 100`, c);
    add((p) => `status < ${p}::int * 100 + 100`, c);
  }
  if (filter.minDurationMs !== undefined) {
    if (typeof filter.minDurationMs !== 'number' || !Number.isFinite(filter.minDurationMs))
      throw new TypeError('Invalid filter minDurationMs');
    add((p) => `duration_ms >= ${p}::float8`, filter.minDurationMs);
  }
  if (filter.claim !== undefined) {
    const { name, value } = filter.claim ?? {};
    if (typeof name !== 'string' || typeof value !== 'string') throw new TypeError('Invalid filter claim');
    values.push(name, prefixPattern(value));
    clauses.push(claimClause(`$${values.length - 1}::text`, `$${values.length}`));
  }
  if (filter.trafficPolicy !== undefined) {
    if (typeof filter.trafficPolicy !== 'string') throw new TypeError('Invalid filter trafficPolicy');
    add(trafficPolicyClause, prefixPattern(filter.trafficPolicy));
  }
  return { sql: clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`, values };
}

/** One page, newest first: `limit + 1` rows tell whether there is a next page. */
export function pageSql(names: TableNames, filter: TransactionFilter, before: string | undefined, limit: number): Where {
  const values: unknown[] = [];
  const extra: string[] = [];
  if (before !== undefined) {
    values.push(before);
    extra.push('seq < $1::bigint');
  }
  const where = whereOf(filter, extra, values);
  where.values.push(limit + 1);
  return {
    sql: `SELECT seq::text AS cursor, record FROM ${names.table} ${where.sql} ORDER BY seq DESC LIMIT $${where.values.length}`,
    values: where.values,
  };
}

/** Counts by bucket (epoch-aligned, as `bucketStart` computes it) and outcome. */
export function bucketSql(names: TableNames, filter: TransactionFilter, window: StatsWindow): Where {
  const where = whereOf({ ...filter, from: window.from, to: window.to });
  where.values.push(window.bucketMs);
  const b = `$${where.values.length}::numeric`;
  // Milliseconds since the epoch, exactly (round: older servers give extract() as a double).
  const ms = `round(extract(epoch FROM started_at) * 1000)::numeric`;
  return {
    sql: `SELECT (floor(${ms} / ${b}) * ${b})::text AS bucket, outcome, count(*)::text AS n FROM ${names.table} ${where.sql} GROUP BY 1, 2`,
    values: where.values,
  };
}

/** Count, mean and 95th percentile of the durations over the window. */
export function summarySql(names: TableNames, filter: TransactionFilter, window: StatsWindow): Where {
  const where = whereOf({ ...filter, from: window.from, to: window.to });
  return {
    sql:
      `SELECT count(*)::text AS n, avg(duration_ms)::float8 AS mean, ` +
      `percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95 FROM ${names.table} ${where.sql}`,
    values: where.values,
  };
}

/** Column of each top dimension. */
const TOP_COLUMNS: Readonly<Record<(typeof TOP_DIMENSIONS)[number], string>> = {
  api: 'api',
  operation: 'operation',
  clientId: 'client_id',
  status: 'status::text',
  gatewayStatus: 'gateway_status',
};

/**
 * The most frequent values of each top dimension over the window: one scan grouped by grouping
 * sets, ranked per dimension (most records first, ties by value in code-point order).
 */
export function topSql(names: TableNames, filter: TransactionFilter, window: StatsWindow): Where {
  const where = whereOf({ ...filter, from: window.from, to: window.to });
  const sets = TOP_DIMENSIONS.map((d) => `(${TOP_COLUMNS[d]})`).join(', ');
  const dimension = `CASE ${TOP_DIMENSIONS.map((d) => `WHEN grouping(${TOP_COLUMNS[d]}) = 0 THEN '${d}'`).join(' ')} END`;
  const value = `coalesce(${TOP_DIMENSIONS.map((d) => TOP_COLUMNS[d]).join(', ')})`;
  return {
    sql:
      `SELECT dimension, value, n::text AS n FROM (` +
      `SELECT dimension, value, n, row_number() OVER (PARTITION BY dimension ORDER BY n DESC, value COLLATE "C") AS r FROM (` +
      `SELECT ${dimension} AS dimension, ${value} AS value, count(*) AS n FROM ${names.table} ${where.sql} GROUP BY GROUPING SETS (${sets})` +
      `) g WHERE value IS NOT NULL) ranked WHERE r <= ${STATS_TOP_SIZE} ORDER BY dimension, r`,
    values: where.values,
  };
}

/** The {@link TransactionStatsTop} of the rows of {@link topSql}. */
export function topOfRows(rows: Array<Record<string, unknown>>): TransactionStatsTop {
  const top = Object.fromEntries(TOP_DIMENSIONS.map((d) => [d, []])) as unknown as TransactionStatsTop;
  for (const row of rows) {
    const list = top[row['dimension'] as keyof TransactionStatsTop];
    if (list !== undefined) list.push({ value: String(row['value']), count: Number(row['n']) });
  }
  return top;
}

/** The statistics of a window from the rows of {@link bucketSql} and {@link summarySql}. */
export function statsOf(
  window: StatsWindow,
  bucketRows: Array<Record<string, unknown>>,
  summary: Record<string, unknown> | undefined,
): TransactionStats {
  const buckets = emptyBuckets(window);
  const byOutcome: TransactionStats['totals']['byOutcome'] = {};
  for (const row of bucketRows) {
    const start = Number(row['bucket']);
    const outcome = row['outcome'] as OutcomeCode;
    const n = Number(row['n']);
    const bucket = buckets[(start - window.first) / window.bucketMs];
    if (bucket !== undefined) addCount(bucket.counts, outcome, n);
    addCount(byOutcome, outcome, n);
  }
  const count = Number(summary?.['n'] ?? 0);
  const number = (value: unknown): number | null => (count === 0 || value === null || value === undefined ? null : Number(value));
  return {
    from: window.from,
    to: window.to,
    bucketMs: window.bucketMs,
    buckets,
    totals: { count, byOutcome, meanDurationMs: number(summary?.['mean']), p95DurationMs: number(summary?.['p95']) },
  };
}

/** Deletes one slice of the rows started before the cutoff (`$1`, days), at most `$2` rows. */
export function purgeSql(names: TableNames): string {
  return (
    `DELETE FROM ${names.table} WHERE id IN (SELECT id FROM ${names.table} ` +
    `WHERE started_at < now() - make_interval(days => $1::int) LIMIT $2::int)`
  );
}
