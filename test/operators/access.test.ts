/**
 * Operators on a gateway's admin listener over real HTTP: sign-in to a session cookie, the CSRF
 * token of a session's changes, roles on the admin routes and the monitoring console (a viewer
 * cannot reset), HTTP Basic for scripts (ADMIN_PASSWORD's admin included), throttled sign-ins,
 * and the audit log of it all.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { GatewayConfig } from '../../src/config/types.js';
import type { AuditEntry } from '../../src/operators/audit.js';
import type { SessionRevocations } from '../../src/operators/sessions.js';
import { openConfig, repoRoot } from '../gateway/helpers.js';
import { ADMIN_PASSWORD, basic, OperatorClient, PASSWORDS, startAdmin, type AdminListener } from './helpers.js';

const RESET = '/gateway/admin/reset-caches';

/**
 * The Set-Cookie headers of a sign-in (or, with `maxAge` 0, a sign-out) over plain HTTP, as fetch
 * joins them: one cookie per admin area, never a path an API can have, then the single path of
 * earlier versions cleared.
 */
function sessionCookies(value: string, maxAge: number): RegExp {
  const areas = ['admin', 'operators', 'configuration', 'console', 'metrics'].map(
    (area) => `eag_session=${value}; Path=/gateway/${area}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict`,
  );
  return new RegExp(`^${[...areas, 'eag_session=; Path=/gateway; Max-Age=0; HttpOnly; SameSite=Strict'].join(', ')}$`);
}

describe('operators: sessions, roles and the audit log', function () {
  this.timeout(60_000);
  let admin: AdminListener;

  before(async () => {
    admin = await startAdmin();
  });
  after(() => admin?.stop());

  it('signs in to an HttpOnly, SameSite=Strict session cookie (no Secure over plain HTTP) and says who is signed in', async () => {
    const client = new OperatorClient(admin.url);
    const before = await (await client.fetch('/gateway/operators/session')).json();
    expect(before).to.deep.equal({ signedIn: false });
    const res = await client.signIn('otto', PASSWORDS.otto);
    expect(res.status).to.equal(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).to.include({ signedIn: true, username: 'otto', role: 'operator' });
    expect(body['csrfToken']).to.match(/^[A-Za-z0-9_-]{43}$/);
    const value = /^eag_session=([A-Za-z0-9_-]{43});/.exec(client.lastSetCookie ?? '')?.[1];
    expect(client.lastSetCookie).to.match(sessionCookies(value!, 43200));
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const now = await (await client.fetch('/gateway/operators/session')).json();
    expect(now).to.deep.equal({ signedIn: true, username: 'otto', role: 'operator', csrfToken: body['csrfToken'] });
  });

  it('sets Secure on the cookie over TLS (as Express sees it through trust proxy)', async () => {
    const { default: express } = await import('express');
    const { createServer } = await import('node:http');
    const { listen, close } = await import('./helpers.js');
    const app = express();
    app.set('trust proxy', 'loopback');
    app.use(admin.gateway.adminRouter);
    const server = createServer(app);
    const url = await listen(server);
    try {
      const res = await fetch(`${url}/gateway/operators/session`, {
        method: 'POST',
        headers: { 'x-gateway-console': '1', 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: JSON.stringify({ username: 'vera', password: PASSWORDS.vera }),
      });
      expect(res.status).to.equal(200);
      expect(res.headers.getSetCookie()[0]).to.match(
        /^__Host-eag_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure$/,
      );
    } finally {
      await close(server);
    }
  });

  it('refuses a wrong password with 401 and no cookie, and a sign-in without the console header', async () => {
    const client = new OperatorClient(admin.url);
    const res = await client.signIn('otto', 'not-his-password');
    expect(res.status).to.equal(401);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(res.headers.get('www-authenticate'), 'no browser prompt for the page').to.equal(null);
    expect(client.cookie).to.equal(undefined);
    const forged = await fetch(`${admin.url}/gateway/operators/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: JSON.stringify({ username: 'otto', password: PASSWORDS.otto }),
    });
    expect(forged.status).to.equal(403);
    expect(forged.headers.get('set-cookie')).to.equal(null);
    const junk = await client.json('/gateway/operators/session', 'POST', { username: 'otto' });
    expect(junk.status).to.equal(400);
  });

  it('a viewer session reads the console and the status but cannot reset or forget (403), even with the CSRF token', async () => {
    const vera = new OperatorClient(admin.url);
    expect((await vera.signIn('vera', PASSWORDS.vera)).status).to.equal(200);
    expect((await vera.fetch('/gateway/console/api/transactions')).status).to.equal(200);
    expect((await vera.fetch('/gateway/admin/status')).status).to.equal(200);
    const reset = await vera.fetch(RESET, { method: 'POST' });
    expect(reset.status).to.equal(403);
    expect(((await reset.json()) as { detail: string }).detail).to.equal('your role does not allow this');
    expect((await vera.json('/gateway/admin/forget', 'POST', { subject: 'x' })).status).to.equal(403);
    expect((await vera.fetch('/gateway/operators/audit')).status, 'the audit log is for operators').to.equal(403);
  });

  it('an operator session resets the caches only with its CSRF token', async () => {
    const otto = new OperatorClient(admin.url);
    await otto.signIn('otto', PASSWORDS.otto);
    const without = await otto.fetch(RESET, { method: 'POST' }, false);
    expect(without.status).to.equal(403);
    const wrong = await otto.fetch(RESET, { method: 'POST', headers: { 'x-csrf-token': 'A'.repeat(43) } }, false);
    expect(wrong.status).to.equal(403);
    const ok = await otto.fetch(RESET, { method: 'POST' });
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.include.keys('loadedAt', 'apis', 'tokenResultsCleared');
  });

  it('keeps HTTP Basic for scripts, with the same roles: ADMIN_PASSWORD admin and operators reset, a viewer cannot', async () => {
    const post = (auth: string) =>
      fetch(`${admin.url}${RESET}`, { method: 'POST', headers: { authorization: auth, 'x-gateway-console': '1' } });
    expect((await post(basic('admin', ADMIN_PASSWORD))).status).to.equal(200);
    expect((await post(basic('otto', PASSWORDS.otto))).status).to.equal(200);
    expect((await post(basic('ada', PASSWORDS.ada))).status).to.equal(200);
    expect((await post(basic('vera', PASSWORDS.vera))).status).to.equal(403);
    const wrong = await post(basic('otto', 'nope'));
    expect(wrong.status).to.equal(401);
    expect(wrong.headers.get('www-authenticate')).to.equal('Basic realm="Gateway admin", charset="UTF-8"');
    const console = await fetch(`${admin.url}/gateway/console/api/transactions`, {
      headers: { authorization: basic('vera', PASSWORDS.vera), 'x-gateway-console': '1' },
    });
    expect(console.status).to.equal(200);
    const anonymous = await fetch(`${admin.url}/gateway/console/api/transactions`, { headers: { 'x-gateway-console': '1' } });
    expect(anonymous.status).to.equal(401);
  });

  it('signs out: the cookie is cleared and the session no longer opens anything', async () => {
    const ada = new OperatorClient(admin.url);
    await ada.signIn('ada', PASSWORDS.ada);
    const cookie = ada.cookie!;
    const out = await ada.fetch('/gateway/operators/session', { method: 'DELETE' });
    expect(out.status).to.equal(204);
    expect(ada.lastSetCookie).to.match(sessionCookies('', 0));
    const replay = await fetch(`${admin.url}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } });
    expect(replay.status).to.equal(401);
  });

  it("writes a failed reset's cause in its audit entry: the configuration's issues, never a secret", async () => {
    const SECRET = 'pa55-w0rd-never-logged';
    let broken = false;
    const own = await startAdmin({
      config: () =>
        Promise.resolve(
          broken
            ? ({
                apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: `ftp://user:${SECRET}@127.0.0.1:9/` } }],
                tokenPolicies: { Bad: { introspection: { clientSecret: SECRET } } },
              } as unknown as GatewayConfig)
            : openConfig('http://127.0.0.1:9'),
        ),
    });
    try {
      const ada = new OperatorClient(own.url);
      await ada.signIn('ada', PASSWORDS.ada);
      broken = true;
      const reset = await ada.fetch(RESET, { method: 'POST' });
      expect(reset.status).to.equal(422);
      const { issues } = (await reset.json()) as { issues: Array<{ path: string; message: string }> };
      expect(issues.length).to.be.greaterThan(0);
      const { items } = (await (await ada.fetch('/gateway/operators/audit?limit=100')).json()) as { items: AuditEntry[] };
      const entry = items.find((e) => e.action === 'reset-caches')!;
      expect(entry.result).to.not.equal('ok');
      expect(entry.detail).to.be.a('string').and.include('the previous configuration stays in force');
      for (const issue of issues) expect(entry.detail).to.include(`${issue.path}: ${issue.message}`);
      expect(JSON.stringify(items)).to.not.include(SECRET);
    } finally {
      await own.stop();
    }
  });

  it('logs every action in the audit log (who, when, from where, what, result), as JSON and as an export', async () => {
    const otto = new OperatorClient(admin.url);
    await otto.signIn('otto', PASSWORDS.otto);
    const res = await otto.fetch('/gateway/operators/audit?limit=100');
    expect(res.status).to.equal(200);
    const { items } = (await res.json()) as { items: AuditEntry[] };
    const line = (e: AuditEntry) => `${e.actor ?? '-'} ${e.action} ${e.result}${e.target === undefined ? '' : ` ${e.target}`}`;
    const lines = items.map(line).reverse();
    expect(lines).to.include('otto sign-in ok');
    expect(lines).to.include('- sign-in refused otto');
    expect(lines).to.include('vera reset-caches refused admin/reset-caches');
    expect(lines).to.include('vera forget refused admin/forget');
    expect(lines).to.include('otto reset-caches ok admin/reset-caches');
    expect(lines).to.include('admin reset-caches ok admin/reset-caches');
    // Later refusals of nobody from the same address are counted into one summary at the end of
    // the window (test/operators/refusals.test.ts), not logged one by one.
    expect(lines).to.include('ada sign-out ok');
    for (const entry of items) {
      expect(entry.address).to.match(/127\.0\.0\.1/);
      expect(Date.parse(entry.time)).to.be.closeTo(Date.now(), 60_000);
      expect(JSON.stringify(entry)).not.to.include(PASSWORDS.otto).and.not.to.include(ADMIN_PASSWORD);
    }
    const csv = await otto.fetch('/gateway/operators/audit/export?format=csv');
    expect(csv.headers.get('content-disposition')).to.match(/^attachment; filename="gateway-audit-.*\.csv"$/);
    const text = await csv.text();
    expect(text.split('\r\n')[0]).to.equal('id,time,actor,role,address,action,target,result,status,detail');
    expect(text).to.include(',otto,operator,');
    const json = await otto.fetch('/gateway/operators/audit/export');
    expect(((await json.json()) as AuditEntry[]).map((e) => e.id)).to.deep.equal(items.map((e) => e.id));
  });

  it('throttles failed sign-ins per address: 429 with Retry-After, even for the right password', async () => {
    const strict = await startAdmin({
      admin: { basicAuth: { username: 'admin', password: ADMIN_PASSWORD }, loginThrottle: { maxFailures: 3, windowMs: 60_000 } },
    });
    try {
      const client = new OperatorClient(strict.url);
      for (let i = 0; i < 3; i++) expect((await client.signIn('ada', 'wrong')).status).to.equal(401);
      const blocked = await client.signIn('ada', PASSWORDS.ada);
      expect(blocked.status).to.equal(429);
      expect(Number(blocked.headers.get('retry-after'))).to.be.within(1, 60);
      // The same throttle guards Basic logins of the admin routes and the console.
      const script = await fetch(`${strict.url}/gateway/admin/status`, {
        headers: { authorization: basic('ada', PASSWORDS.ada), 'x-gateway-console': '1' },
      });
      expect(script.status).to.equal(429);
    } finally {
      await strict.stop();
    }
  });

  it("maxPerUser: a fourth sign-in ends that user's oldest session only; a new password in the users file ends the user's sessions", async () => {
    const { writeFile } = await import('node:fs/promises');
    const { hashPassword } = await import('../../src/operators/passwords.js');
    const { testUsers } = await import('./helpers.js');
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-users-'));
    const file = path.join(dir, 'users.json');
    const [vera, otto] = await testUsers();
    await writeFile(file, JSON.stringify({ users: [vera, otto] }));
    const listener = await startAdmin({ operators: { usersFile: file, sessions: { maxPerUser: 3 } } });
    try {
      const status = async (client: OperatorClient) => (await client.fetch('/gateway/admin/status')).status;
      const otto1 = new OperatorClient(listener.url);
      await otto1.signIn('otto', PASSWORDS.otto);
      const veras: OperatorClient[] = [];
      for (let i = 0; i < 4; i++) {
        veras.push(new OperatorClient(listener.url));
        await veras[i]!.signIn('vera', PASSWORDS.vera);
      }
      expect(await Promise.all([...veras, otto1].map(status))).to.deep.equal([401, 200, 200, 200, 200]);
      await writeFile(file, JSON.stringify({ users: [{ ...vera!, passwordHash: await hashPassword('vera-new-pass') }, otto] }));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await Promise.all([...veras, otto1].map(status))).to.deep.equal([401, 401, 401, 401, 200]);
    } finally {
      await listener.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('checks maxPerUser and maxSessions at creation', async () => {
    const { createGateway } = await import('../../src/index.js');
    const { openConfig } = await import('../gateway/helpers.js');
    const make = (sessions: object) => () =>
      createGateway({
        config: openConfig('http://127.0.0.1:9'),
        admin: { basicAuth: { username: 'admin', password: 'x' } },
        operators: { sessions },
      });
    expect(make({ maxPerUser: 0 })).to.throw(TypeError, 'createGateway: options.operators.sessions.maxPerUser must be a positive integer');
    expect(make({ maxPerUser: 2.5 })).to.throw(
      TypeError,
      'createGateway: options.operators.sessions.maxPerUser must be a positive integer',
    );
    expect(make({ maxSessions: -1 })).to.throw(
      TypeError,
      'createGateway: options.operators.sessions.maxSessions must be a positive integer',
    );
  });

  it('adds a user with the CLI (password from standard input, only its hash stored), who can then sign in', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-users-'));
    const file = path.join(dir, 'users.json');
    try {
      const run = (args: string[], input: string) =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
          const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src/server/cli.ts'), 'users', ...args], {
            cwd: repoRoot,
          });
          let out = '';
          let err = '';
          child.stdout.on('data', (d) => (out += d));
          child.stderr.on('data', (d) => (err += d));
          child.on('close', (code) => resolve({ code, out, err }));
          child.stdin.end(input);
        });
      const added = await run(['add', '--file', file, '--username', 'carla', '--role', 'operator'], 'carla-pass-9-long\n');
      expect(added.code, added.err).to.equal(0);
      expect(added.out).to.include('added carla (operator)');
      const text = await readFile(file, 'utf8');
      expect(text).not.to.include('carla-pass-9-long');
      expect(JSON.parse(text).users[0]).to.include({ username: 'carla', role: 'operator' });
      const bad = await run(['add', '--file', file, '--username', 'x', '--role', 'root'], 'p\n');
      expect(bad.code).to.equal(2);
      expect(bad.err).to.include('--role must be one of viewer, operator, admin');
      const hashed = await run(['hash'], 'a passphrase of words\n');
      expect(hashed.out).to.match(/^scrypt\$/);
      const listener = await startAdmin({ operators: { usersFile: file } });
      try {
        const carla = new OperatorClient(listener.url);
        const res = await carla.signIn('carla', 'carla-pass-9-long');
        expect(res.status).to.equal(200);
        expect(((await res.json()) as { role: string }).role).to.equal('operator');
      } finally {
        await listener.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The instances' channel of sign-outs, in memory: what `serve --workers` (through the primary) and
 * Redis (pub/sub) carry between processes. `inject` plays a forger who can write to the channel.
 */
function signOutBus(): { member(): SessionRevocations; inject(id: unknown, until: unknown): void } {
  const listeners = new Set<(id: string, until: number) => void>();
  return {
    member() {
      let own: ((id: string, until: number) => void) | undefined;
      return {
        publish(id, until) {
          for (const listener of listeners) if (listener !== own) listener(id, until);
        },
        subscribe(listener) {
          own = listener;
          listeners.add(listener);
        },
      };
    },
    inject(id, until) {
      for (const listener of listeners) listener(id as string, until as number);
    },
  };
}

describe('operators: signed sessions shared by instances', function () {
  this.timeout(60_000);
  const secret = 'a-session-secret-of-at-least-32-characters';
  const bus = signOutBus();
  let one: AdminListener;
  let two: AdminListener;
  let other: AdminListener;

  before(async () => {
    const { testUsers } = await import('./helpers.js');
    const users = await testUsers();
    one = await startAdmin({ operators: { users, sessions: { secret, revocations: bus.member() } } });
    two = await startAdmin({ operators: { users, sessions: { secret, revocations: bus.member() } } });
    other = await startAdmin({ operators: { users } });
  });
  after(async () => {
    await one?.stop();
    await two?.stop();
    await other?.stop();
  });

  it('a session opened on one instance works on another with the same secret, CSRF token included, and nowhere else', async () => {
    const otto = new OperatorClient(one.url);
    await otto.signIn('otto', PASSWORDS.otto);
    const value = /^eag_session=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43});/.exec(otto.lastSetCookie ?? '')?.[1];
    expect(otto.lastSetCookie).to.match(sessionCookies(value!, 43200));
    const onTwo = new OperatorClient(two.url);
    onTwo.cookie = otto.cookie;
    onTwo.csrf = otto.csrf;
    expect(await (await onTwo.fetch('/gateway/operators/session')).json()).to.deep.equal({
      signedIn: true,
      username: 'otto',
      role: 'operator',
      csrfToken: otto.csrf,
    });
    expect((await onTwo.fetch(RESET, { method: 'POST' })).status).to.equal(200);
    expect((await onTwo.fetch(RESET, { method: 'POST' }, false)).status, 'without the CSRF token').to.equal(403);
    const elsewhere = await fetch(`${other.url}/gateway/admin/status`, { headers: { cookie: otto.cookie!, 'x-gateway-console': '1' } });
    expect(elsewhere.status).to.equal(401);
  });

  it('refuses a tampered session (another user or role written in it) and one signed out', async () => {
    const vera = new OperatorClient(one.url);
    await vera.signIn('vera', PASSWORDS.vera);
    const [payload, signature] = vera.cookie!.slice('eag_session='.length).split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), u: 'ada' })).toString(
      'base64url',
    );
    const tampered = await fetch(`${two.url}/gateway/admin/status`, {
      headers: { cookie: `eag_session=${forged}.${signature}`, 'x-gateway-console': '1' },
    });
    expect(tampered.status).to.equal(401);
    const cookie = vera.cookie!;
    expect((await vera.fetch('/gateway/operators/session', { method: 'DELETE' })).status).to.equal(204);
    const replay = await fetch(`${one.url}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } });
    expect(replay.status).to.equal(401);
    // The other instance heard of the sign-out: the stolen cookie is no good there either.
    const elsewhere = await fetch(`${two.url}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } });
    expect(elsewhere.status).to.equal(401);
  });

  it('a malformed sign-out on the channel changes nothing; a well-formed one ends that session only', async () => {
    const otto = new OperatorClient(one.url);
    await otto.signIn('otto', PASSWORDS.otto);
    const ada = new OperatorClient(one.url);
    await ada.signIn('ada', PASSWORDS.ada);
    const status = async (client: OperatorClient, on: AdminListener) =>
      (await fetch(`${on.url}/gateway/admin/status`, { headers: { cookie: client.cookie!, 'x-gateway-console': '1' } })).status;
    const { n: nonce, c: created } = JSON.parse(
      Buffer.from(otto.cookie!.slice('eag_session='.length).split('.')[0]!, 'base64url').toString(),
    ) as { n: string; c: number };
    const soon = Date.now() + 60_000;
    for (const [id, until] of [
      [undefined, soon],
      ['x'.repeat(5000), soon],
      [{ toString: () => 'x' }, 1],
      [`${nonce}:${created}:otto`, 'soon'],
      [null, null],
      // The message of versions that carried the nonce alone, a user unknown here, a time to come.
      [nonce, soon],
      [`${nonce}:${created}:mallory`, soon],
      [`*:${Date.now() + 3_600_000}:otto`, soon],
    ]) {
      bus.inject(id, until);
    }
    expect([await status(otto, one), await status(otto, two), await status(ada, two)]).to.deep.equal([200, 200, 200]);
    bus.inject(`${nonce}:${created}:otto`, soon);
    expect([await status(otto, one), await status(otto, two), await status(ada, one), await status(ada, two)]).to.deep.equal([
      401, 401, 200, 200,
    ]);
  });

  it("a user's sign-outs past maxPerUser: every signed-out cookie refused on both instances, and what the channel keeps stays within users × (maxPerUser + 1)", async () => {
    const { testUsers } = await import('./helpers.js');
    const users = await testUsers();
    // What a channel that keeps sign-outs (Redis's sorted set) holds: added on publish, dropped on forget.
    const kept = new Set<string>();
    const keeping = (member: SessionRevocations): SessionRevocations => ({
      publish(id, until) {
        kept.add(id);
        member.publish(id, until);
      },
      subscribe: (listener) => member.subscribe(listener),
      forget(signOuts) {
        for (const { id } of signOuts) kept.delete(id);
      },
    });
    const local = signOutBus();
    const sessions = { secret, maxPerUser: 3 };
    const a = await startAdmin({ operators: { users, sessions: { ...sessions, revocations: keeping(local.member()) } } });
    const b = await startAdmin({ operators: { users, sessions: { ...sessions, revocations: keeping(local.member()) } } });
    try {
      const ada = new OperatorClient(a.url);
      await ada.signIn('ada', PASSWORDS.ada);
      const cookies: string[] = [];
      for (let i = 0; i < 40; i++) {
        const vera = new OperatorClient(i % 2 === 0 ? a.url : b.url);
        await vera.signIn('vera', PASSWORDS.vera);
        cookies.push(vera.cookie!);
        expect((await vera.fetch('/gateway/operators/session', { method: 'DELETE' })).status).to.equal(204);
      }
      const status = async (cookie: string, on: AdminListener) =>
        (await fetch(`${on.url}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1' } })).status;
      for (const cookie of cookies) expect([await status(cookie, a), await status(cookie, b)]).to.deep.equal([401, 401]);
      expect(await status(ada.cookie!, b)).to.equal(200);
      expect(kept.size).to.be.at.most(3 + 1);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('checks the sign-out channel at creation: it needs the secret and both methods', async () => {
    const { createGateway } = await import('../../src/index.js');
    const { openConfig } = await import('../gateway/helpers.js');
    const make = (sessions: object) => () =>
      createGateway({
        config: openConfig('http://127.0.0.1:9'),
        admin: { basicAuth: { username: 'admin', password: 'x' } },
        operators: { sessions },
      });
    expect(make({ revocations: bus.member() })).to.throw(
      TypeError,
      'createGateway: options.operators.sessions.revocations needs operators.sessions.secret',
    );
    expect(make({ secret, revocations: { publish() {} } })).to.throw(
      TypeError,
      'createGateway: options.operators.sessions.revocations must have publish(id, until) and subscribe(listener)',
    );
  });

  it('refuses a secret shorter than 32 characters at creation', async () => {
    const { createGateway } = await import('../../src/index.js');
    const { openConfig } = await import('../gateway/helpers.js');
    expect(() =>
      createGateway({
        config: openConfig('http://127.0.0.1:9'),
        admin: { basicAuth: { username: 'admin', password: 'x' } },
        operators: { sessions: { secret: 'short' } },
      }),
    ).to.throw(TypeError, 'createGateway: options.operators.sessions.secret must be a string of at least 32 characters');
  });
});
