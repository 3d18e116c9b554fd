/**
 * Dependencies degraded loudly (docs/deployment.md, "Dependencies: what the operator sees"): an
 * outage of PostgreSQL, Redis or the record journal's disk is one `dependency_down` record at
 * `error` (its cause, what the gateway does meanwhile), `gateway_dependency_up` 0 and the admin
 * status's `dependencies` saying so; its end one `dependency_up` record. With
 * `RECORD_JOURNAL_ON_UNAVAILABLE=refuse`, nothing is answered whose record a crash could lose.
 *
 * The states alone, then real `serve` processes: PostgreSQL and Redis behind TCP proxies that cut
 * them off, the journal on a 2 MiB tmpfs filled up.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { DependencyStates } from '../../src/observability/dependencies.js';
import { echoBackend, openConfig } from '../gateway/helpers.js';
import { freePort, serve, stop, type Served } from '../server/support.js';
import { memoryLog } from '../support/memory-log.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const PASSWORD = 'dependencies-admin';
const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'x-gateway-console': '1' };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('dependencies degraded loudly', function () {
  this.timeout(120_000);

  it('the states: one error per outage with its cause and action, one line at its end, a gauge and a snapshot', () => {
    let now = 1_000;
    const { lines, log } = memoryLog();
    const states = new DependencyStates(log, () => now);
    states.up('postgresql');
    expect(lines, 'nothing to say of a dependency first seen up').to.deep.equal([]);
    states.down('postgresql', 'connect ECONNREFUSED', 'records go to the spill file');
    now += 500;
    states.down('postgresql', 'connect ETIMEDOUT', 'records go to the spill file');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ level: 'error' });
    expect(lines[0]!.fields).to.deep.equal({
      event: 'dependency_down',
      dependency: 'postgresql',
      cause: 'connect ECONNREFUSED',
      action: 'records go to the spill file',
    });
    expect(states.snapshot()['postgresql']).to.deep.include({ state: 'down', cause: 'connect ETIMEDOUT' });
    expect(states.gauge()).to.deep.equal([{ labels: { dependency: 'postgresql' }, value: 0 }]);
    now += 1_500;
    states.up('postgresql');
    states.up('postgresql');
    expect(lines).to.have.length(2);
    expect(lines[1]!.fields).to.deep.equal({ event: 'dependency_up', dependency: 'postgresql', downMs: 2_000 });
    expect(lines[1]!.msg).to.equal('postgresql available again after 2.0 s');
    expect(states.snapshot()['postgresql']).to.deep.equal({ state: 'up', since: new Date(now).toISOString() });
  });

  describe('over serve', () => {
    const suffix = randomBytes(4).toString('hex');
    let echo: Awaited<ReturnType<typeof echoBackend>>;
    let pgProxy: TcpProxy;
    let redisProxy: TcpProxy;
    let dir: string;
    let configFile: string;
    let db: pg.Client;
    const running: Served[] = [];
    const mounts: string[] = [];
    let schemas = 0;
    let disks = 0;

    before(async () => {
      [echo, pgProxy, redisProxy] = await Promise.all([echoBackend(), startTcpProxy({ port: 5432 }), startTcpProxy({ port: 6379 })]);
      dir = await mkdtemp(path.join(tmpdir(), 'gateway-dependencies-'));
      configFile = path.join(dir, 'open.json');
      await writeFile(configFile, JSON.stringify(openConfig(echo.url)));
      db = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
      await db.connect();
    });
    afterEach(async function () {
      if (this.currentTest?.state === 'failed')
        for (const served of running) process.stderr.write(`--- serve output:\n${served.output().slice(-4000)}\n`);
      await Promise.all(running.splice(0).map((served) => stop(served)));
      pgProxy.restore();
      redisProxy.restore();
      for (const mount of mounts.splice(0)) execFileSync('umount', ['-l', mount]);
    });
    after(async () => {
      for (let n = 1; n <= schemas; n++) await db?.query(`DROP SCHEMA IF EXISTS "gw_deps_${suffix}_${n}" CASCADE`).catch(() => undefined);
      await db?.end();
      await Promise.all([echo?.stop(), pgProxy?.close(), redisProxy?.close()]);
      await rm(dir, { recursive: true, force: true });
    });

    interface Instance {
      served: Served;
      api: string;
      admin: string;
      schema: string;
    }

    /** Starts serve on PostgreSQL through its proxy (and Redis through its own, with `redis`); JSON logs. */
    async function start(env: Record<string, string> = {}, options: { redis?: boolean; schema?: string } = {}): Promise<Instance> {
      const schema = options.schema ?? `gw_deps_${suffix}_${++schemas}`;
      const adminPort = await freePort();
      const served = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', String(adminPort)], {
        LOG_FORMAT: 'json',
        ADMIN_PASSWORD: PASSWORD,
        DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxy.port}/test`,
        DATABASE_SCHEMA: schema,
        ...(options.redis === true
          ? {
              REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
              REDIS_KEY_PREFIX: `eagtest-deps-${suffix}-${schemas}:`,
              GATEWAY_CLUSTER_SECRET: randomBytes(32).toString('base64'),
              // A crowded machine must not make a healthy Redis look down.
              REDIS_COMMAND_TIMEOUT_MS: '2000',
            }
          : {}),
        ...env,
      });
      running.push(served);
      const url = (await served.waitFor(/"url":"(http:\/\/[^"]+)"/))[1]!;
      return { served, api: `${url}/gateway/Ente/Echo/v1`, admin: `http://127.0.0.1:${adminPort}/gateway`, schema };
    }

    /** The records of `served` whose event is `event`. */
    const events = (served: Served, event: string): Array<Record<string, unknown>> =>
      served
        .output()
        .split('\n')
        .filter((line) => line.includes(`"event":"${event}"`))
        .map((line) => JSON.parse(line) as Record<string, unknown>);

    const gauge = async (instance: Instance, dependency: string): Promise<number | undefined> => {
      const text = await (await fetch(`${instance.admin}/metrics`, { headers: adminHeaders })).text();
      const found = new RegExp(`^gateway_dependency_up\\{dependency="${dependency}"\\} (\\d)$`, 'm').exec(text);
      return found === null ? undefined : Number(found[1]);
    };
    const status = async (instance: Instance): Promise<Record<string, { state: string; cause?: string; action?: string }>> =>
      ((await (await fetch(`${instance.admin}/admin/status`, { headers: adminHeaders })).json()) as { dependencies: never }).dependencies;

    /** Polls `check` every 100 ms until it holds, at most `ms`. */
    async function until(check: () => Promise<boolean> | boolean, what: string, ms = 30_000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
        await sleep(100);
      }
    }

    /** `count` requests one after the other: their statuses. */
    async function calls(instance: Instance, count: number): Promise<Array<number | 'cut'>> {
      const out: Array<number | 'cut'> = [];
      for (let i = 0; i < count; i++) {
        out.push(
          await fetch(`${instance.api}/things/${i}`).then(
            async (res) => (await res.arrayBuffer(), res.status),
            () => 'cut' as const,
          ),
        );
      }
      return out;
    }

    for (const fault of ['cut', 'stall'] as const)
      it(`PostgreSQL ${fault === 'cut' ? 'refusing connections' : 'black-holed'}, then back: one error with the spill file, the gauge, the status, one line at its end`, async () => {
        const instance = await start();
        expect(await calls(instance, 3)).to.deep.equal([201, 201, 201]);
        await until(async () => (await gauge(instance, 'postgresql')) === 1, 'postgresql up in the metrics');
        pgProxy[fault]();
        const during = await calls(instance, 20);
        await until(() => events(instance.served, 'dependency_down').length > 0, 'the dependency_down record');
        expect(
          during.every((s) => s === 201),
          'answers are not affected',
        ).to.equal(true);
        const [down, ...more] = events(instance.served, 'dependency_down');
        expect(more, 'once per outage').to.deep.equal([]);
        expect(down).to.deep.include({ level: 'error', dependency: 'postgresql' });
        expect(String(down!['action'])).to.match(/^records go to the spill file \S+\.jsonl/);
        expect(await gauge(instance, 'postgresql')).to.equal(0);
        expect((await status(instance))['postgresql']).to.deep.include({ state: 'down' });
        pgProxy.restore();
        await until(() => events(instance.served, 'dependency_up').length > 0, 'the dependency_up record');
        const [up] = events(instance.served, 'dependency_up');
        console.log(`      postgresql ${fault}: ${String(down!['msg'])}; back after ${String(up!['downMs'])} ms`);
        expect(up).to.deep.include({ level: 'info', dependency: 'postgresql' });
        expect(up!['downMs']).to.be.a('number');
        expect(await gauge(instance, 'postgresql')).to.equal(1);
        expect(events(instance.served, 'dependency_down')).to.have.length(1);
      });

    for (const fault of ['cut', 'stall'] as const)
      it(`Redis ${fault === 'cut' ? 'refusing connections' : 'black-holed'}, then back: one error naming what the gateway does without it, one line at its end`, async () => {
        const instance = await start({}, { redis: true });
        await until(async () => (await gauge(instance, 'redis')) === 1, 'redis up in the metrics');
        redisProxy[fault]();
        await calls(instance, 5);
        await until(() => events(instance.served, 'dependency_down').some((e) => e['dependency'] === 'redis'), 'the redis dependency_down');
        await calls(instance, 5);
        const downs = events(instance.served, 'dependency_down').filter((e) => e['dependency'] === 'redis');
        expect(downs).to.have.length(1);
        expect(String(downs[0]!['action'])).to.include('onStoreUnavailable').and.include('DPoP proofs are refused');
        expect(await gauge(instance, 'redis')).to.equal(0);
        redisProxy.restore();
        await until(() => events(instance.served, 'dependency_up').some((e) => e['dependency'] === 'redis'), 'the redis dependency_up');
        expect(await gauge(instance, 'redis')).to.equal(1);
        console.log(`      redis ${fault}: ${String(downs[0]!['msg']).slice(0, 160)}`);
      });

    /** A 2 MiB tmpfs of mode 0700 for the journal, and a file that fills it; `free()` removes the file. */
    async function fullDisk(): Promise<{ journalDir: string; free(): Promise<void> }> {
      const mount = path.join(dir, `journal-${++disks}`);
      await mkdir(mount);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', mount]);
      mounts.push(mount);
      const journalDir = path.join(mount, 'journal');
      await mkdir(journalDir, { mode: 0o700 });
      const filler = path.join(mount, 'filler');
      // Fills the disk: the write stops at ENOSPC.
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k', 'count=64'], { stdio: 'ignore' });
      } catch {
        // Full: what dd said.
      }
      return { journalDir, free: () => rm(filler, { force: true }) };
    }

    it('the journal on a full disk (answer, the default): one error, answers go out, one line once it writes again', async () => {
      const disk = await fullDisk();
      const instance = await start({ RECORD_JOURNAL_DIR: disk.journalDir });
      const during = await calls(instance, 10);
      expect(during.every((s) => s === 201)).to.equal(true);
      await until(() => events(instance.served, 'dependency_down').length > 0, 'the dependency_down record');
      const downs = events(instance.served, 'dependency_down');
      expect(downs).to.have.length(1);
      expect(downs[0]).to.deep.include({ level: 'error', dependency: 'record_journal' });
      expect(String(downs[0]!['cause'])).to.match(/ENOSPC/);
      expect(String(downs[0]!['action'])).to.include('onUnavailable: answer');
      expect(await gauge(instance, 'record_journal')).to.equal(0);
      expect((await status(instance))['record_journal']).to.deep.include({ state: 'down' });
      await disk.free();
      await until(() => events(instance.served, 'dependency_up').length > 0, 'the dependency_up record');
      expect(await gauge(instance, 'record_journal')).to.equal(1);
      console.log(`      journal: ${String(downs[0]!['msg'])}`);
    });

    it('the journal on a full disk under refuse: 503 with Retry-After, and after kill -9 every answered request has its record', async () => {
      const disk = await fullDisk();
      const env = { RECORD_JOURNAL_DIR: disk.journalDir, RECORD_JOURNAL_ON_UNAVAILABLE: 'refuse' };
      const instance = await start(env);
      // The first answers find the disk full: cut (their clients get no complete answer), then refused.
      const seen: Array<{ status: number | 'cut'; id: string | null; retryAfter: string | null }> = [];
      for (let i = 0; i < 30; i++) {
        seen.push(
          await fetch(`${instance.api}/things/${i}`).then(
            async (res) => (
              await res.arrayBuffer(),
              { status: res.status, id: res.headers.get('gateway-transaction-id'), retryAfter: res.headers.get('retry-after') }
            ),
            () => ({ status: 'cut' as const, id: null, retryAfter: null }),
          ),
        );
      }
      const statuses = seen.map((s) => s.status);
      console.log(`      refuse on a full disk: ${JSON.stringify(statuses)}`);
      expect(
        statuses.filter((s) => s === 201),
        'nothing answered without its journal line',
      ).to.deep.equal([]);
      expect(statuses.filter((s) => s === 503).length).to.be.greaterThan(20);
      expect(seen.find((s) => s.status === 503)?.retryAfter).to.equal('5');
      // Freed: answers go out again, each journaled; then the process is killed.
      await disk.free();
      await until(async () => (await calls(instance, 1))[0] === 201, 'answers again');
      const answered = (
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            fetch(`${instance.api}/after/${i}`).then(
              async (res) => (await res.arrayBuffer(), res.status === 201 ? res.headers.get('gateway-transaction-id') : null),
            ),
          ),
        )
      ).filter((id): id is string => id !== null);
      instance.served.child.kill('SIGKILL');
      await instance.served.exited();
      // The next start on the host replays the journal into the same table.
      await start(env, { schema: instance.schema });
      await until(async () => {
        const { rows } = await db.query<{ id: string }>(
          `SELECT id FROM "${instance.schema}".gateway_transactions WHERE id = ANY($1::text[])`,
          [answered],
        );
        return rows.length === answered.length;
      }, `the ${answered.length} answered requests' records`);
    });
  });
});
