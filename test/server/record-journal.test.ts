/**
 * The record journal of `serve` with PostgreSQL: a gateway killed (SIGKILL) under load, the whole
 * server, one worker or the primary, also while PostgreSQL is away, then started again: every
 * request whose client received a complete answer has exactly one record; a request cut mid-answer
 * has one record or none.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { Agent, get, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { echoBackend, exampleCopy, openConfig } from '../gateway/helpers.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { freePort, serve, stop, type Served } from './support.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What the clients saw: the transaction ids of complete answers, and of answers cut after their head. */
interface Seen {
  complete: Set<string>;
  cut: Set<string>;
  /** Requests that got no answer at all. */
  failed: number;
}

/** One request: resolves with its transaction id and whether its whole answer arrived. */
function request(url: string, agent: Agent): Promise<{ id?: string; complete: boolean }> {
  return new Promise((resolve) => {
    const req = get(url, { agent }, (res: IncomingMessage) => {
      const id = res.headers['gateway-transaction-id'] as string | undefined;
      res.on('data', () => undefined);
      res.on('end', () => resolve({ id, complete: res.complete }));
      res.on('error', () => resolve({ id, complete: false }));
      res.on('aborted', () => resolve({ id, complete: false }));
    });
    req.on('error', () => resolve({ complete: false }));
  });
}

/** Clients sending requests one after the other each until `stop()`; what they saw. */
function load(url: string, clients: number): { seen: Seen; busy(): Promise<void>; stop(): Promise<void> } {
  const seen: Seen = { complete: new Set(), cut: new Set(), failed: 0 };
  let running = true;
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      const { id, complete } = await request(url, agent);
      if (id !== undefined && complete) seen.complete.add(id);
      else if (id !== undefined) seen.cut.add(id);
      else {
        seen.failed++;
        await sleep(20);
      }
    }
  });
  return {
    seen,
    /** Under way for 1.5 s and 500 answers at least (at most 10 s on a crowded machine). */
    async busy() {
      const started = Date.now();
      await sleep(1_500);
      while (seen.complete.size < 500 && Date.now() - started < 10_000) await sleep(50);
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

/** The status line a CONNECT gets from the APIs' listener on `port`, once the server closed the connection. */
function connectStatusLine(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('CONNECT example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n'));
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('close', () => resolve(text.split('\r\n')[0]!));
    socket.on('error', reject);
  });
}

/**
 * Answers cut mid-answer: requests to the backend's `/hold`, which sends a first part and keeps the
 * rest; resolves with their transaction ids once each has its head (before the kill).
 */
async function heldAnswers(base: string, count: number, seen: Seen): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((started) => {
          const req = get(`${base}/gateway/Ente/Echo/v1/hold`, { agent }, (res) => {
            const id = res.headers['gateway-transaction-id'] as string;
            res.once('data', () => started());
            const settle = (): void => void (res.complete ? seen.complete.add(id) : seen.cut.add(id));
            res.on('end', settle);
            res.on('error', settle);
            res.on('aborted', settle);
            res.on('close', settle);
          });
          req.on('error', () => started());
        }),
    ),
  );
}

describe('serve: the record journal keeps the records of answered exchanges through a crash', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const schema = `gw_journal_${suffix}`;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let configFile: string;
  let pgProxy: TcpProxy;
  let db: pg.Client;
  const running: Served[] = [];
  let journalDir: string;
  let table: string;
  let tableCount = 0;

  before(async () => {
    [echo, copy] = await Promise.all([echoBackend(), exampleCopy()]);
    configFile = path.join(copy.dir, 'open.json');
    await writeFile(configFile, JSON.stringify(openConfig(echo.url)));
    pgProxy = await startTcpProxy({ port: 5432 });
    db = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await db.connect();
  });

  beforeEach(async () => {
    // A journal directory and a table of each test's own.
    journalDir = await mkdtemp(path.join(tmpdir(), 'gateway-journal-'));
    table = `gateway_transactions`;
    tableCount++;
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed')
      for (const served of running) process.stderr.write(`--- serve output:\n${served.output().slice(-4000)}\n`);
    await Promise.all(running.splice(0).map((served) => stop(served)));
    pgProxy.restore();
    await rm(journalDir, { recursive: true, force: true });
  });

  after(async () => {
    // Each test's schema.
    for (let n = 1; n <= tableCount; n++) await db?.query(`DROP SCHEMA IF EXISTS "${schema}_${n}" CASCADE`).catch(() => undefined);
    await db?.end();
    await Promise.all([pgProxy?.close(), echo?.stop(), copy?.remove()]);
  });

  /** Starts serve on `port` (with `workers`); resolves once it serves. */
  async function start(port: number, workers?: number): Promise<Served> {
    const served = serve(
      [
        'serve',
        '--config',
        configFile,
        '--port',
        String(port),
        '--admin-port',
        '0',
        ...(workers === undefined ? [] : ['--workers', String(workers)]),
      ],
      {
        ADMIN_PASSWORD: 'journal-admin',
        DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxy.port}/test`,
        DATABASE_SCHEMA: `${schema}_${tableCount}`,
        RECORD_JOURNAL_DIR: journalDir,
        RECORD_JOURNAL: process.env.TEST_JOURNAL_MODE ?? 'on',
        DEBUG: 'express-access-gateway:record:*',
      },
    );
    running.push(served);
    await served.waitFor(workers === undefined ? /serving APIs at/ : new RegExp(`(worker \\d+ serving[\\s\\S]*){${workers}}`));
    return served;
  }

  /** The records of the test's table: count per id. */
  async function records(): Promise<Map<string, { count: number; outcome: string }>> {
    const { rows } = await db.query<{ id: string; n: string; outcome: string }>(
      `SELECT id, count(*) AS n, min(outcome) AS outcome FROM "${schema}_${tableCount}".${table} GROUP BY id`,
    );
    return new Map(rows.map((row) => [row.id, { count: Number(row.n), outcome: row.outcome }]));
  }

  /** How many complete answers have their record now (before the restart: not from the journal). */
  async function storedNow(seen: Seen): Promise<number> {
    const found = await records().catch(() => new Map<string, unknown>());
    return [...seen.complete].filter((id) => found.has(id)).length;
  }

  /** Waits until every complete answer has its record (or 20 s passed); then checks the counts. */
  async function expectRecorded(seen: Seen): Promise<{ complete: number; cut: number; cutRecorded: number }> {
    let found = new Map<string, { count: number; outcome: string }>();
    const deadline = Date.now() + 20_000;
    for (;;) {
      found = await records();
      const missing = [...seen.complete].filter((id) => !found.has(id));
      if (missing.length === 0) break;
      if (Date.now() > deadline)
        expect.fail(`${missing.length} of ${seen.complete.size} complete answers have no record: ${missing.slice(0, 5).join(', ')}`);
      await sleep(200);
    }
    for (const id of seen.complete) expect(found.get(id)!.count, id).to.equal(1);
    let cutRecorded = 0;
    for (const id of seen.cut) {
      const record = found.get(id);
      if (record === undefined) continue;
      expect(record.count, id).to.equal(1);
      expect(record.outcome, id).to.not.equal('OK');
      cutRecorded++;
    }
    expect(seen.complete.size).to.be.greaterThan(100);
    return { complete: seen.complete.size, cut: seen.cut.size, cutRecorded };
  }

  /** The journal files left in the test's directory. */
  const journalFiles = async (): Promise<string[]> => (await readdir(journalDir)).filter((name) => name.includes('-journal-'));

  it('the whole server killed under load: after the restart every complete answer has one record', async () => {
    const port = await freePort();
    const first = await start(port);
    const traffic = load(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, 16);
    await traffic.busy();
    await heldAnswers(`http://127.0.0.1:${port}`, 4, traffic.seen);
    first.child.kill('SIGKILL');
    await first.exited();
    await traffic.stop();
    await sleep(100);
    expect(traffic.seen.cut.size).to.equal(4);
    expect(await journalFiles()).to.not.deep.equal([]);
    const before = await storedNow(traffic.seen);
    await start(port);
    const figures = await expectRecorded(traffic.seen);
    console.log(
      `      whole server: ${figures.complete} complete answers (${figures.complete - before} of them recorded after the restart), all recorded; ${figures.cut} cut (${figures.cutRecorded} recorded)`,
    );
    // Replayed and confirmed: the journals of the killed process are gone.
    const deadline = Date.now() + 5_000;
    while ((await journalFiles()).some((name) => name.includes('.claimed-')) && Date.now() < deadline) await sleep(100);
    expect((await journalFiles()).filter((name) => name.includes('.claimed-'))).to.deep.equal([]);
  });

  it('one worker of two killed under load: its replacement replays its journal', async () => {
    const port = await freePort();
    const served = await start(port, 2);
    const pids = [...served.output().matchAll(/worker (\d+) serving APIs/g)].map((m) => Number(m[1]));
    const traffic = load(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, 16);
    await traffic.busy();
    process.kill(pids[0]!, 'SIGKILL');
    await served.waitFor(/died \(SIGKILL\); starting another/);
    await served.waitFor(/(worker \d+ serving[\s\S]*){3}/, 30_000);
    await sleep(500);
    await traffic.stop();
    const figures = await expectRecorded(traffic.seen);
    console.log(
      `      one worker: ${figures.complete} complete answers, all recorded; ${figures.cut} cut (${figures.cutRecorded} recorded)`,
    );
  });

  it('the primary killed under load (its workers exit with it): after the restart every complete answer has one record', async () => {
    const port = await freePort();
    const served = await start(port, 2);
    const pids = [...served.output().matchAll(/worker (\d+) serving APIs/g)].map((m) => Number(m[1]));
    const traffic = load(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, 16);
    await traffic.busy();
    await heldAnswers(`http://127.0.0.1:${port}`, 4, traffic.seen);
    served.child.kill('SIGKILL');
    await served.exited();
    // The workers see the primary gone and exit.
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < deadline) await sleep(50);
    await traffic.stop();
    const before = await storedNow(traffic.seen);
    await start(port, 2);
    const figures = await expectRecorded(traffic.seen);
    console.log(
      `      primary: ${figures.complete} complete answers (${figures.complete - before} of them recorded after the restart), all recorded; ${figures.cut} cut (${figures.cutRecorded} recorded)`,
    );
  });

  it('killed while PostgreSQL is away: the spill file and the journal are replayed, each record once', async () => {
    const port = await freePort();
    const first = await start(port);
    const traffic = load(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, 16);
    await traffic.busy();
    pgProxy.cut();
    await sleep(1_500);
    first.child.kill('SIGKILL');
    await first.exited();
    await traffic.stop();
    const before = await storedNow(traffic.seen);
    pgProxy.restore();
    await start(port);
    const figures = await expectRecorded(traffic.seen);
    console.log(
      `      PostgreSQL away: ${figures.complete} complete answers (${figures.complete - before} of them recorded after the restart), all recorded; ${figures.cut} cut (${figures.cutRecorded} recorded)`,
    );
  });

  it('stopped by SIGTERM under load (with and without --workers): every complete answer is in PostgreSQL before the exit (a CONNECT answered just before too), no journal left', async () => {
    for (const [round, workers] of [undefined, 2].entries()) {
      const port = await freePort();
      const served = await start(port, workers);
      const traffic = load(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, 16);
      await traffic.busy();
      // A CONNECT (its connection node:http hands over) answered right before the stop.
      expect(await connectStatusLine(port)).to.equal('HTTP/1.1 501 Not Implemented');
      served.child.kill('SIGTERM');
      expect(await served.exited(), served.output()).to.equal(0);
      await traffic.stop();
      // No restart, no wait: what the stopped server left is all there is.
      const found = await records();
      const { rows } = await db.query(`SELECT status FROM "${schema}_${tableCount}".${table} WHERE method = 'CONNECT'`);
      // One table for both rounds: this round's CONNECT and the one before.
      expect(rows).to.deep.equal(Array.from({ length: round + 1 }, () => ({ status: 501 })));
      const missing = [...traffic.seen.complete].filter((id) => !found.has(id));
      expect(missing, `of ${traffic.seen.complete.size} complete answers`).to.deep.equal([]);
      for (const id of traffic.seen.complete) expect(found.get(id)!.count, id).to.equal(1);
      expect(traffic.seen.complete.size).to.be.greaterThan(100);
      expect(await journalFiles()).to.deep.equal([]);
      console.log(
        `      SIGTERM${workers === undefined ? '' : ` (--workers ${workers})`}: ${traffic.seen.complete.size} complete answers, all recorded before the exit`,
      );
    }
  });

  it('refuses a journal it could not write, or an unknown RECORD_JOURNAL, at start (exit 2 naming the variable)', async () => {
    for (const [name, value, expected] of [
      ['RECORD_JOURNAL_DIR', path.join(journalDir, 'missing'), /RECORD_JOURNAL_DIR must be a directory/],
      ['RECORD_JOURNAL', 'always', /RECORD_JOURNAL must be on, fsync or off/],
    ] as const) {
      const served = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', '0'], {
        ADMIN_PASSWORD: 'journal-admin',
        DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxy.port}/test`,
        DATABASE_SCHEMA: `${schema}_${tableCount}`,
        RECORD_JOURNAL_DIR: journalDir,
        [name]: value,
      });
      running.push(served);
      expect(await served.exited(), served.output()).to.equal(2);
      expect(served.output()).to.match(expected);
    }
  });
});
