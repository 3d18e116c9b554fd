/**
 * `express-access-gateway serve`, run as a user runs it: the built command in a child process on
 * loopback, with the demo authorization server and an echo backend.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { echoBackend, editJson, exampleCopy, openConfig, repoRoot } from '../gateway/helpers.js';
import { cli, freePort, serve, stop } from './support.js';

describe('express-access-gateway serve', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
  });
  after(async () => {
    await Promise.all([as.stop(), echo.stop(), copy.remove()]);
  });

  it('--help documents the command, its options, environment and exit codes', async () => {
    const served = serve(['--help']);
    expect(await served.exited()).to.equal(0);
    for (const text of [
      'serve --config <file>',
      '--port',
      '--host',
      '--admin-port',
      '--workers <n|auto>',
      'ADMIN_PASSWORD',
      'SIGTERM',
      'Exit codes',
    ]) {
      expect(served.output()).to.include(text);
    }
  });

  it('a bad configuration exits 2 with the path of the bad field; bad usage exits 2 too', async () => {
    const bad = path.join(copy.dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ apis: [{ provider: 'Ente', name: 'X', version: 1, backend: { url: 'ftp://nope' } }] }));
    const served = serve(['serve', '--config', bad, '--port', '0', '--admin-port', '0']);
    expect(await served.exited()).to.equal(2);
    expect(served.output()).to.match(/apis\[0\]\.backend\.url/);
    const usage = serve(['serve', '--port', '0']);
    expect(await usage.exited()).to.equal(2);
    expect(usage.output()).to.include('--config <file> is required');
    const environment = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', '0'], {
      REDIS_COMMAND_TIMEOUT_MS: '1e3',
    });
    expect(await environment.exited()).to.equal(2);
    expect(environment.output()).to.include('REDIS_COMMAND_TIMEOUT_MS must be a whole number of milliseconds from 1 to 60000, got "1e3"');
    // Fail closed: Redis without the secret that signs what the instances share there.
    const unsigned = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', '0'], {
      REDIS_URL: 'redis://127.0.0.1:6379',
    });
    expect(await unsigned.exited()).to.equal(2);
    expect(unsigned.output()).to.include('REDIS_URL needs GATEWAY_CLUSTER_SECRET');
    const short = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', '0'], {
      REDIS_URL: 'redis://127.0.0.1:6379',
      GATEWAY_CLUSTER_SECRET: 'short-cluster-secret',
    });
    expect(await short.exited()).to.equal(2);
    expect(short.output()).to.include('GATEWAY_CLUSTER_SECRET must be a secret of at least 32 characters');
    expect(short.output()).not.to.include('short-cluster-secret');
  });

  it('a configuration refused at start: the records docs/traffic-control.md shows, on stdout; stderr empty', async () => {
    const guide = await readFile(path.join(repoRoot, 'docs', 'traffic-control.md'), 'utf8');
    const shown = /```text\n(invalid gateway configuration \(([^)]+)\): [^\n]*)\n```/.exec(guide);
    expect(shown, "the guide's refusal line").to.not.equal(null);
    const bad = path.join(copy.dir, 'bad-traffic.json');
    await writeFile(
      bad,
      JSON.stringify({
        trafficControl: { policies: [{ name: 'per-client', metric: 'requests', limit: 0, windowSeconds: 60, groupBy: ['clientId'] }] },
        apis: [
          {
            provider: 'Ente',
            name: 'X',
            version: 1,
            backend: { url: 'http://127.0.0.1:1' },
            trafficControl: {
              policies: [
                { name: 'burst', metric: 'concurrentRequests', limit: 5 },
                { name: 'per-minute', metric: 'requests', limit: 100 },
              ],
            },
          },
        ],
      }),
    );
    const served = serve(['serve', '--config', bad, '--port', '0', '--admin-port', '0'], {
      LOG_FORMAT: 'json',
      ADMIN_PASSWORD: 'cli-admin',
    });
    expect(await served.exited()).to.equal(2);
    const { stdout, stderr } = served.streams();
    expect(stderr).to.equal('');
    const records = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event?: string; issues?: unknown; cause?: string });
    expect(records.find((r) => r.event === 'config_error')?.issues).to.deep.equal([
      { path: 'trafficControl.policies[0].limit', message: 'must be a positive integer' },
      { path: 'apis[0].trafficControl.policies[1].windowSeconds', message: 'is required for a requests policy' },
    ]);
    expect(records.find((r) => r.event === 'not_ready')?.cause).to.equal(shown![1]!.replace(shown![2]!, bad));
  });

  it('a usage error is one line naming the problem, the nearest flag and --help; no arguments print the short usage; all exit 2', async () => {
    const said = async (args: string[]): Promise<string> => {
      const run = serve(args);
      expect(await run.exited(), run.output()).to.equal(2);
      return run.output();
    };
    expect(await said(['serve', '--prot', '8080'])).to.equal(
      'express-access-gateway: unknown option --prot (did you mean --port?); see express-access-gateway --help\n',
    );
    expect(await said(['serve', '--config', copy.configFile, '--adminport', '0'])).to.equal(
      'express-access-gateway: unknown option --adminport (did you mean --admin-port?); see express-access-gateway --help\n',
    );
    expect(await said(['serve', '--config', copy.configFile, '--port'])).to.equal(
      'express-access-gateway: --port needs a value; see express-access-gateway --help\n',
    );
    expect(await said(['serv', '--config', copy.configFile])).to.equal(
      'express-access-gateway: unknown command "serv" (did you mean serve?); see express-access-gateway --help\n',
    );
    expect(await said(['users', 'add', '--fiel', 'users.json'])).to.equal(
      'express-access-gateway users: unknown option --fiel (did you mean --file?); see express-access-gateway users --help\n',
    );
    const bare = await said([]);
    expect(bare).to.match(/^Usage: express-access-gateway serve --config <file> \[options\]\n/);
    expect(bare).to.include('express-access-gateway --help lists every option.');
    expect(bare.split('\n').length).to.be.below(8);
  });

  it('a configuration file that is not JSON: the file, the line and the column of the problem, and what it is', async () => {
    const cut = path.join(copy.dir, 'cut.json');
    await writeFile(cut, '{\n  "apis": [\n    { "provider": "Ente",\n');
    const checked = serve(['serve', '--config', cut, '--check-config']);
    expect(await checked.exited()).to.equal(2);
    expect(checked.output()).to.equal(
      `configuration not usable: ${cut}: 1 problem(s)\n  (document): not valid JSON at line 4, column 1: the file ends where a property name in double quotes was expected\n`,
    );
    const comma = path.join(copy.dir, 'comma.json');
    await writeFile(comma, '{\n  "apis": [],\n}\n');
    const served = serve(['serve', '--config', comma, '--port', '0', '--admin-port', '0']);
    expect(await served.exited()).to.equal(2);
    expect(served.output()).to.include(`(${comma})`).and.include('not valid JSON at line 3, column 1: "}" after a comma');
  });

  it('serves the scenario, with admin, console and health on their own port, and stops on SIGTERM with exit 0', async () => {
    // --admin-port 0 serves no admin listener: take a free port.
    const adminPort = await freePort();
    const served = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: 'cli-admin',
    });
    try {
      const [, api, admin] = await served.waitFor(/serving APIs at (http:\/\/[^\s,]+), admin and console at (http:\/\/\S+)/);
      expect(admin).to.equal(`http://127.0.0.1:${adminPort}`);
      const token = await as.issueToken('client1', 'client1-secret');
      const denied = await as.issueToken('client3', 'client3-secret');
      const ok = await fetch(`${api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).to.equal(201);
      expect(ok.headers.get('gateway-message-id')).to.be.a('string');
      const forbidden = await fetch(`${api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${denied}` } });
      expect(forbidden.status).to.equal(403);
      expect((await fetch(`${api}/gateway/Ente/PetStore/v1/pet/10`)).status).to.equal(400);
      // Admin and console live on the admin port only.
      const basic = `Basic ${Buffer.from('admin:cli-admin').toString('base64')}`;
      expect(
        (await fetch(`${api}/gateway/console/api/transactions`, { headers: { authorization: basic, 'x-gateway-console': '1' } })).status,
      ).to.equal(404);
      const records = await fetch(`${admin}/gateway/console/api/transactions`, {
        headers: { authorization: basic, 'x-gateway-console': '1' },
      });
      expect(records.status).to.equal(200);
      const { items } = (await records.json()) as { items: Array<{ status: number }> };
      expect(items.map((r) => r.status)).to.include.members([201, 403, 400]);
      for (const check of ['live', 'ready']) {
        const health = await fetch(`${admin}/gateway/health/${check}`);
        expect(health.status, check).to.equal(200);
        expect(await health.json()).to.deep.equal({ status: 'ok' });
      }
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });

  it('--metrics: behind the admin credentials by default, open for an internal scrape, or off; a bad mode exits 2', async () => {
    const basic = `Basic ${Buffer.from('admin:cli-admin').toString('base64')}`;
    const scrape = async (mode: string[]): Promise<{ anonymous: number; admin: number; text: string }> => {
      const adminPort = await freePort();
      const served = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', String(adminPort), ...mode], {
        ADMIN_PASSWORD: 'cli-admin',
      });
      try {
        const [, api] = await served.waitFor(/serving APIs at (http:\/\/[^\s,]+), admin/);
        const token = await as.issueToken('client1', 'client1-secret');
        expect((await fetch(`${api}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(
          201,
        );
        const url = `http://127.0.0.1:${adminPort}/gateway/metrics`;
        const anonymous = (await fetch(url)).status;
        const answer = await fetch(url, { headers: { authorization: basic } });
        return { anonymous, admin: answer.status, text: await answer.text() };
      } finally {
        await stop(served);
      }
    };
    const guarded = await scrape([]);
    expect([guarded.anonymous, guarded.admin]).to.deep.equal([401, 200]);
    expect(guarded.text).to.match(/^gateway_requests_total\{api="Ente\/PetStore\/v1",.*status="201"\} 1$/m);
    const open = await scrape(['--metrics', 'open']);
    expect([open.anonymous, open.admin]).to.deep.equal([200, 200]);
    const off = await scrape(['--metrics', 'off']);
    expect([off.anonymous, off.admin]).to.deep.equal([404, 404]);
    const bad = serve(['serve', '--config', copy.configFile, '--metrics', 'public']);
    expect(await bad.exited()).to.equal(2);
    expect(bad.output()).to.include('--metrics must be auth, open or off');
  });

  it('--workers 2: a scrape, whichever worker takes it, counts the exchanges of both', async () => {
    const open = path.join(copy.dir, 'open-metrics.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve([
      'serve',
      '--config',
      open,
      '--port',
      String(port),
      '--admin-port',
      String(adminPort),
      '--workers',
      '2',
      '--metrics',
      'open',
    ]);
    try {
      await served.waitFor(/(worker \d+ serving[\s\S]*){2}/);
      const sent = 40;
      for (let i = 0; i < sent; i++) {
        // A new connection each time: the primary hands them to the workers in turn.
        const res = await fetch(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`, { headers: { connection: 'close' } });
        expect(res.status).to.equal(201);
      }
      for (let i = 0; i < 4; i++) {
        const text = await (await fetch(`http://127.0.0.1:${adminPort}/gateway/metrics`, { headers: { connection: 'close' } })).text();
        const counted = [...text.matchAll(/^gateway_requests_total\{[^}]*api="Ente\/Echo\/v1"[^}]*\} (\d+)$/gm)].reduce(
          (n, m) => n + Number(m[1]),
          0,
        );
        expect(counted, `scrape ${i}`).to.equal(sent);
      }
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });

  it('SIGTERM during a slow backend answer lets that answer finish, then exits 0', async () => {
    const open = path.join(copy.dir, 'open.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const served = serve(['serve', '--config', open, '--port', '0', '--admin-port', '0', '--grace-period', '5000']);
    try {
      const [, api] = await served.waitFor(/serving APIs at (http:\/\/\S+)/);
      const answer = fetch(`${api}/gateway/Ente/Echo/v1/hold`).then(async (res) => ({ status: res.status, body: await res.text() }));
      // The backend has sent its first part: the exchange is in flight.
      const deadline = Date.now() + 5_000;
      while (!echo.seen.some((s) => s.url === '/hold') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 100));
      served.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(served.child.exitCode, 'still running while the exchange is in flight').to.equal(null);
      echo.release();
      expect(await answer).to.deep.equal({ status: 200, body: 'first;second' });
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });

  it('an invalid users file exits 2 naming the file and the field', async () => {
    const users = path.join(copy.dir, 'users.json');
    await writeFile(users, JSON.stringify({ users: [{ username: 'ada', role: 'root', passwordHash: 'x' }] }));
    const served = serve(['serve', '--config', copy.configFile, '--port', '0', '--admin-port', '0', '--users', users]);
    expect(await served.exited()).to.equal(2);
    expect(served.output()).to.include(
      `invalid users file (${users}): users[0].role: user ada has the role "root": must be one of viewer, operator, admin`,
    );
    expect(served.output()).not.to.include('invalid gateway configuration');
  });

  it('users add refuses a password shorter than 15 characters, saying the minimum, and writes nothing', async () => {
    const users = path.join(copy.dir, 'users-short.json');
    const add = (password: string): Promise<{ code: number | null; err: string }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [cli, 'users', 'add', '--file', users, '--username', 'ada', '--role', 'admin']);
        let err = '';
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
        child.once('close', (code) => resolve({ code, err }));
        child.stdin.end(`${password}\n`);
      });
    const short = await add('hunt2');
    expect(short.code).to.equal(2);
    expect(short.err).to.equal(
      'express-access-gateway users: the password must be at least 15 characters, got 5: operators sign in with it alone (a few words make one easily); see express-access-gateway users --help\n',
    );
    expect(short.err).not.to.include('hunt2');
    expect(await readFile(users, 'utf8').catch(() => 'none')).to.equal('none');
    const long = await add('correct horse battery');
    expect(long.code, long.err).to.equal(0);
    expect(JSON.parse(await readFile(users, 'utf8'))).to.have.nested.property('users[0].username', 'ada');
  });

  it('--workers 2 with --users: a session opened on the shared admin port holds whichever worker answers, and a sign-out ends it on both', async () => {
    const { hashPassword } = await import('../../src/operators/passwords.js');
    const users = path.join(copy.dir, 'users-workers.json');
    await writeFile(
      users,
      JSON.stringify({ users: [{ username: 'otto', role: 'operator', passwordHash: await hashPassword('otto-pass') }] }),
    );
    const open = path.join(copy.dir, 'open-sessions.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const adminPort = await freePort();
    const served = serve(['serve', '--config', open, '--port', '0', '--admin-port', String(adminPort), '--workers', '2', '--users', users]);
    try {
      await served.waitFor(/(worker \d+ serving[\s\S]*){2}/);
      const admin = `http://127.0.0.1:${adminPort}`;
      const signIn = await fetch(`${admin}/gateway/operators/session`, {
        method: 'POST',
        headers: { 'x-gateway-console': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'otto', password: 'otto-pass' }),
      });
      expect(signIn.status).to.equal(200);
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      // New connections each time: the primary hands them to the workers in turn.
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await fetch(`${admin}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1', connection: 'close' } });
        statuses.push(res.status);
      }
      expect(statuses).to.deep.equal(Array(8).fill(200));
      // Signed out on one worker: the cookie is refused by both (the sign-out relayed through the primary).
      const { csrfToken } = (await signIn.json()) as { csrfToken: string };
      const signOut = await fetch(`${admin}/gateway/operators/session`, {
        method: 'DELETE',
        headers: { cookie, 'x-gateway-console': '1', 'x-csrf-token': csrfToken, connection: 'close' },
      });
      expect(signOut.status).to.equal(204);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const after: number[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await fetch(`${admin}/gateway/admin/status`, { headers: { cookie, 'x-gateway-console': '1', connection: 'close' } });
        after.push(res.status);
      }
      expect(after).to.deep.equal(Array(8).fill(401));
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });

  it('--workers 2 serves from two processes and replaces a worker that dies', async () => {
    const open = path.join(copy.dir, 'open-workers.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const served = serve(['serve', '--config', open, '--port', '0', '--admin-port', '0', '--workers', '2']);
    try {
      await served.waitFor(/(worker \d+ serving[\s\S]*){2}/);
      const pids = [...served.output().matchAll(/worker (\d+) serving APIs at (http:\/\/\S+)/g)];
      expect(new Set(pids.map((m) => m[1])).size).to.equal(2);
      // Port 0: each worker got its own port from the primary's shared handle, or the same one; ask each.
      for (const [, , api] of pids) expect((await fetch(`${api}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
      process.kill(Number(pids[0]![1]), 'SIGKILL');
      await served.waitFor(/died \(SIGKILL\); starting another/);
      await served.waitFor(/(worker \d+ serving[\s\S]*){3}/);
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });
});
