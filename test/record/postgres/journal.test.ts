/**
 * The record journal of `PostgresTransactionStore` under `createGateway`: an answer's record is in
 * the journal before the answer arrives whole, the journal is trimmed once the records are stored,
 * and a journal left by a process gone is replayed, each record once.
 */
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type pg from 'pg';
import { createGateway } from '../../../src/index.js';
import { PostgresTransactionStore } from '../../../src/record/postgres/index.js';
import { RECORD_JOURNAL, type JournalEntry, type TransactionRecord } from '../../../src/record/types.js';
import { close, echoBackend, listen, openConfig } from '../../gateway/helpers.js';
import { makeRecord } from '../helpers.js';
import { adminPool, databaseUrl, dropSchema, testSchema, until } from '../../postgres/helpers.js';

describe('PostgresTransactionStore: the record journal', () => {
  const schema = testSchema();
  let admin: pg.Pool;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  const stores: PostgresTransactionStore[] = [];

  before(async () => {
    admin = adminPool();
    echo = await echoBackend();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-journal-'));
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  after(async () => {
    await dropSchema(admin, schema);
    await admin.end();
    await echo.stop();
  });

  const segments = async (): Promise<string[]> => (await readdir(dir)).filter((name) => name.includes('-journal-'));

  /** A store of `table` with its journal in the test's folder, ready (closed after the test). */
  async function journaledStore(
    table: string,
    options: { flushDelayMs?: number; segmentBytes?: number } = {},
  ): Promise<PostgresTransactionStore> {
    const store = new PostgresTransactionStore({
      connectionString: databaseUrl(),
      schema,
      table,
      retentionDays: 0,
      flushDelayMs: options.flushDelayMs ?? 60_000,
      journal: { directory: dir, ...(options.segmentBytes === undefined ? {} : { segmentBytes: options.segmentBytes }) },
    });
    stores.push(store);
    await store.ready();
    return store;
  }

  /** A gateway on node:http recording in `store`; runs `run` with its base URL. */
  async function withGateway(store: PostgresTransactionStore, run: (base: string) => Promise<void>): Promise<void> {
    const gateway = createGateway({ config: openConfig(echo.url), store });
    const server = createServer((req, res) => gateway.handler(req, res));
    try {
      await run(`${await listen(server)}/gateway/Ente/Echo/v1`);
    } finally {
      await close(server);
      await gateway.close();
    }
  }

  it('writes the record of an answer (relayed or refused) before the answer arrives whole', async () => {
    // No insert within the test: what is in the journal was put there by the answer's end.
    const store = await journaledStore('held');
    await withGateway(store, async (base) => {
      for (const path of ['/pet/1', '/%zz']) {
        const res = await fetch(`${base}${path}`);
        const id = res.headers.get('gateway-transaction-id')!;
        await res.arrayBuffer();
        const journal = (await Promise.all((await segments()).map((name) => readFile(join(dir, name), 'utf8')))).join('');
        const lines = journal.split('\n').filter((line) => line.includes(id));
        expect(lines, `${path} ${res.status}`).to.have.length(1);
        const record = JSON.parse(lines[0]!) as { status: number; problemDetail?: string };
        expect(record.status).to.equal(res.status);
        // A refusal's record says what the client read (set once the problem is written).
        if (res.status >= 400) expect(record.problemDetail).to.be.a('string').and.not.equal('');
      }
    });
    expect(store.journalCounters!.written).to.equal(2);
    expect(store.journalCounters!.bytes).to.be.greaterThan(200);
  });

  it('removes the journal once its records are stored, and stores each record once', async () => {
    const store = await journaledStore('trimmed', { flushDelayMs: 10, segmentBytes: 4096 });
    const ids: string[] = [];
    await withGateway(store, async (base) => {
      await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const res = await fetch(`${base}/pet/${i}`);
          ids.push(res.headers.get('gateway-transaction-id')!);
          await res.arrayBuffer();
        }),
      );
    });
    await store.flush();
    await until(async () => (await segments()).length === 0, 'the journal trimmed');
    const { rows } = await admin.query(`SELECT id FROM "${schema}".trimmed`);
    expect(rows.map((row: { id: string }) => row.id).sort()).to.deep.equal(ids.sort());
    expect(store.journalCounters!.written).to.equal(60);
  });

  it('stores journaled records whatever their text holds, beside records saved without the journal', async () => {
    const store = await journaledStore('texts');
    // Multi-byte characters move the lines' byte offsets; NUL and a lone surrogate are refused by
    // PostgreSQL unless made safe; the journal writes a turn's records at once.
    const texts = ['plain', 'été ünïcode 日本 😀', 'NUL \u0000 here', 'lone \ud800 surrogate', 'both \u0000 and \udfff, é'];
    const records = texts.map((text) => makeRecord({ diagnostics: [{ source: 'test', message: text } as never] }));
    const journal = (store as unknown as Record<symbol, JournalEntry>)[RECORD_JOURNAL]!;
    await new Promise<void>((resolve) => {
      let sent = 0;
      for (const record of records) {
        journal(
          () => record,
          () => {
            store.save(record);
            if (++sent === records.length) resolve();
          },
        );
      }
    });
    // One record saved without passing through the journal, in the same batch.
    const unjournaled = makeRecord({ diagnostics: [{ source: 'test', message: 'saved alone, ü \u0000' } as never] });
    store.save(unjournaled);
    const written = (await Promise.all((await segments()).map((name) => readFile(join(dir, name), 'utf8')))).join('');
    expect(
      written
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { id: string }).id),
    ).to.deep.equal(records.map((record) => record.id));
    await store.flush();
    const { rows } = await admin.query(`SELECT id, record FROM "${schema}".texts`);
    const stored = new Map(rows.map((row: { id: string; record: TransactionRecord }) => [row.id, row.record]));
    for (const record of [...records, unjournaled]) {
      const safe = (record.diagnostics[0] as { message: string }).message
        .replaceAll('\u0000', '\ufffd')
        .replace(/[\ud800-\udfff]/gu, '\ufffd');
      expect(stored.get(record.id), record.id).to.deep.include({ diagnostics: [{ source: 'test', message: safe }] });
    }
    expect(stored.size).to.equal(records.length + 1);
    await until(async () => (await segments()).length === 0, 'the journal trimmed');
  });

  it('removes the journal of an answer whose client went away after its record was written, and stores what happened', async () => {
    const store = await journaledStore('cut');
    // As the recorder does: the record written before the answer's end; the client gone before
    // the end reached it, the record saved is the exchange's record built again, cut short.
    const written = makeRecord();
    const cut: TransactionRecord = { ...written, aborted: true, status: 0 };
    const journal = (store as unknown as Record<symbol, JournalEntry>)[RECORD_JOURNAL]!;
    await new Promise<void>((resolve) =>
      journal(
        () => written,
        () => resolve(),
      ),
    );
    expect(await segments()).to.have.length(1);
    store.save(cut);
    await store.flush();
    const { rows } = await admin.query(`SELECT record FROM "${schema}".cut`);
    expect(rows.map((row: { record: TransactionRecord }) => row.record)).to.deep.equal([cut]);
    await until(async () => (await segments()).length === 0, 'the journal trimmed');
  });

  it('replays the journal of a process gone, each record once, then removes it', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
    const left = Array.from({ length: 30 }, () => makeRecord());
    const first = new PostgresTransactionStore({ connectionString: databaseUrl(), schema, table: 'replayed', retentionDays: 0 });
    stores.push(first);
    // Ten of them reached the database before the crash.
    for (const record of left.slice(0, 10)) first.save(record);
    await first.flush();
    const orphan = join(dir, `express-access-gateway-${host}-${schema}.replayed-${gone}-journal-0-3.jsonl`);
    // The last line cut short by the crash; mode 0600, as the journal makes its files.
    await writeFile(orphan, `${left.map((r) => JSON.stringify(r)).join('\n')}\n{"id":"cut`, { mode: 0o600 });
    const store = new PostgresTransactionStore({
      connectionString: databaseUrl(),
      schema,
      table: 'replayed',
      retentionDays: 0,
      journal: { directory: dir },
    });
    stores.push(store);
    await store.ready();
    await until(() => store.counters.replayed === 20, 'the journal replayed');
    await until(async () => (await readdir(dir)).length === 0, 'the journal removed');
    const { rows } = await admin.query(`SELECT id, count(*) AS n FROM "${schema}".replayed GROUP BY id`);
    expect(rows).to.have.length(30);
    expect(rows.every((row: { n: string }) => row.n === '1')).to.equal(true);
  });

  it('refuses a malformed journal option', () => {
    expect(
      () => new PostgresTransactionStore({ connectionString: databaseUrl(), schema, journal: { fsync: 'yes' as unknown as boolean } }),
    ).to.throw(TypeError, /journal\.fsync/);
    expect(
      () =>
        new PostgresTransactionStore({ connectionString: databaseUrl(), schema, journal: { every: 1 } as unknown as { fsync: boolean } }),
    ).to.throw(TypeError, /journal/);
  });
});
