/**
 * The record journal trusts only what it made (docs/security.md, "Redis and PostgreSQL"; attacks
 * of a local user who can write to the temporary directory): its directory must be the process's
 * own and writable by nobody else, a segment is created new (a link planted at its name is not
 * followed), and start-up replays only files of the process's user that grant nothing to group or
 * others. The tests run as root: "another user's file" is one given to uid 65534 (nobody).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type pg from 'pg';
import { PostgresTransactionStore } from '../../src/record/postgres/index.js';
import { RECORD_JOURNAL, type JournalEntry, type TransactionRecord } from '../../src/record/types.js';
import { makeRecord } from './helpers.js';
import { adminPool, databaseUrl, dropSchema, testSchema, until } from '../postgres/helpers.js';
import { serve } from '../server/support.js';

const NOBODY = 65534;
const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');

/** The pid of a process that has ended. */
function deadPid(): string {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
}

/** Records as JSON lines, the spill file's and the journal's format. */
const lines = (records: readonly TransactionRecord[]): string => records.map((r) => `${JSON.stringify(r)}\n`).join('');

/** As the recorder does: writes `record` through the store's journal, then (the answer's end) saves it. */
function journal(store: PostgresTransactionStore, record: TransactionRecord, beforeSave?: () => void): Promise<void> {
  const entry = (store as unknown as Record<symbol, JournalEntry>)[RECORD_JOURNAL]!;
  return new Promise((resolve) =>
    entry(
      () => record,
      () => {
        beforeSave?.();
        store.save(record);
        resolve();
      },
    ),
  );
}

describe('the record journal trusts only what it made', function () {
  this.timeout(60_000);
  const schema = testSchema();
  let admin: pg.Pool;
  let dir: string;
  const stores: PostgresTransactionStore[] = [];
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning.message);
  const tmp = process.env.TMPDIR;

  before(() => {
    admin = adminPool();
    process.on('warning', onWarning);
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-journal-trust-'));
    warnings.length = 0;
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
    await rm(dir, { recursive: true, force: true });
  });
  after(async () => {
    process.off('warning', onWarning);
    await dropSchema(admin, schema);
    await admin.end();
  });

  function store(table: string, journalOptions: true | { directory?: string; segmentBytes?: number }): PostgresTransactionStore {
    const made = new PostgresTransactionStore({
      connectionString: databaseUrl(),
      schema,
      table,
      retentionDays: 0,
      flushDelayMs: 10,
      journal: journalOptions,
    });
    stores.push(made);
    return made;
  }

  async function storedIds(table: string): Promise<string[]> {
    const { rows } = await admin.query<{ id: string }>(`SELECT id FROM "${schema}"."${table}"`);
    return rows.map((row) => row.id).sort();
  }

  it("replays only segments of the process's user that grant nothing to group or others; the others are left alone, each named once in a warning", async () => {
    const gone = deadPid();
    const segment = (n: number): string => join(dir, `express-access-gateway-${host}-${schema}.planted-${gone}-journal-0-${n}.jsonl`);
    const genuine = [makeRecord(), makeRecord()];
    const forged = Array.from({ length: 4 }, () => makeRecord());
    // What a process gone left: its own segment, mode 0600.
    await writeFile(segment(0), lines(genuine), { mode: 0o600 });
    // Planted: a segment anyone may write (0666), one of another user (0600, nobody's), and a link
    // named like a segment to a file of the process's user holding forged records.
    await writeFile(segment(1), lines(forged.slice(0, 1)));
    await chmod(segment(1), 0o666);
    await writeFile(segment(2), lines(forged.slice(1, 2)), { mode: 0o600 });
    await chown(segment(2), NOBODY, NOBODY);
    const target = join(dir, 'elsewhere.jsonl');
    await writeFile(target, lines(forged.slice(2)), { mode: 0o600 });
    await symlink(target, segment(3));

    const replaying = store('planted', { directory: dir });
    await replaying.ready();
    // Everything found replayed (before: the planted records too).
    await until(() => replaying.counters.replayed >= genuine.length && replaying.counters.spillBytes === 0, 'the replay');
    await until(async () => !(await readdir(dir)).some((name) => name.includes('journal-0-0')), 'the genuine segment removed');
    expect(await storedIds('planted')).to.deep.equal(genuine.map((r) => r.id).sort());
    // The planted files are where they were, untouched (not claimed, not removed).
    const left = (await readdir(dir)).sort();
    expect(left).to.deep.equal([segment(1), segment(2), segment(3), target].map((p) => p.slice(dir.length + 1)).sort());
    expect((await lstat(segment(3))).isSymbolicLink()).to.equal(true);
    // One warning per file refused, naming it; a second store of the table does not repeat them.
    const named = (n: number): string[] => warnings.filter((w) => w.includes(segment(n)));
    for (const n of [1, 2, 3]) expect(named(n), `segment ${n}: ${warnings.join('\n')}`).to.have.length(1);
    const again = store('planted', { directory: dir });
    await again.ready();
    await again.flush();
    for (const n of [1, 2, 3]) expect(named(n)).to.have.length(1);
    expect(await storedIds('planted')).to.deep.equal(genuine.map((r) => r.id).sort());
  });

  it('a forged segment planted in the temporary directory (the default place before) reaches no store', async () => {
    // The system's temporary directory, as the red team used it: mode 1777.
    const shared = join(dir, 'tmp');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    process.env.TMPDIR = shared;
    const gone = deadPid();
    const forged = [makeRecord(), makeRecord(), makeRecord()];
    const planted = join(shared, `express-access-gateway-${host}-${schema}.defaults-${gone}-journal-0-0.jsonl`);
    await writeFile(planted, lines(forged.slice(0, 1)));
    await chmod(planted, 0o666);
    const theirs = join(shared, `express-access-gateway-${host}-${schema}.defaults-${gone}.jsonl`);
    await writeFile(theirs, lines(forged.slice(1, 2)), { mode: 0o600 });
    await chown(theirs, NOBODY, NOBODY);
    // And at the name this process's own spill file would have.
    const mine = join(shared, `express-access-gateway-${host}-${schema}.defaults-${process.pid}.jsonl`);
    await writeFile(mine, lines(forged.slice(2)));
    await chmod(mine, 0o666);
    // A genuine spill file of a process gone (the store's own kind of file) is still replayed.
    const genuine = [makeRecord()];
    await writeFile(join(shared, `express-access-gateway-${host}-${schema}.defaults-${gone}-1.jsonl`), lines(genuine), { mode: 0o600 });

    const replaying = store('defaults', true);
    await replaying.ready();
    await until(() => replaying.counters.replayed >= genuine.length && replaying.counters.spillBytes === 0, 'the replay');
    expect(await storedIds('defaults')).to.deep.equal(genuine.map((r) => r.id));
    expect(await readFile(planted, 'utf8')).to.equal(lines(forged.slice(0, 1)));
    expect(await readFile(theirs, 'utf8')).to.equal(lines(forged.slice(1, 2)));
    expect(await readFile(mine, 'utf8')).to.equal(lines(forged.slice(2)));
    expect(replaying.spillFile).to.not.equal(mine);
    // The journal itself went to a directory of its own in the temporary directory, mode 0700.
    // Its segment is looked for before the record is saved: once saved, the segment is removed.
    let segments: string[] = [];
    const own = (): string[] => readdirSync(shared).filter((name) => name.startsWith('express-access-gateway-journal-'));
    await journal(replaying, makeRecord(), () => {
      segments = own().flatMap((name) => readdirSync(join(shared, name)));
    });
    expect(own()).to.have.length(1);
    const info = await lstat(join(shared, own()[0]!));
    expect(info.isDirectory()).to.equal(true);
    expect(info.mode & 0o777).to.equal(0o700);
    expect(
      segments.some((name) => name.includes('-journal-')),
      segments.join(', '),
    ).to.equal(true);
  });

  it('does not follow a link planted at the next segment name: the file it points to is unchanged', async () => {
    // Each write to a new segment.
    const writer = store('linked', { directory: dir, segmentBytes: 1 });
    await writer.ready();
    await journal(writer, makeRecord());
    const first = (await readdir(dir)).find((name) => name.includes('-journal-'))!;
    const next = (n: number): string => join(dir, first.replace(/-(\d+)\.jsonl$/, `-${n}.jsonl`));
    const n = Number(/-(\d+)\.jsonl$/.exec(first)![1]);
    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'the victim file\n', { mode: 0o644 });
    await symlink(victim, next(n + 1));
    const records = Array.from({ length: 20 }, () => makeRecord());
    for (const record of records) await journal(writer, record);
    expect(await readFile(victim, 'utf8')).to.equal('the victim file\n');
    expect((await lstat(next(n + 1))).isSymbolicLink()).to.equal(true);
    expect(await readlink(next(n + 1))).to.equal(victim);
    // Every record was journaled all the same (in segments of its own making) and stored.
    expect(writer.journalCounters!.written).to.equal(21);
    expect(writer.journalCounters!.failed).to.equal(0);
    await writer.flush();
    const ids = await storedIds('linked');
    for (const record of records) expect(ids).to.include(record.id);
  });

  it('refuses at start a directory writable by others, or not its own, with a clear message', async () => {
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    expect(() => store('refused', { directory: open })).to.throw(/journal\.directory.*writable by group or others \(mode 0777\)/);
    const group = join(dir, 'group');
    await mkdir(group);
    await chmod(group, 0o770);
    expect(() => store('refused', { directory: group })).to.throw(/writable by group or others \(mode 0770\)/);
    const theirs = join(dir, 'theirs');
    await mkdir(theirs, { mode: 0o700 });
    await chown(theirs, NOBODY, NOBODY);
    expect(() => store('refused', { directory: theirs })).to.throw(/journal\.directory.*owned by uid 65534, not this process's \(uid 0\)/);
    // The default directory, made first by someone else in the shared temporary directory.
    const shared = join(dir, 'tmp');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    process.env.TMPDIR = shared;
    const squatted = join(shared, `express-access-gateway-journal-${process.getuid!()}`);
    await mkdir(squatted, { mode: 0o777 });
    await chmod(squatted, 0o777);
    await chown(squatted, NOBODY, NOBODY);
    expect(() => store('refused', true)).to.throw(/owned by uid 65534/);
    // A link there, to a directory of the process's own, is refused too.
    await rm(squatted, { recursive: true });
    const mine = join(dir, 'mine');
    await mkdir(mine, { mode: 0o700 });
    await symlink(mine, squatted);
    expect(() => store('refused', true)).to.throw(/is a symbolic link/);
  });

  it('serve: RECORD_JOURNAL_DIR writable by others stops the start (exit 2), naming the variable', async () => {
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    const config = join(dir, 'open.json');
    await writeFile(
      config,
      JSON.stringify({ apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: 'http://127.0.0.1:9' } }] }),
    );
    const served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0'], {
      ADMIN_PASSWORD: 'journal-admin',
      DATABASE_URL: databaseUrl(),
      DATABASE_SCHEMA: schema,
      RECORD_JOURNAL_DIR: open,
    });
    try {
      // Before: it served, with its journal in a directory anyone could write to.
      const outcome = await Promise.race([served.exited(), served.waitFor(/serving APIs at/, 30_000).then(() => 'serving')]);
      expect(outcome, served.output()).to.equal(2);
    } finally {
      if (served.child.exitCode === null) served.child.kill('SIGKILL');
    }
    expect(served.output()).to.match(
      /RECORD_JOURNAL_DIR must be a directory of this process.s own.*writable by group or others \(mode 0777\)/,
    );
  });
});
