/**
 * The records table: its versioned migrations (see `postgres/schema.ts` for how they are applied).
 *
 * @module
 */
import type { PgPoolLike } from '../../postgres/pool.js';
import { creationSql, quote, runMigrations, type Migration, type TableNames } from '../../postgres/schema.js';

/** The versions of the table, oldest first. Add new versions at the end; never edit a released one. */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: (n) => [
      `CREATE TABLE IF NOT EXISTS ${n.table} (
  seq bigserial NOT NULL,
  id text PRIMARY KEY,
  message_id text NOT NULL,
  started_at timestamptz NOT NULL,
  ended_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  node_id text,
  api text,
  operation text,
  method text NOT NULL,
  status smallint,
  outcome text NOT NULL,
  gateway_status text,
  subject text,
  client_id text,
  username text,
  issuer text,
  client_address text,
  record jsonb NOT NULL
)`,
      `CREATE UNIQUE INDEX IF NOT EXISTS ${quote(`${n.bare}_seq_idx`)} ON ${n.table} (seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_started_at_idx`)} ON ${n.table} (started_at)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_outcome_started_at_idx`)} ON ${n.table} (outcome, started_at)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_api_idx`)} ON ${n.table} (api, seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_subject_idx`)} ON ${n.table} (subject, seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_client_id_idx`)} ON ${n.table} (client_id, seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_node_id_idx`)} ON ${n.table} (node_id, seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_status_idx`)} ON ${n.table} (status, seq)`,
      `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_message_id_idx`)} ON ${n.table} (message_id)`,
    ],
  },
  {
    // Text filters match case-insensitively by prefix (lower(column) LIKE 'prefix%'): indexes on
    // lower(column) with text_pattern_ops replace the equality ones of version 1.
    version: 2,
    statements: (n) => [
      ...['api', 'subject', 'client_id', 'node_id'].map((c) => `DROP INDEX IF EXISTS ${n.schema}.${quote(`${n.bare}_${c}_idx`)}`),
      ...PREFIX_INDEXED.map(
        (c) => `CREATE INDEX IF NOT EXISTS ${quote(`${n.bare}_${c}_prefix_idx`)} ON ${n.table} (lower(${c}) text_pattern_ops)`,
      ),
    ],
  },
  {
    // lz4 rather than the default pglz for the record's jsonb: about 15% less database CPU per
    // insert (measured with the gateway's records). A server without it (before PostgreSQL 14, or
    // built without lz4) keeps pglz; EXECUTE, so that such a server never parses the statement.
    version: 3,
    statements: (n) => [
      `DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN ` +
        `EXECUTE 'ALTER TABLE ${n.table} ALTER COLUMN record SET COMPRESSION lz4'; END IF; END $$`,
    ],
  },
];

/** Columns with a case-insensitive prefix index (version 2). */
export const PREFIX_INDEXED = ['api', 'operation', 'subject', 'client_id', 'username', 'client_address', 'node_id'] as const;

/** The schema version this release writes. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The SQL that creates the records table by hand, as `migrate` would (docs/deployment.md). */
export function recordsTableSql(names: TableNames): string {
  return creationSql(names, MIGRATIONS);
}

/**
 * Creates or upgrades the records table (once, whatever the number of processes starting
 * together). Returns the versions it applied.
 */
export function migrate(pool: PgPoolLike, names: TableNames): Promise<number[]> {
  return runMigrations(pool, names, MIGRATIONS);
}
