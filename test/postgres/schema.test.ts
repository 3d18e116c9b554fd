/**
 * What the PostgreSQL stores share (src/postgres/): names, advisory lock keys, versioned migrations
 * run once by processes starting together, the hand-written creation SQL, and what a failed
 * statement means. The stores' own tests (test/record/postgres/, test/configuration/) go through
 * these with their tables; here they run on a table of their own.
 */
import { expect } from 'chai';
import type pg from 'pg';
import {
  describe as describeFailure,
  isRecordRefused,
  isSchemaMissing,
  QueryTimeoutError,
  withTimeout,
} from '../../src/postgres/failure.js';
import { creationSql, lockKey, quote, runMigrations, tableNames, type Migration } from '../../src/postgres/schema.js';
import { adminPool, dropSchema, testSchema } from './helpers.js';

const MIGRATIONS: readonly Migration[] = [
  { version: 1, statements: (names) => [`CREATE TABLE ${names.table} (id text PRIMARY KEY)`] },
  { version: 2, statements: (names) => [`ALTER TABLE ${names.table} ADD COLUMN note text`] },
];

describe('postgres: names, migrations, failures', () => {
  let pool: pg.Pool;
  const schemas: string[] = [];

  before(() => {
    pool = adminPool();
  });

  after(async () => {
    for (const schema of schemas) await dropSchema(pool, schema);
    await pool.end();
  });

  function freshNames(): ReturnType<typeof tableNames> {
    const schema = testSchema();
    schemas.push(schema);
    return tableNames(schema, 'things');
  }

  it('quotes names, and keys advisory locks the same in every process', () => {
    expect(quote('a"b')).to.equal('"a""b"');
    const names = tableNames('s', 't');
    expect(names).to.include({ table: '"s"."t"', versions: '"s"."t_schema_version"', schema: '"s"', bareSchema: 's', bare: 't' });
    expect(names.key).to.equal(lockKey('s.t'));
    // FNV-1a of the empty text: a stable value, a signed 32-bit integer.
    expect(lockKey('')).to.equal(0x811c9dc5 | 0);
    expect(lockKey('s.t')).to.be.within(-(2 ** 31), 2 ** 31 - 1);
  });

  it('applies each version once, in order, and does nothing when the table is up to date', async () => {
    const names = freshNames();
    expect(await runMigrations(pool, names, MIGRATIONS.slice(0, 1))).to.deep.equal([1]);
    expect(await runMigrations(pool, names, MIGRATIONS)).to.deep.equal([2]);
    expect(await runMigrations(pool, names, MIGRATIONS)).to.deep.equal([]);
    const { rows } = await pool.query(`SELECT version FROM ${names.versions} ORDER BY version`);
    expect(rows.map((row: { version: number }) => row.version)).to.deep.equal([1, 2]);
    await pool.query(`INSERT INTO ${names.table} (id, note) VALUES ('a', 'b')`);
  });

  it('applies a version once when several processes start together', async () => {
    const names = freshNames();
    const applied = await Promise.all([1, 2, 3, 4].map(() => runMigrations(pool, names, MIGRATIONS)));
    expect(applied.flat().sort()).to.deep.equal([1, 2]);
  });

  it('writes the creation SQL a DBA can run by hand, equal to what the migrations make', async () => {
    const names = freshNames();
    await pool.query(`CREATE SCHEMA ${names.schema}`);
    const sql = creationSql(names, MIGRATIONS);
    expect(sql.split('\n').every((line) => line.endsWith(';'))).to.equal(true);
    await pool.query(sql);
    expect(await runMigrations(pool, names, MIGRATIONS)).to.deep.equal([]);
  });

  it('tells a statement the server refused from a database that is unusable for now', async () => {
    const refused = await pool.query("SELECT 'x'::integer").catch((error: unknown) => error);
    expect(isRecordRefused(refused)).to.equal(true);
    expect(isSchemaMissing(refused)).to.equal(false);
    const missing = await pool.query(`SELECT 1 FROM ${quote(testSchema())}.nothing`).catch((error: unknown) => error);
    expect(isSchemaMissing(missing)).to.equal(true);
    expect(isRecordRefused(missing)).to.equal(false);
    expect(describeFailure(missing)).to.match(/\(SQLSTATE 42P01\)$/);
    expect(isRecordRefused(new Error('connection refused'))).to.equal(false);
  });

  it('gives up waiting on a statement after its timeout', async () => {
    const hung = new Promise<never>(() => undefined);
    const error = await withTimeout(hung, 20, 'insert').catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(QueryTimeoutError);
    expect((error as QueryTimeoutError).code).to.equal('ERR_PG_QUERY_TIMEOUT');
    expect(await withTimeout(Promise.resolve(7), 1000, 'select')).to.equal(7);
  });
});
