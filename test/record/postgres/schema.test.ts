import { expect } from 'chai';
import type pg from 'pg';
import { PostgresTransactionStore, type PgPoolLike } from '../../../src/record/postgres/index.js';
import { makeRecord } from '../helpers.js';
import { adminPool, databaseUrl, dropSchema, removeFile, spillPath, testSchema } from '../../postgres/helpers.js';

describe('PostgresTransactionStore: options and table', () => {
  const schema = testSchema();
  let admin: pg.Pool;
  const spills: string[] = [];
  const options = () => {
    const spillFile = spillPath();
    spills.push(spillFile);
    return { connectionString: databaseUrl(), schema, spillFile, retentionDays: 0 };
  };

  before(() => {
    admin = adminPool();
  });
  after(async () => {
    await dropSchema(admin, schema);
    await admin.end();
    for (const file of spills) await removeFile(file);
  });

  it('checks its options at construction', () => {
    const url = databaseUrl();
    const fails = (o: object, pattern: RegExp) =>
      expect(() => new PostgresTransactionStore(o as never))
        .to.throw(TypeError, pattern)
        .with.property('code', 'ERR_INVALID_OPTION');
    fails({}, /^PostgresTransactionStore: options needs connectionString or pool/);
    fails({ connectionString: url, pool: {} }, /needs connectionString or pool/);
    fails({ pool: { query: () => undefined } }, /^PostgresTransactionStore: options\.pool must be a pg\.Pool/);
    fails({ connectionString: url, schema: 'a-b' }, /options\.schema must be an SQL identifier/);
    fails({ connectionString: url, table: 'x'.repeat(41) }, /options\.table must be at most 40 characters/);
    fails({ connectionString: url, table: 'drop table;' }, /options\.table/);
    fails({ connectionString: url, batchSize: 0 }, /options\.batchSize must be a positive integer/);
    fails({ connectionString: url, batchSize: 500, maxQueue: 100 }, /options\.maxQueue must be at least batchSize/);
    fails({ connectionString: url, retentionDays: -1 }, /options\.retentionDays/);
    fails({ connectionString: url, retentionDays: 1.5 }, /options\.retentionDays/);
    fails({ connectionString: url, maxSpillBytes: 0 }, /options\.maxSpillBytes/);
    fails({ connectionString: url, nodeId: '' }, /options\.nodeId/);
    fails({ connectionString: url, queryTimeoutMs: 'soon' }, /options\.queryTimeoutMs/);
  });

  it('refuses a spill file another store of the process uses', async () => {
    const first = new PostgresTransactionStore(options());
    try {
      expect(() => new PostgresTransactionStore({ connectionString: databaseUrl(), spillFile: first.spillFile })).to.throw(
        TypeError,
        /options\.spillFile is in use by another PostgresTransactionStore/,
      );
    } finally {
      await first.close();
    }
    // Free again once closed.
    const second = new PostgresTransactionStore({ ...options(), spillFile: first.spillFile });
    await second.close();
  });

  it('creates its table once when several processes start together, and again finds it ready', async () => {
    const stores = await Promise.all([1, 2, 3].map(() => PostgresTransactionStore.create(options())));
    try {
      const versions = await admin.query(`SELECT version FROM "${schema}".gateway_transactions_schema_version`);
      expect(versions.rows).to.deep.equal([{ version: 1 }, { version: 2 }, { version: 3 }]);
      const again = await PostgresTransactionStore.create(options());
      await again.ready();
      await again.close();
      expect((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".gateway_transactions_schema_version`)).rows[0].n).to.equal(3);
      // Version 3: the record compressed with lz4 where the server has it, pglz (the default) where not.
      const lz4 =
        (await admin.query(`SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)`)).rows.length ===
        1;
      const compression = await admin.query(
        `SELECT attcompression::text AS c FROM pg_attribute WHERE attrelid = '"${schema}".gateway_transactions'::regclass AND attname = 'record'`,
      );
      expect(compression.rows[0].c).to.equal(lz4 ? 'l' : '');

      const columns = await admin.query(
        `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'gateway_transactions' ORDER BY ordinal_position`,
        [schema],
      );
      expect(columns.rows.map((c: { column_name: string }) => c.column_name)).to.deep.equal([
        'seq',
        'id',
        'message_id',
        'started_at',
        'ended_at',
        'duration_ms',
        'node_id',
        'api',
        'operation',
        'method',
        'status',
        'outcome',
        'gateway_status',
        'subject',
        'client_id',
        'username',
        'issuer',
        'client_address',
        'record',
      ]);
      const indexes = await admin.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'gateway_transactions'`, [
        schema,
      ]);
      const defs = indexes.rows.map((r: { indexdef: string }) => r.indexdef.replace(/^.* USING btree /, ''));
      const prefixes = ['api', 'operation', 'subject', 'client_id', 'username', 'client_address', 'node_id'].map(
        (c) => `(lower(${c}) text_pattern_ops)`,
      );
      expect([...defs].sort()).to.deep.equal(
        ['(id)', '(seq)', '(started_at)', '(outcome, started_at)', '(status, seq)', '(message_id)', ...prefixes].sort(),
      );
      // A case-insensitive prefix filter can use its index.
      const client = await admin.connect();
      try {
        await client.query('SET enable_seqscan = off'); // the table is empty: the index must still be usable
        const plan = await client.query(`EXPLAIN SELECT 1 FROM "${schema}".gateway_transactions WHERE lower(subject) LIKE $1 ESCAPE '\\'`, [
          'cli%',
        ]);
        expect(plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')).to.include(
          'gateway_transactions_subject_prefix_idx',
        );
      } finally {
        client.release(true);
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("uses a host's pool as it is and leaves it open", async () => {
    const hostPool: PgPoolLike = admin; // A pg.Pool is a PgPoolLike.
    const store = await PostgresTransactionStore.create({
      pool: hostPool,
      schema,
      table: 'host_pool',
      spillFile: options().spillFile,
      retentionDays: 0,
    });
    const record = makeRecord();
    store.save(record);
    await store.flush();
    expect((await store.get(record.id))?.id).to.equal(record.id);
    await store.close();
    expect((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".host_pool`)).rows[0].n).to.equal(1);
    expect(() => store.save(makeRecord())).to.throw(Error, /closed/);
  });

  it('fails ready() with a clear error when the server cannot be reached, and keeps the records', async () => {
    const spillFile = spillPath();
    spills.push(spillFile);
    // Nothing listens on port 1.
    const store = new PostgresTransactionStore({
      connectionString: databaseUrl(1),
      schema,
      spillFile,
      retentionDays: 0,
      queryTimeoutMs: 500,
    });
    let failed: unknown;
    await store.ready().catch((error: unknown) => (failed = error));
    expect(failed).to.be.instanceOf(Error).with.property('code', 'ECONNREFUSED');
    store.save(makeRecord());
    await store.flush();
    expect(store.counters.spilled).to.equal(1);
    expect(store.counters.available).to.equal(false);
    await store.close();
  });
});
