/**
 * Where a PostgreSQL store keeps its table: a connection string (the store makes its own pool) or a
 * host's pool, a schema and a table name, checked the same way for every store.
 *
 * @module
 */
import type { OptionChecks } from '../options.js';
import type { PgPoolLike } from './pool.js';
import { IDENTIFIER, MAX_TABLE_LENGTH } from './schema.js';

/** The connection options every PostgreSQL store takes. */
export interface PostgresConnectionOptions {
  connectionString?: string;
  pool?: PgPoolLike | object;
  schema?: string;
  table?: string;
}

/** A store's connection, its options checked. */
export interface PostgresConnection {
  readonly connectionString: string | undefined;
  readonly pool: PgPoolLike | undefined;
  readonly schema: string;
  readonly table: string;
}

/** Checks the connection options of a store whose table is `defaultTable` unless given. */
export function postgresConnection(check: OptionChecks, options: PostgresConnectionOptions, defaultTable: string): PostgresConnection {
  const { connectionString, pool } = options;
  if ((connectionString === undefined) === (pool === undefined)) check.fail('', 'needs connectionString or pool (one of them)');
  if (connectionString !== undefined) check.string(connectionString, 'connectionString');
  if (pool !== undefined) {
    const p = pool as unknown as Record<string, unknown>;
    if (
      p === null ||
      typeof p !== 'object' ||
      typeof p['query'] !== 'function' ||
      typeof p['connect'] !== 'function' ||
      typeof p['end'] !== 'function'
    ) {
      check.fail('pool', 'must be a pg.Pool (query, connect, end)');
    }
  }
  const schema = check.string(
    options.schema,
    'schema',
    'public',
    /^[A-Za-z_][A-Za-z0-9_]{0,62}$/,
    'an SQL identifier (letters, digits, _)',
  );
  const table = check.string(options.table, 'table', defaultTable, IDENTIFIER, 'an SQL identifier (letters, digits, _)');
  if (table.length > MAX_TABLE_LENGTH) check.fail('table', `must be at most ${MAX_TABLE_LENGTH} characters`);
  return { connectionString, pool: pool as PgPoolLike | undefined, schema, table };
}
