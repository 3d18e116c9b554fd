/**
 * docs/deployment.md shows the SQL a DBA runs to create the records and configuration tables by
 * hand: it must be what the stores run, and a table created with it must be one the stores accept
 * as it is (nothing left to migrate).
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type pg from 'pg';
import { tableNames } from '../../src/postgres/schema.js';
import { recordsTableSql } from '../../src/record/postgres/schema.js';
import { configurationTableSql, PostgresConfigSource } from '../../src/configuration/postgres-source.js';
import { PostgresTransactionStore } from '../../src/record/postgres/index.js';
import { makeRecord } from '../record/helpers.js';
import { adminPool, databaseUrl, dropSchema, removeFile, spillPath, testSchema } from '../postgres/helpers.js';

/** The ```sql block of docs/deployment.md under the heading `heading`. */
async function sqlUnder(heading: string): Promise<string> {
  const page = await readFile(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
  const start = page.indexOf(`\n## ${heading}\n`);
  expect(start, heading).to.be.above(-1);
  const block = /```sql\n([\s\S]*?)```/.exec(page.slice(start));
  return block![1]!.trim();
}

describe('docs/deployment.md: the SQL of the tables', () => {
  const schema = testSchema();
  let admin: pg.Pool;
  const spillFile = spillPath();

  before(() => {
    admin = adminPool();
  });
  after(async () => {
    await dropSchema(admin, schema);
    await admin.end();
    await removeFile(spillFile);
  });

  it('shows the SQL the stores run, every version of each table', async () => {
    expect(await sqlUnder('The records table')).to.equal(recordsTableSql(tableNames('public', 'gateway_transactions')));
    expect(await sqlUnder('The configuration table')).to.equal(configurationTableSql(tableNames('public', 'gateway_configuration')));
  });

  it('a records table created by hand with it is taken as it is, and records go in and out', async () => {
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.query(recordsTableSql(tableNames(schema, 'gateway_transactions')));
    const store = await PostgresTransactionStore.create({ connectionString: databaseUrl(), schema, spillFile, retentionDays: 0 });
    try {
      const versions = await admin.query(`SELECT version FROM "${schema}".gateway_transactions_schema_version ORDER BY version`);
      expect(versions.rows.map((r: { version: number }) => r.version)).to.deep.equal([1, 2, 3]);
      const record = makeRecord();
      store.save(record);
      await store.flush();
      expect((await store.get(record.id))?.id).to.equal(record.id);
    } finally {
      await store.close();
    }
  });

  it('a configuration table created by hand with it is taken as it is', async () => {
    await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await admin.query(configurationTableSql(tableNames(schema, 'gateway_configuration')));
    const source = await PostgresConfigSource.create({ connectionString: databaseUrl(), schema });
    try {
      const versions = await admin.query(`SELECT version FROM "${schema}".gateway_configuration_schema_version`);
      expect(versions.rows).to.deep.equal([{ version: 1 }]);
      expect((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".gateway_configuration`)).rows[0].n).to.equal(0);
    } finally {
      await source.close();
    }
  });
});
