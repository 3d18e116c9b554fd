/**
 * Retention: rows older than the configured days are deleted in slices, by one process at a time.
 *
 * @module
 */
import type { PgPoolLike } from '../../postgres/pool.js';
import { purgeSql } from './queries.js';
import { LOCK_CLASS, type TableNames } from '../../postgres/schema.js';

/** Rows deleted by one statement: short transactions, no long lock on the table. */
export const PURGE_SLICE = 5000;

/**
 * Deletes the rows started more than `days` days ago, in slices of {@link PURGE_SLICE}, holding the
 * table's retention lock; returns the rows deleted, or `undefined` when another process holds the
 * lock (it is doing the same work).
 */
export async function purgeOld(pool: PgPoolLike, names: TableNames, days: number): Promise<number | undefined> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const { rows } = await client.query('SELECT pg_try_advisory_lock($1, $2) AS locked', [LOCK_CLASS.retention, names.key]);
    if (rows[0]?.['locked'] !== true) return undefined;
    try {
      let total = 0;
      for (;;) {
        const { rowCount } = await client.query(purgeSql(names), [days, PURGE_SLICE]);
        total += rowCount ?? 0;
        if ((rowCount ?? 0) < PURGE_SLICE) return total;
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS.retention, names.key]);
    }
  } catch (error) {
    // A session lock dies with its connection: a client that failed is not given back to the pool.
    broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(broken);
  }
}
