/**
 * The start-up checks of `express-access-gateway serve`: a token policy whose authorization server
 * cannot be used as configured (wrong issuer, wrong client secret, server down) keeps
 * `/gateway/health/ready` at 503 with a `not_ready` log line naming the policy and the cause, until
 * it is fixed (configuration changed and SIGHUP, or the server back); `--check-config` checks
 * without serving; a designator the gateway never fills is a warning.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig, TokenPolicyConfig } from '../../src/index.js';
import { echoBackend, exampleCopy } from '../gateway/helpers.js';
import { cli, freePort, serve, stop, type Served } from './support.js';
import { spawn } from 'node:child_process';

/** The JSON records of a run's output. */
function records(served: Served): Array<Record<string, unknown>> {
  return served
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function until<T>(find: () => T | undefined | Promise<T | undefined>, what: string, served: Served, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > deadline || served.child.exitCode !== null) throw new Error(`no ${what} in time; output:\n${served.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `serve --check-config`: its exit code and output. */
function checkConfig(file: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [cli, 'serve', '--config', file, '--check-config'], {
    env: { ...process.env, DEBUG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

describe('express-access-gateway serve: readiness checks', function () {
  this.timeout(90_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;

  const configWith = (policy: TokenPolicyConfig, authorization?: GatewayConfig['apis'][number]['authorization']): GatewayConfig => ({
    tokenPolicies: { DemoIdP: policy },
    apis: [
      {
        provider: 'Ente',
        name: 'Echo',
        version: 1,
        backend: { url: echo.url },
        tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
        ...(authorization === undefined ? {} : { authorization }),
      },
    ],
  });

  /** Serves `config`; resolves with the run and its health URL once it listens (ready or not). */
  async function served(config: GatewayConfig): Promise<{ run: Served; health: () => Promise<number>; file: string }> {
    const file = path.join(copy.dir, `readiness-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(config));
    const adminPort = await freePort();
    const run = serve(['serve', '--config', file, '--port', '0', '--admin-port', String(adminPort)], {
      LOG_FORMAT: 'json',
      ADMIN_PASSWORD: 'x',
    });
    await until(() => records(run).find((r) => r['event'] === 'listening'), 'listening record', run);
    const health = async (): Promise<number> => (await fetch(`http://127.0.0.1:${adminPort}/gateway/health/ready`)).status;
    return { run, health, file };
  }

  const notReady = (run: Served): Record<string, unknown> | undefined =>
    records(run).find((r) => r['event'] === 'not_ready' && r['policy'] === 'DemoIdP');

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
  });
  after(async () => {
    await Promise.all([as.stop(), echo.stop(), copy.remove()]);
  });

  it('a wrong issuer: ready 503, its body nothing but the status, a not_ready line naming the policy and the cause; fixed and SIGHUP: 200', async () => {
    const good: TokenPolicyConfig = { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' };
    const { run, health, file } = await served(configWith({ ...good, issuer: `${as.issuer}/nowhere` }));
    try {
      const line = notReady(run)!;
      expect(line, run.output()).to.not.equal(undefined);
      expect(line).to.include({ level: 'error' });
      expect(line['cause']).to.match(/^discovery: .*HTTP 404/);
      expect(line['msg']).to.include('DemoIdP');
      expect(await health()).to.equal(503);
      const answer = await fetch(`${String(records(run).find((r) => r['event'] === 'listening')!['adminUrl'])}/gateway/health/ready`);
      expect(await answer.text()).to.equal('{"status":"unavailable"}');
      await writeFile(file, JSON.stringify(configWith(good)));
      run.child.kill('SIGHUP');
      await until(async () => ((await health()) === 200 ? true : undefined), 'ready 200 after the fix', run);
    } finally {
      await stop(run);
    }
  });

  it('a wrong client secret: ready 503 with invalid_client in the log (never the secret); the right one and SIGHUP: 200', async () => {
    const { run, health, file } = await served(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'not-the-secret' }));
    try {
      const line = await until(() => notReady(run), 'not_ready', run);
      expect(line['cause']).to.match(/^introspection: .*\(HTTP 401, invalid_client\)/);
      expect(await health()).to.equal(503);
      await writeFile(file, JSON.stringify(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' })));
      run.child.kill('SIGHUP');
      await until(async () => ((await health()) === 200 ? true : undefined), 'ready 200 after the fix', run);
      expect(run.output()).not.to.include('not-the-secret');
    } finally {
      await stop(run);
    }
  });

  it('an authorization server down: ready 503 while it is; started where the policy looks, ready 200 at the next check, without a request', async () => {
    const port = await freePort();
    const { run, health } = await served(
      configWith({ issuer: `http://127.0.0.1:${port}`, clientId: 'gateway', clientSecret: 'gateway-secret' }),
    );
    let back: DemoAuthServer | undefined;
    try {
      expect(notReady(run)?.['cause']).to.match(/^discovery: unreachable \(ECONNREFUSED\)/);
      expect(await health()).to.equal(503);
      back = await startDemoAuthServer({ port });
      // The first check again comes 5 s after the failure.
      await until(async () => ((await health()) === 200 ? true : undefined), 'ready 200 once the server is up', run, 15_000);
      expect(records(run).some((r) => r['event'] === 'token_policy_ready' && r['policy'] === 'DemoIdP')).to.equal(true);
    } finally {
      await stop(run);
      await back?.stop();
    }
  });

  it('listening once the ports are open; ready only once health/ready answers 200: at once when the server answers, later when it comes up', async () => {
    const events = (run: Served): unknown[] => records(run).map((r) => r['event']);
    const port = await freePort();
    const down = await served(configWith({ issuer: `http://127.0.0.1:${port}`, clientId: 'gateway', clientSecret: 'gateway-secret' }));
    let back: DemoAuthServer | undefined;
    try {
      const listening = records(down.run).find((r) => r['event'] === 'listening')!;
      expect(listening).to.include({ level: 'info' });
      expect(listening['url']).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(listening['adminUrl']).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(listening['msg']).to.include('not ready');
      expect(await down.health()).to.equal(503);
      expect(events(down.run), down.run.output()).not.to.include('ready');
      back = await startDemoAuthServer({ port });
      const ready = await until(
        () => records(down.run).find((r) => r['event'] === 'ready'),
        'ready once the server is up',
        down.run,
        15_000,
      );
      expect(ready).to.include({ level: 'info', url: listening['url'], adminUrl: listening['adminUrl'] });
      expect(await down.health()).to.equal(200);
      const order = events(down.run);
      expect(order.indexOf('token_policy_ready')).to.be.greaterThan(-1).and.lessThan(order.indexOf('ready'));
      expect(order.filter((event) => event === 'ready')).to.have.length(1);
    } finally {
      await stop(down.run);
      await back?.stop();
    }

    const up = await served(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' }));
    try {
      await until(() => records(up.run).find((r) => r['event'] === 'ready'), 'ready', up.run);
      const order = events(up.run);
      expect(order.indexOf('listening')).to.be.greaterThan(-1).and.lessThan(order.indexOf('ready'));
      expect(records(up.run).find((r) => r['event'] === 'listening')!['msg']).not.to.include('not ready');
      expect(order).not.to.include('not_ready');
      expect(await up.health()).to.equal(200);
    } finally {
      await stop(up.run);
    }
  });

  it('a wrong client secret fixed and SIGHUP: one token_policy_ready, one authorization_server_up, then ready', async () => {
    const { run, health, file } = await served(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'not-the-secret' }));
    const count = (event: string): number => records(run).filter((r) => r['event'] === event && r['policy'] === 'DemoIdP').length;
    try {
      await until(() => notReady(run), 'not_ready', run);
      expect(count('authorization_server_down'), run.output()).to.equal(1);
      await writeFile(file, JSON.stringify(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' })));
      run.child.kill('SIGHUP');
      await until(() => records(run).find((r) => r['event'] === 'ready'), 'ready after the fix', run);
      expect(await health()).to.equal(200);
      expect(count('token_policy_ready'), run.output()).to.equal(1);
      const up = records(run).filter((r) => r['event'] === 'authorization_server_up' && r['policy'] === 'DemoIdP');
      expect(up, run.output()).to.have.length(1);
      expect(up[0]).to.include({ level: 'info', endpoint: 'introspection' });
      expect(up[0]!['downMs']).to.be.a('number');
      // Once: a request after the fix says nothing more.
      const token = await as.issueToken('client1', 'client1-secret');
      const api = String(records(run).find((r) => r['event'] === 'listening')!['url']);
      expect((await fetch(`${api}/gateway/Ente/Echo/v1/x`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(201);
      expect(count('token_policy_ready') + count('authorization_server_up')).to.equal(2);
      expect(count('authorization_server_down')).to.equal(1);
      expect(run.output()).not.to.include('not-the-secret');
    } finally {
      await stop(run);
    }
  });

  it('--check-config: exit 0 with "configuration ok" and each policy; exit 2 with each problem and its path or policy; nothing served', async () => {
    const okFile = path.join(copy.dir, 'check-ok.json');
    await writeFile(okFile, JSON.stringify(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' })));
    const ok = await checkConfig(okFile);
    expect(ok.code, ok.out).to.equal(0);
    expect(ok.out).to.include(`configuration ok: ${okFile}`);
    expect(ok.out).to.include('token policy DemoIdP: ok');

    const badSecret = path.join(copy.dir, 'check-secret.json');
    await writeFile(badSecret, JSON.stringify(configWith({ issuer: as.issuer, clientId: 'gateway', clientSecret: 'not-the-secret' })));
    const bad = await checkConfig(badSecret);
    expect(bad.code, bad.out).to.equal(2);
    expect(bad.out).to.match(/token policy DemoIdP: introspection: .*HTTP 401, invalid_client/);
    expect(bad.out).not.to.include('not-the-secret');

    const broken = path.join(copy.dir, 'check-broken.json');
    await writeFile(
      broken,
      JSON.stringify(
        configWith(
          { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' },
          { mode: 'xacml-Policy', policy: 'policies/missing.xml' },
        ),
      ),
    );
    const invalid = await checkConfig(broken);
    expect(invalid.code, invalid.out).to.equal(2);
    expect(invalid.out).to.match(/apis\[0\]\.authorization\.policy: .*missing\.xml/);

    // The environment's switch does the same.
    expect((await checkConfig(okFile, { GATEWAY_CHECK_CONFIG: '1' })).code).to.equal(0);
  });

  it('a policy file that does not compile: the configuration file and the policy file named, by --check-config and in the config_error record', async () => {
    const policy = path.join(copy.dir, 'policies', 'unclosed.xml');
    await writeFile(policy, '<Policy');
    const file = path.join(copy.dir, 'check-unclosed.json');
    await writeFile(
      file,
      JSON.stringify(
        configWith(
          { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' },
          { mode: 'xacml-Policy', policy: 'policies/unclosed.xml' },
        ),
      ),
    );
    const checked = await checkConfig(file);
    expect(checked.code, checked.out).to.equal(2);
    const [head, problem] = checked.out.split('\n');
    expect(head).to.equal(`configuration not usable: ${file}: 1 problem(s)`);
    expect(problem).to.match(new RegExp(`^ {2}apis\\[0\\]\\.authorization\\.policy: ${policy}: Malformed XML`));

    const run = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0'], { LOG_FORMAT: 'json', ADMIN_PASSWORD: 'x' });
    expect(await run.exited()).to.equal(2);
    const refused = records(run).find((r) => r['event'] === 'config_error');
    expect(refused, run.output()).to.include({ source: file });
    expect(refused?.['msg']).to.include(`(${file})`).and.include(policy);
    expect(records(run).find((r) => r['event'] === 'not_ready')?.['cause']).to.include(`invalid gateway configuration (${file})`);
  });

  it('a designator of an org:gateway id the gateway never fills: a warning naming the nearest id, in the log and in --check-config', async () => {
    const typo = path.join(copy.dir, 'policies', 'typo.xml');
    await writeFile(
      typo,
      (await readFile(copy.policyFile, 'utf8')).replace('org:gateway:subject:token:clientId', 'org:gateway:subject:token:clientID'),
    );
    const config = configWith(
      { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' },
      { mode: 'xacml-Policy', policy: 'policies/typo.xml' },
    );
    const file = path.join(copy.dir, 'check-typo.json');
    await writeFile(file, JSON.stringify(config));
    const checked = await checkConfig(file);
    expect(checked.code, checked.out).to.equal(0);
    expect(checked.out).to.include(
      'warning: apis[0].authorization.policy: designator org:gateway:subject:token:clientID names no attribute the gateway puts in its requests (nearest: org:gateway:subject:token:clientId)',
    );
    const { run, health } = await served(config);
    try {
      const warning = records(run).find((r) => r['event'] === 'config_warning');
      expect(warning).to.include({ level: 'warn', path: 'apis[0].authorization.policy' });
      expect(warning?.['message']).to.include('nearest: org:gateway:subject:token:clientId');
      // A warning does not keep the gateway from being ready.
      expect(await health()).to.equal(200);
    } finally {
      await stop(run);
    }
  });
});
