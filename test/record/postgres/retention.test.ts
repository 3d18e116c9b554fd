import { expect } from 'chai';
import type pg from 'pg';
import { PostgresTransactionStore } from '../../../src/record/postgres/index.js';
import { LOCK_CLASS, lockKey } from '../../../src/postgres/schema.js';
import { makeRecord } from '../helpers.js';
import { adminPool, databaseUrl, dropSchema, removeFile, spillPath, testSchema, until } from '../../postgres/helpers.js';

const DAY = 86_400_000;

describe('PostgresTransactionStore: retention', () => {
  const schema = testSchema();
  let admin: pg.Pool;
  const stores: PostgresTransactionStore[] = [];

  async function open(table: string, retentionDays: number): Promise<PostgresTransactionStore> {
    const store = await PostgresTransactionStore.create({
      connectionString: databaseUrl(),
      schema,
      table,
      spillFile: spillPath(),
      retentionDays,
    });
    stores.push(store);
    // Past the purge at start (a purge waits for the one under way).
    await store.purge();
    return store;
  }
  /** Rows started `days` days ago, written straight into the table. */
  async function insertOld(table: string, count: number, days: number): Promise<void> {
    await admin.query(
      `INSERT INTO "${schema}"."${table}" (id, message_id, started_at, ended_at, duration_ms, method, outcome, record)
       SELECT 'old-' || $2 || '-' || g, 'm', now() - make_interval(days => $1), now() - make_interval(days => $1), 1, 'GET', 'OK', '{}'::jsonb
       FROM generate_series(1, $3::int) g`,
      [days, `${days}d`, count],
    );
  }
  const count = async (table: string) => (await admin.query(`SELECT count(*)::int AS n FROM "${schema}"."${table}"`)).rows[0].n as number;

  before(() => {
    admin = adminPool();
  });
  after(async () => {
    for (const store of stores) {
      await store.close();
      await removeFile(store.spillFile);
    }
    await dropSchema(admin, schema);
    await admin.end();
  });

  it('deletes the records older than retentionDays, in slices, and keeps the others', async () => {
    const store = await open('kept', 30);
    await insertOld('kept', 12_345, 40);
    await insertOld('kept', 10, 29);
    const recent = Array.from({ length: 20 }, (_, i) => makeRecord({ startedAt: Date.now() - i * DAY }));
    for (const record of recent) store.save(record);
    await store.flush();
    expect(await store.purge()).to.equal(12_345);
    expect(await count('kept')).to.equal(30);
    expect(await store.purge()).to.equal(0);
    expect((await store.query({ limit: 500 })).items.slice(0, 20).map((r) => r.id)).to.deep.equal(recent.map((r) => r.id).reverse());
  });

  it('purges once when it starts', async () => {
    const first = await open('at_start', 0);
    await insertOld('at_start', 50, 10);
    await first.close();
    const store = new PostgresTransactionStore({
      connectionString: databaseUrl(),
      schema,
      table: 'at_start',
      spillFile: spillPath(),
      retentionDays: 7,
    });
    stores.push(store);
    await store.ready();
    await until(async () => (await count('at_start')) === 0, 'the purge at start');
    expect(await store.purge()).to.equal(0);
  });

  it('leaves the work to the instance already doing it', async () => {
    const store = await open('locked', 30);
    await insertOld('locked', 100, 31);
    const holder = await admin.connect();
    try {
      const key = lockKey(`${schema}.locked`);
      expect((await holder.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_CLASS.retention, key])).rows[0].ok).to.equal(true);
      expect(await store.purge()).to.equal(0);
      expect(await count('locked')).to.equal(100);
      await holder.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS.retention, key]);
    } finally {
      holder.release();
    }
    expect(await store.purge()).to.equal(100);
  });

  it('keeps everything with retentionDays 0', async () => {
    const store = await open('forever', 0);
    await insertOld('forever', 10, 3650);
    expect(await store.purge()).to.equal(0);
    expect(await count('forever')).to.equal(10);
  });
});
