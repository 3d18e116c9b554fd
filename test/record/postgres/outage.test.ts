/**
 * The database away: records go to the spill file and come back, in order, once; a file left by a
 * process that crashed is replayed; saving never waits.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import type pg from 'pg';
import type { TransactionRecord } from '../../../src/index.js';
import { PostgresTransactionStore, type PostgresTransactionStoreOptions } from '../../../src/record/postgres/index.js';
import { journalDirectory } from '../../../src/record/postgres/trust.js';
import { ownStopwatch } from '../../security/support/loop-delay.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { makeRecord } from '../helpers.js';
import { adminPool, databaseUrl, dropSchema, PG_PORT, removeFile, spillPath, testSchema, until } from '../../postgres/helpers.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgresTransactionStore: database outages', () => {
  const schema = testSchema();
  let admin: pg.Pool;
  let proxy: TcpProxy;
  const stores: PostgresTransactionStore[] = [];
  const files: string[] = [];

  /** A store reaching the database through the proxy, quick to notice an outage and to retry. */
  function storeThroughProxy(table: string, options: Partial<PostgresTransactionStoreOptions> = {}): PostgresTransactionStore {
    const spillFile = spillPath();
    files.push(spillFile);
    const store = new PostgresTransactionStore({
      connectionString: databaseUrl(proxy.port),
      schema,
      table,
      spillFile,
      retentionDays: 0,
      flushDelayMs: 10,
      batchSize: 50,
      queryTimeoutMs: 1000,
      retryMaxDelayMs: 200,
      ...options,
    });
    stores.push(store);
    return store;
  }

  /** Ids of a table in insertion order. */
  async function storedIds(table: string): Promise<string[]> {
    const { rows } = await admin.query(`SELECT id FROM "${schema}"."${table}" ORDER BY seq`);
    return rows.map((r: { id: string }) => r.id);
  }

  before(async () => {
    admin = adminPool();
    proxy = await startTcpProxy({ port: PG_PORT });
  });
  afterEach(() => proxy.restore());
  after(async () => {
    for (const store of stores) await store.close();
    await proxy.close();
    await dropSchema(admin, schema);
    await admin.end();
    for (const file of files) await removeFile(file);
  });

  it('keeps every record while the database is cut off, and stores each once, in order, when it is back', async () => {
    const store = storeThroughProxy('cut');
    await store.ready();
    const saved: TransactionRecord[] = [];
    const save = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const record = makeRecord({ nodeId: 'gw-a' });
        saved.push(record);
        store.save(record);
        // Some time passes between requests: batches are written (or fail) meanwhile.
        if (i % 25 === 0) await pause(1);
      }
    };
    await save(120);
    await store.flush();
    expect(store.counters.saved).to.equal(120);

    proxy.cut();
    await save(600);
    await store.flush();
    const during = store.counters;
    expect(during.available).to.equal(false);
    expect(during.spilled).to.be.at.least(600);
    expect(during.queued).to.equal(0);
    expect(during.spillBytes).to.be.above(0);
    expect(existsSync(store.spillFile)).to.equal(true);
    // What is in the spill file is the records, in the order they were saved.
    const lines = (await readFile(store.spillFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as TransactionRecord).id);
    expect(lines.slice(-600)).to.deep.equal(saved.slice(-600).map((r) => r.id));

    // Saved while the database comes back: they go after the spill file.
    proxy.restore();
    await save(80);
    await until(
      () => store.counters.spillBytes === 0 && store.counters.queued === 0 && store.counters.available,
      'the spill file replayed',
    );
    await store.flush();

    const ids = await storedIds('cut');
    expect(ids).to.have.length(800);
    expect(new Set(ids).size).to.equal(800);
    expect(ids).to.deep.equal(saved.map((r) => r.id));
    const counters = store.counters;
    expect(counters.saved).to.equal(800);
    expect(counters.replayed).to.be.within(600, 680);
    expect(counters.dropped).to.deep.equal({ queueFull: 0, spillFull: 0, rejected: 0, closed: 0 });
    expect(existsSync(store.spillFile)).to.equal(false);
    const page = await store.query({ nodeId: 'gw-a', limit: 3 });
    expect(page.items.map((r) => r.id)).to.deep.equal(
      saved
        .slice(-3)
        .reverse()
        .map((r) => r.id),
    );
  });

  it('drops (and counts) what does not fit in the spill file, and keeps the rest', async () => {
    const store = storeThroughProxy('bounded', { maxSpillBytes: 40_000 });
    await store.ready();
    proxy.cut();
    const saved = Array.from({ length: 500 }, () => makeRecord());
    for (const record of saved) store.save(record);
    await store.flush();
    const { spilled, dropped } = store.counters;
    expect(dropped.spillFull).to.be.above(0);
    expect(spilled + dropped.spillFull).to.equal(500);
    proxy.restore();
    await until(() => store.counters.spillBytes === 0 && store.counters.available, 'the spill file replayed');
    const ids = await storedIds('bounded');
    expect(ids).to.have.length(spilled);
    expect(store.counters.saved).to.equal(spilled);
    // The oldest records were kept: the file filled up in order.
    expect(ids).to.deep.equal(saved.slice(0, spilled).map((r) => r.id));
  });

  it('never makes a save wait while the database hangs, and loses nothing', async () => {
    const store = storeThroughProxy('stall');
    await store.ready();
    proxy.stall();
    const saved = Array.from({ length: 1000 }, () => makeRecord());
    // Saving hands the record over and returns: 1,000 saves in well under 100 ms of this process's
    // own time (test/security/support/loop-delay.ts: the time it waited for a CPU, the machine's,
    // left out), while the insert hangs for a second (queryTimeoutMs).
    const elapsed = ownStopwatch();
    for (const record of saved) store.save(record);
    const elapsedMs = elapsed();
    expect(elapsedMs).to.be.below(100);
    // The hanging insert times out (queryTimeoutMs): the records go to the spill file.
    await store.flush();
    expect(store.counters.available).to.equal(false);
    expect(store.counters.spilled).to.equal(1000);
    proxy.restore();
    await until(() => store.counters.spillBytes === 0 && store.counters.available, 'the spill file replayed');
    await store.flush();
    expect(await storedIds('stall')).to.deep.equal(saved.map((r) => r.id));
    expect(store.counters.saved).to.equal(1000);
    expect(store.counters.dropped).to.deep.equal({ queueFull: 0, spillFull: 0, rejected: 0, closed: 0 });
  });

  it('moves a full queue to the spill file while an insert hangs, keeping the order', async () => {
    // 2,500 saves a second against a queue of 100: the disk has 40 ms per append to keep up. The
    // insert hangs longer than the saves last.
    const store = storeThroughProxy('overflow', { maxQueue: 100, queryTimeoutMs: 5000 });
    await store.ready();
    proxy.stall();
    const saved: TransactionRecord[] = [];
    for (let i = 0; i < 20; i++) {
      for (let j = 0; j < 50; j++) {
        const record = makeRecord();
        saved.push(record);
        store.save(record);
      }
      await pause(20);
    }
    // Before the hanging insert times out, the overflow is on disk already.
    await until(() => store.counters.spilled >= 800, 'the overflow spilled');
    expect(store.counters.available).to.equal(true);
    expect(store.counters.dropped.queueFull).to.equal(0);
    await store.flush();
    proxy.restore();
    await until(() => store.counters.spillBytes === 0 && store.counters.available, 'the spill file replayed');
    await store.flush();
    expect(await storedIds('overflow')).to.deep.equal(saved.map((r) => r.id));
    expect(store.counters.saved).to.equal(1000);
    expect(store.counters.dropped).to.deep.equal({ queueFull: 0, spillFull: 0, rejected: 0, closed: 0 });
  });

  it('closes while the spill file waits, and the next store replays it', async () => {
    const spillFile = spillPath();
    files.push(spillFile);
    const first = storeThroughProxy('restart', { spillFile, retryMaxDelayMs: 5000 });
    await first.ready();
    proxy.cut();
    const saved = Array.from({ length: 300 }, () => makeRecord());
    for (const record of saved.slice(0, 250)) first.save(record);
    await first.flush();
    proxy.restore();
    // Closed before (or while) the spill file is replayed: the rest of the file stays.
    for (const record of saved.slice(250)) first.save(record);
    await first.close();
    expect(first.counters.dropped).to.deep.equal({ queueFull: 0, spillFull: 0, rejected: 0, closed: 0 });
    expect(() => first.save(makeRecord())).to.throw(Error, /closed/);
    const second = storeThroughProxy('restart', { spillFile });
    await second.ready();
    await until(() => second.counters.spillBytes === 0, 'the spill file replayed');
    expect(await storedIds('restart')).to.deep.equal(saved.map((r) => r.id));
  });

  it('closes in the middle of a replay, queued records going after the file, and the next store goes on', async () => {
    const spillFile = spillPath();
    files.push(spillFile);
    const left = Array.from({ length: 3000 }, () => makeRecord());
    await writeFile(spillFile, left.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const first = storeThroughProxy('interrupted', { spillFile });
    const late = Array.from({ length: 10 }, () => makeRecord());
    for (const record of late) first.save(record);
    await first.ready();
    await first.close();
    expect(first.counters.replayed).to.be.below(3000);
    const second = storeThroughProxy('interrupted', { spillFile });
    await second.ready();
    await until(() => second.counters.spillBytes === 0, 'the spill file replayed');
    expect(await storedIds('interrupted')).to.deep.equal([...left, ...late].map((r) => r.id));
  });

  it('replays the spill file of a process that crashed, skipping a line cut short', async () => {
    const spillFile = spillPath();
    files.push(spillFile);
    // One record longer than a read of the file.
    const left = Array.from({ length: 300 }, (_, i) => makeRecord(i === 150 ? { url: `/${'x'.repeat(3 * 1024 * 1024)}` } : {}));
    const cut = JSON.stringify(makeRecord()).slice(0, 40);
    await writeFile(spillFile, left.map((r) => `${JSON.stringify(r)}\n`).join('') + cut);
    const store = storeThroughProxy('crashed', { spillFile });
    await store.ready();
    await until(() => store.counters.spillBytes === 0, 'the spill file replayed');
    expect(await storedIds('crashed')).to.deep.equal(left.map((r) => r.id));
    expect(store.counters.replayed).to.equal(300);
    expect(store.counters.dropped.rejected).to.equal(1);
    expect(existsSync(spillFile)).to.equal(false);
  });

  it('finds the default spill files of a process gone (in the private directory, and in the temporary one as before) and replays them', async () => {
    // The pid of a process that has ended.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
    const name = `express-access-gateway-${host}-${schema}.orphaned-${gone}.jsonl`;
    const orphans = [join(journalDirectory(undefined), name), join(tmpdir(), name)];
    files.push(...orphans);
    const left = Array.from({ length: 120 }, () => makeRecord());
    // Mode 0600, as the store makes its spill files (a file others may write to is not replayed).
    await writeFile(
      orphans[0]!,
      left
        .slice(0, 60)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(''),
      { mode: 0o600 },
    );
    await writeFile(
      orphans[1]!,
      left
        .slice(60)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(''),
      { mode: 0o600 },
    );
    const store = new PostgresTransactionStore({ connectionString: databaseUrl(), schema, table: 'orphaned', retentionDays: 0 });
    stores.push(store);
    files.push(store.spillFile);
    // Its own spill file is in the user's private directory (mode 0700), not the shared one.
    expect(dirname(store.spillFile)).to.equal(journalDirectory(undefined));
    expect((await lstat(dirname(store.spillFile))).mode & 0o777).to.equal(0o700);
    await store.ready();
    await until(() => store.counters.replayed === 120, 'the orphaned files replayed');
    expect((await storedIds('orphaned')).sort()).to.deep.equal(left.map((r) => r.id).sort());
    await until(() => orphans.every((orphan) => !existsSync(orphan)) && store.counters.spillBytes === 0, 'the orphaned files removed');
  });

  it('drops a record the database refuses, alone, and stores the rest of its batch', async () => {
    const store = storeThroughProxy('refused');
    await store.ready();
    const good = [makeRecord(), makeRecord(), makeRecord()];
    const bad = { ...makeRecord(), messageId: undefined } as unknown as TransactionRecord;
    const malformed = { id: 'not-a-record' } as unknown as TransactionRecord;
    store.save(good[0]!);
    store.save(bad);
    store.save(good[1]!);
    store.save(malformed);
    store.save(good[2]!);
    await store.flush();
    expect(await storedIds('refused')).to.deep.equal(good.map((r) => r.id));
    expect(store.counters.dropped.rejected).to.equal(2);
    expect(store.counters.available).to.equal(true);
    expect(() => store.save({} as TransactionRecord)).to.throw(TypeError, /id/);
  });
});
