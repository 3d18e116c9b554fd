/**
 * The logs of `express-access-gateway serve`, read as an operator's log shipper reads them: JSON
 * lines on stdout, each with an `event`; the causes of an authorization server's failure; the
 * access log, which holds no token, cookie or query string value.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { echoBackend, exampleCopy, openConfig, repoRoot } from '../gateway/helpers.js';
import { freePort, serve, stop, type Served } from './support.js';

/** The JSON records of a run's stdout (and stderr): every line must parse. */
function records(served: Served): Array<Record<string, unknown>> {
  return served
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`a log line is not JSON: ${line}`);
      }
    });
}

async function until<T>(find: () => T | undefined, what: string, served: Served, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline || served.child.exitCode !== null) throw new Error(`no ${what} in the output:\n${served.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('express-access-gateway serve: logs', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
  });
  after(async () => {
    await Promise.all([as.stop(), echo.stop(), copy.remove()]);
  });

  it('JSON lines with start and listening; a wrong issuer, a wrong client secret and an unreachable server each log the policy and the cause, and the server back', async () => {
    const downPort = await freePort();
    const api = (name: string, policy: string): GatewayConfig['apis'][number] => ({
      provider: 'Ente',
      name,
      version: 1,
      backend: { url: echo.url },
      tokenManagement: { enabled: true, policy, introspection: true },
    });
    const config: GatewayConfig = {
      tokenPolicies: {
        WrongIssuer: { issuer: `${as.issuer}/nowhere`, clientId: 'gateway', clientSecret: 'gateway-secret' },
        WrongSecret: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'not-the-secret' },
        Unreachable: { issuer: `http://127.0.0.1:${downPort}`, clientId: 'gateway', clientSecret: 'gateway-secret' },
      },
      apis: [api('A', 'WrongIssuer'), api('B', 'WrongSecret'), api('C', 'Unreachable')],
    };
    const file = path.join(copy.dir, 'three-policies.json');
    await writeFile(file, JSON.stringify(config));
    const served = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0'], { LOG_FORMAT: 'json', ADMIN_PASSWORD: 'x' });
    let back: DemoAuthServer | undefined;
    try {
      const ready = await until(() => records(served).find((r) => r['event'] === 'listening'), 'listening record', served);
      const start = records(served).find((r) => r['event'] === 'start')!;
      expect(start['version']).to.match(/^\d+\.\d+\.\d+/);
      expect(start).to.include({ port: 0, adminPort: null, workers: 1, level: 'info' });
      const token = await as.issueToken('client1', 'client1-secret');
      for (const name of ['A', 'B', 'C']) {
        const res = await fetch(`${String(ready['url'])}/gateway/Ente/${name}/v1/x`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, name).to.equal(503);
      }
      const down = (policy: string): Record<string, unknown> | undefined =>
        records(served).find((r) => r['event'] === 'authorization_server_down' && r['policy'] === policy);
      const wrongIssuer = await until(() => down('WrongIssuer'), 'WrongIssuer down', served);
      expect(wrongIssuer).to.include({ level: 'error', endpoint: 'discovery' });
      expect(wrongIssuer['cause']).to.match(/^discovery: .*HTTP 404/);
      expect(wrongIssuer['msg']).to.include('WrongIssuer');
      const wrongSecret = await until(() => down('WrongSecret'), 'WrongSecret down', served);
      expect(wrongSecret).to.include({ endpoint: 'introspection' });
      expect(wrongSecret['cause']).to.match(/HTTP 401, invalid_client/);
      expect(records(served).some((r) => r['event'] === 'authorization_server_discovered' && r['policy'] === 'WrongSecret')).to.equal(true);
      const unreachable = await until(() => down('Unreachable'), 'Unreachable down', served);
      expect(unreachable['cause']).to.match(/^discovery: unreachable \(ECONNREFUSED\)/);
      // One record per change, not one per request.
      await fetch(`${String(ready['url'])}/gateway/Ente/C/v1/x`, { headers: { authorization: `Bearer ${token}` } });
      expect(records(served).filter((r) => r['event'] === 'authorization_server_down' && r['policy'] === 'Unreachable')).to.have.length(1);
      // The server comes up where the policy looks: its next call says so.
      back = await startDemoAuthServer({ port: downPort });
      const fresh = await back.issueToken('client1', 'client1-secret');
      expect(
        (await fetch(`${String(ready['url'])}/gateway/Ente/C/v1/x`, { headers: { authorization: `Bearer ${fresh}` } })).status,
      ).to.equal(201);
      const up = await until(
        () => records(served).find((r) => r['event'] === 'authorization_server_up' && r['policy'] === 'Unreachable'),
        'Unreachable up',
        served,
      );
      expect(up['downMs']).to.be.a('number');
      // Nothing but JSON, and never a secret of the configuration.
      expect(served.output()).not.to.include('not-the-secret');
      expect(served.output()).not.to.include(token);
    } finally {
      await stop(served);
      await back?.stop();
    }
  });

  it('--access-log: a line per exchange with its facts (the canonical path, the client address trustProxy believes), and no token, cookie or access_token value anywhere in the output', async () => {
    await writeFile(
      copy.configFile,
      JSON.stringify({
        tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
        apis: [
          {
            provider: 'Ente',
            name: 'Echo',
            version: 1,
            backend: { url: echo.url },
            operations: [{ name: 'getPet', method: 'GET', path: '/pet/{id}' }],
            tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
          },
        ],
      }),
    );
    const served = serve(
      ['serve', '--config', copy.configFile, '--port', '0', '--admin-port', '0', '--access-log', '--trust-proxy', '127.0.0.1'],
      {
        LOG_FORMAT: 'json',
        ADMIN_PASSWORD: 'x',
      },
    );
    try {
      const ready = await until(() => records(served).find((r) => r['event'] === 'ready'), 'ready record', served);
      const base = `${String(ready['url'])}/gateway/Ente/Echo/v1/pet/7`;
      const [header, query, cookie] = await Promise.all([1, 2, 3].map(() => as.issueToken('client1', 'client1-secret')));
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const sent = [
        await fetch(base, { headers: { authorization: `Bearer ${header!}`, traceparent: `00-${traceId}-00f067aa0ba902b7-01` } }),
        // Through a proxy the gateway trusts, with a path the canonical form rewrites.
        await fetch(`${String(ready['url'])}/gateway/Ente/Echo/v1/pet/./7?access_token=${query!}&other=1`, {
          headers: { 'x-forwarded-for': '203.0.113.7' },
        }),
        await fetch(base, { headers: { authorization: `Bearer ${cookie!}`, cookie: `session=${cookie!}; theme=cookie-value-x` } }),
        await fetch(base, { headers: { authorization: 'Bearer not-a-valid-token-value-xyz' } }),
      ];
      const statuses = sent.map((res) => res.status);
      const lines = await until(
        () => {
          const found = records(served).filter((r) => r['event'] === 'access');
          return found.length >= sent.length ? found : undefined;
        },
        'four access records',
        served,
      );
      expect(lines.map((r) => r['status'])).to.deep.equal(statuses);
      const first = lines[0]!;
      expect(first).to.include({ api: 'Ente/Echo/v1', operation: 'getPet', method: 'GET', status: 201, clientId: 'client1', traceId });
      expect(first['transactionId']).to.equal(sent[0]!.headers.get('gateway-transaction-id'));
      // docs/deployment.md's example: the same fields, in the same order, and the outcome of a success.
      const guide = await readFile(path.join(repoRoot, 'docs', 'deployment.md'), 'utf8');
      const shown = JSON.parse(/```json\n(\{"level[^\n]*"event":"access"[^\n]*)\n```/.exec(guide)![1]!) as Record<string, unknown>;
      expect(Object.keys(first)).to.deep.equal(Object.keys(shown));
      expect(first['outcome']).to.equal(shown['outcome']).and.to.equal('OK');
      expect(first['durationMs']).to.be.a('number');
      expect(lines[3]).to.include({ status: 401 });
      expect(lines.map((r) => r['path'])).to.deep.equal(Array(4).fill('/gateway/Ente/Echo/v1/pet/7'));
      expect(lines.map((r) => r['clientAddress'])).to.deep.equal(['127.0.0.1', '203.0.113.7', '127.0.0.1', '127.0.0.1']);
      expect(lines[1]!['msg']).to.equal(`GET /gateway/Ente/Echo/v1/pet/7 ${statuses[1]!}`);
      const output = served.output();
      for (const secret of [header!, query!, cookie!, 'cookie-value-x', 'not-a-valid-token-value-xyz', 'access_token=', 'other=1'])
        expect(output, secret).not.to.include(secret);
    } finally {
      await stop(served);
    }
  });

  it('without --access-log no access line; GATEWAY_ACCESS_LOG=1 turns it on; --log-level warn keeps the access log but drops info records', async () => {
    const open = path.join(copy.dir, 'open-access.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const run = async (env: Record<string, string>): Promise<Array<Record<string, unknown>>> => {
      const port = await freePort();
      const served = serve(['serve', '--config', open, '--port', String(port), '--admin-port', '0'], {
        LOG_FORMAT: 'json',
        ADMIN_PASSWORD: 'x',
        ...env,
      });
      try {
        // With --log-level warn nothing says ready: ask the port until it answers.
        let status: number | undefined;
        const deadline = Date.now() + 15_000;
        while (status === undefined && Date.now() < deadline && served.child.exitCode === null) {
          status = await fetch(`http://127.0.0.1:${port}/gateway/Ente/Echo/v1/ping`).then(
            (res) => res.status,
            () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 100)),
          );
        }
        expect(status, served.output()).to.equal(201);
        served.child.kill('SIGTERM');
        expect(await served.exited()).to.equal(0);
        return records(served);
      } finally {
        await stop(served);
      }
    };
    const plain = await run({});
    expect(plain.some((r) => r['event'] === 'access')).to.equal(false);
    expect(plain.map((r) => r['event'])).to.include.members(['start', 'listening', 'ready', 'shutdown', 'stopped']);
    const on = await run({ GATEWAY_ACCESS_LOG: '1' });
    expect(on.filter((r) => r['event'] === 'access').length).to.be.greaterThan(0);
    const quiet = await run({ GATEWAY_ACCESS_LOG: 'true', LOG_LEVEL: 'warn' });
    expect(quiet.filter((r) => r['event'] === 'access').length).to.be.greaterThan(0);
    expect(quiet.some((r) => r['event'] === 'ready' || r['event'] === 'start')).to.equal(false);
  });
});
