/**
 * Findings 5, 7 and 8 (operator sessions): a session must not outlive its user's removal or keep
 * a role taken away, a sign-out must never be forgotten because others filled the memory, and one
 * user's sign-ins must not sign everyone else out. Played against `express-access-gateway serve`
 * over real HTTP: the attacker is the lowest operator role (a viewer) with nothing but the admin
 * port, the admin one who edits the users file as the product documents it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createClient } from 'redis';
import { openConfig } from '../gateway/helpers.js';
import { lowCostPasswordHash, OperatorClient } from '../operators/helpers.js';
import { freePort, serve, stop, type Served } from '../server/support.js';

const CONFIG_API = '/gateway/configuration/api/config';
const STATUS = '/gateway/admin/status';
const SECRET = 'operator-sessions-test-secret-0123456789';
const PASSWORDS = { vera: 'vera-viewer-pass', otto: 'otto-operator-pass', ada: 'ada-admin-pass', grace: 'grace-admin-pass' } as const;
type Name = keyof typeof PASSWORDS;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sign-ins at once from this one address: fewer than the login throttle's 5, which counts an
 * attempt before its password is checked (a sixth at once is refused, even with the right one).
 */
const SIGN_IN_LANES = 4;

/** Runs `task(i)` for i in [0, count) with `width` at once, in order of i within each lane. */
async function inLanes(count: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** The resident memory of a process, in MiB (Linux). */
async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** What the admin listener answers a request carrying only this cookie. */
async function statusWith(admin: string, cookie: string): Promise<number> {
  const res = await fetch(`${admin}${STATUS}`, { headers: { cookie, 'x-gateway-console': '1', connection: 'close' } });
  await res.arrayBuffer();
  return res.status;
}

describe('security: operator sessions (findings 5, 7, 8)', function () {
  this.timeout(180_000);
  let dir: string;
  let hashes: Record<Name, string>;
  const served: Served[] = [];

  const usersFile = (): string => path.join(dir, 'users.json');
  async function writeUsers(roles: Partial<Record<Name, 'viewer' | 'operator' | 'admin'>>): Promise<void> {
    const users = Object.entries(roles).map(([username, role]) => ({ username, role, passwordHash: hashes[username as Name] }));
    await writeFile(usersFile(), JSON.stringify({ users }));
  }

  async function start(env: Record<string, string> = {}, args: string[] = []): Promise<{ admin: string; served: Served }> {
    const adminPort = await freePort();
    const one = serve(
      [
        'serve',
        '--config',
        path.join(dir, 'gateway.json'),
        '--port',
        '0',
        '--admin-port',
        String(adminPort),
        '--users',
        usersFile(),
        ...args,
      ],
      env,
    );
    served.push(one);
    await one.waitFor(args.includes('--workers') ? /(worker \d+ serving[\s\S]*){2}/ : /serving APIs at/, 60_000);
    return { admin: `http://127.0.0.1:${adminPort}`, served: one };
  }

  async function signedIn(admin: string, name: Name): Promise<OperatorClient> {
    const client = new OperatorClient(admin);
    const res = await client.signIn(name, PASSWORDS[name]);
    expect(res.status, `${name} signs in`).to.equal(200);
    return client;
  }

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-sessions-'));
    await writeFile(path.join(dir, 'gateway.json'), JSON.stringify(openConfig('http://127.0.0.1:9')));
    // These tests sign in some 20,000 times: the lowest cost the gateway accepts keeps that to the
    // sessions' own work (the default cost is checked in test/operators/passwords.test.ts).
    const entries = (Object.keys(PASSWORDS) as Name[]).map((name) => [name, lowCostPasswordHash(PASSWORDS[name])] as const);
    hashes = Object.fromEntries(entries) as Record<Name, string>;
  });
  afterEach(async () => {
    await Promise.all(served.splice(0).map((one) => stop(one)));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('finding 5: an admin removed from the users file cannot save with the session opened before; one demoted to viewer gets 403', async () => {
    await writeUsers({ ada: 'admin', grace: 'admin', vera: 'viewer' });
    const { admin } = await start();
    const ada = await signedIn(admin, 'ada');
    const grace = await signedIn(admin, 'grace');
    const read = await ada.fetch(CONFIG_API);
    expect(read.status).to.equal(200);
    const { document, version } = (await read.json()) as { document: unknown; version: { version: number } };
    // The save both would make: the document as it is, as a new version.
    const save = (client: OperatorClient, comment: string) =>
      client.json(CONFIG_API, 'PUT', { document, comment, dryRun: true, baseVersion: version.version });
    expect((await save(ada, 'before')).status).to.equal(200);
    expect((await save(grace, 'before')).status).to.equal(200);

    // The admin edits the users file: ada removed, grace made a viewer. The gateway reads it again
    // within a second of a change.
    await writeUsers({ grace: 'viewer', vera: 'viewer' });
    await sleep(1_100);

    const removed = await save(ada, 'after removal');
    expect(removed.status, 'a removed user saves').to.equal(401);
    expect(await (await ada.fetch('/gateway/operators/session')).json()).to.deep.equal({ signedIn: false });
    expect(await statusWith(admin, ada.cookie!), 'nor reads').to.equal(401);
    const demoted = await save(grace, 'after demotion');
    expect(demoted.status, 'a demoted admin saves').to.equal(403);
    expect(await (await grace.fetch('/gateway/operators/session')).json()).to.include({
      signedIn: true,
      username: 'grace',
      role: 'viewer',
    });

    // Put back with the same password: the session opened before the removal stays ended.
    await writeUsers({ ada: 'admin', grace: 'viewer', vera: 'viewer' });
    await sleep(1_100);
    expect((await save(ada, 'after coming back')).status).to.equal(401);
    const again = await signedIn(admin, 'ada');
    expect((await save(again, 'signed in again')).status).to.equal(200);
  });

  it('finding 7: after a viewer signs in and out 10,050 times, the admin still signs out (serve --workers 2 and an instance started later, on Redis)', async function () {
    // 20,100 requests: about 40 s on an idle machine, several minutes on a crowded one.
    this.timeout(600_000);
    await writeUsers({ ada: 'admin', otto: 'operator', vera: 'viewer' });
    const keyPrefix = `eagtest-sessions-${randomBytes(4).toString('hex')}:`;
    const env = {
      GATEWAY_SESSION_SECRET: SECRET,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      GATEWAY_CLUSTER_SECRET: randomBytes(32).toString('base64'),
    };
    const redis = createClient({ url: 'redis://127.0.0.1:6379' });
    await redis.connect();
    try {
      const { admin, served: primary } = await start(env, ['--workers', '2']);
      const workers = [...primary.output().matchAll(/worker (\d+) serving/g)].map((m) => Number(m[1]));
      const ada = await signedIn(admin, 'ada');
      const otto = await signedIn(admin, 'otto');
      const rssBefore = await Promise.all(workers.map(rssMiB));

      const cycles = 10_050;
      const veraCookies: string[] = [];
      let endedEarly = 0;
      const started = Date.now();
      await inLanes(cycles, SIGN_IN_LANES, async (i) => {
        const vera = await signedIn(admin, 'vera');
        veraCookies[i] = vera.cookie!;
        const status = (await vera.fetch('/gateway/operators/session', { method: 'DELETE' })).status;
        // 401: her session was ended already, covered by the sign-outs of ten she opened after it.
        expect(status).to.be.oneOf([204, 401]);
        if (status === 401) endedEarly++;
      });
      const elapsed = Date.now() - started;

      const adaCookie = ada.cookie!;
      expect((await ada.fetch('/gateway/operators/session', { method: 'DELETE' })).status).to.equal(204);
      await sleep(300);
      const rssAfter = await Promise.all(workers.map(rssMiB));
      const remembered = await redis.zCard(`${keyPrefix}sessions:signed-out:ids`);
      console.log(
        `      ${cycles} sign-in/out cycles in ${elapsed} ms; workers' RSS ${rssBefore.map((m) => m.toFixed(1)).join('/')} → ${rssAfter.map((m) => m.toFixed(1)).join('/')} MiB; sign-outs kept in Redis: ${remembered}; viewer's sessions ended before their sign-out: ${endedEarly}`,
      );

      // New connections: the primary hands them to either worker.
      const adaStatuses = await Promise.all(Array.from({ length: 6 }, () => statusWith(admin, adaCookie)));
      expect(adaStatuses, "the admin's signed-out cookie, on both workers").to.deep.equal(Array(6).fill(401));
      expect(await statusWith(admin, otto.cookie!), 'the operator who did not sign out').to.equal(200);
      for (const i of [0, 1, 5_000, cycles - 2, cycles - 1])
        expect(await statusWith(admin, veraCookies[i]!), `vera's signed-out cookie ${i}`).to.equal(401);
      // What an instance joining later reads from Redis stays within users × (sessions per user + 1).
      expect(remembered, 'sign-outs kept in Redis').to.be.at.most(3 * 11);

      const late = await start(env);
      expect(await statusWith(late.admin, adaCookie), "the admin's signed-out cookie on an instance started later").to.equal(401);
      expect(await statusWith(late.admin, veraCookies[cycles - 1]!), "the viewer's last signed-out cookie there").to.equal(401);
      expect(await statusWith(late.admin, otto.cookie!), 'the operator there').to.equal(200);
    } finally {
      await Promise.all(served.splice(0).map((one) => stop(one)));
      for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
      await redis.close();
    }
  });

  it("finding 8: 10,001 sign-ins of a viewer end only the viewer's oldest sessions, never the operators'", async () => {
    await writeUsers({ ada: 'admin', otto: 'operator', vera: 'viewer' });
    const { admin, served: one } = await start();
    const ada = await signedIn(admin, 'ada');
    const otto = await signedIn(admin, 'otto');
    const rssBefore = await rssMiB(one.child.pid!);
    const count = 10_001;
    const veraCookies: string[] = [];
    const started = Date.now();
    // The last ten one after the other: they are the viewer's newest, in this order.
    await inLanes(count - 10, SIGN_IN_LANES, async (i) => {
      veraCookies[i] = (await signedIn(admin, 'vera')).cookie!;
    });
    for (let i = count - 10; i < count; i++) veraCookies[i] = (await signedIn(admin, 'vera')).cookie!;
    const elapsed = Date.now() - started;
    const rssAfter = await rssMiB(one.child.pid!);
    console.log(`      ${count} sign-ins in ${elapsed} ms; RSS ${rssBefore.toFixed(1)} → ${rssAfter.toFixed(1)} MiB`);

    expect(await statusWith(admin, ada.cookie!), 'the admin').to.equal(200);
    expect(await statusWith(admin, otto.cookie!), 'the operator').to.equal(200);
    expect(
      (await ada.json(CONFIG_API, 'PUT', { document: openConfig('http://127.0.0.1:9'), dryRun: true })).status,
      "the admin's save",
    ).to.equal(200);
    // The viewer keeps her latest sessions (10 by default); her first ones ended.
    const last = veraCookies.slice(-10);
    expect(await Promise.all(last.map((cookie) => statusWith(admin, cookie))), "the viewer's latest 10").to.deep.equal(Array(10).fill(200));
    expect(
      await Promise.all([0, 1, 5_000, count - 11].map((i) => statusWith(admin, veraCookies[i]!))),
      "the viewer's older ones",
    ).to.deep.equal([401, 401, 401, 401]);
  });
});
