/**
 * The tables of the gateway's PostgreSQL stores: names, advisory lock keys, and the versioned
 * migrations that create and upgrade a table, applied once whatever the number of processes
 * starting together.
 *
 * @module
 */
import type { PgClientLike, PgPoolLike } from './pool.js';

/** A schema or table name a store accepts: a plain SQL identifier (always quoted in SQL). */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Longest table name: the names derived from it (`<table>_schema_version`, index names) must fit in 63 bytes. */
export const MAX_TABLE_LENGTH = 40;

/** The quoted names of a store's objects. */
export interface TableNames {
  /** `"schema"."table"`. */
  readonly table: string;
  /** `"schema"."<table>_schema_version"`. */
  readonly versions: string;
  /** `"schema"`. */
  readonly schema: string;
  /** The unquoted schema name. */
  readonly bareSchema: string;
  /** The unquoted table name, prefix of index names. */
  readonly bare: string;
  /** Key of the table's advisory locks (see {@link lockKey}). */
  readonly key: number;
}

/** `name` as a quoted SQL identifier. */
export function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The names of `schema`.`table`. */
export function tableNames(schema: string, table: string): TableNames {
  return {
    table: `${quote(schema)}.${quote(table)}`,
    versions: `${quote(schema)}.${quote(`${table}_schema_version`)}`,
    schema: quote(schema),
    bareSchema: schema,
    bare: table,
    key: lockKey(`${schema}.${table}`),
  };
}

/** A stable 32-bit signed key for `text` (FNV-1a): the same in every process and release. */
export function lockKey(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

/** First half of the advisory lock keys: which job holds the lock (the second half is the table's key). */
export const LOCK_CLASS = {
  migrate: lockKey('express-access-gateway:migrate'),
  retention: lockKey('express-access-gateway:retention'),
} as const;

/** One schema version: statements run in order, in the migration's transaction. */
export interface Migration {
  readonly version: number;
  readonly statements: (names: TableNames) => string[];
}

/**
 * Creates or upgrades the table: in one transaction holding the table's advisory lock, so that
 * processes starting together apply each version once; a process finding the work done does
 * nothing. Returns the versions it applied.
 */
export async function runMigrations(pool: PgPoolLike, names: TableNames, migrations: readonly Migration[]): Promise<number[]> {
  const latest = migrations[migrations.length - 1]!.version;
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    // Already up to date (the usual start): no transaction, no lock.
    if ((await currentVersion(client, names)) >= latest) return [];
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS.migrate, names.key]);
      // Only when missing: CREATE SCHEMA needs a privilege on the database that the store's user may lack.
      const schema = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [names.bareSchema]);
      if (schema.rows.length === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${names.schema}`);
      await client.query(versionTableSql(names));
      const from = await currentVersion(client, names);
      const applied: number[] = [];
      for (const migration of migrations) {
        if (migration.version <= from) continue;
        for (const statement of migration.statements(names)) await client.query(statement);
        await client.query(`INSERT INTO ${names.versions} (version) VALUES ($1)`, [migration.version]);
        applied.push(migration.version);
      }
      await client.query('COMMIT');
      return applied;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  } catch (error) {
    broken = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(broken);
  }
}

/** The table of the versions applied. */
function versionTableSql(names: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${names.versions} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * The SQL that creates the table by hand as {@link runMigrations} would on an empty schema: the
 * version table, every migration's statements, and the versions recorded (for a DBA who creates it
 * rather than granting `CREATE` to the store's user; docs/deployment.md shows it).
 */
export function creationSql(names: TableNames, migrations: readonly Migration[]): string {
  return [
    versionTableSql(names),
    ...migrations.flatMap((m) => m.statements(names)),
    `INSERT INTO ${names.versions} (version) VALUES ${migrations.map((m) => `(${m.version})`).join(', ')}`,
  ]
    .map((statement) => `${statement};`)
    .join('\n');
}

/** The latest version applied, 0 when the version table does not exist yet. */
async function currentVersion(client: PgClientLike, names: TableNames): Promise<number> {
  const exists = await client.query('SELECT to_regclass($1) AS t', [names.versions]);
  if (exists.rows[0]?.['t'] === null || exists.rows[0]?.['t'] === undefined) return 0;
  const { rows } = await client.query(`SELECT coalesce(max(version), 0) AS v FROM ${names.versions}`);
  return Number(rows[0]?.['v'] ?? 0);
}
