/**
 * `express-access-gateway serve` as a twelve-factor process: `--version`, every flag from the
 * environment, YAML configuration files, SIGHUP reloading the configuration without a stop.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import type { GatewayConfig } from '../../src/index.js';
import { echoBackend, exampleCopy, openConfig, repoRoot } from '../gateway/helpers.js';
import { freePort, serve, stop, type Served } from './support.js';

/** Waits until `check` holds, asking again every 50 ms. */
async function eventually(check: () => Promise<boolean>, what: string, served: Served, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline || served.child.exitCode !== null) throw new Error(`${what} never happened:\n${served.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('express-access-gateway serve: conventions', function () {
  this.timeout(60_000);
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;

  before(async () => {
    [echo, copy] = await Promise.all([echoBackend(), exampleCopy()]);
  });
  after(async () => {
    await Promise.all([echo.stop(), copy.remove()]);
  });

  it('--version prints the package version and exits 0; --help names the environment variable of every flag', async () => {
    const { version } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const served = serve(['--version']);
    expect(await served.exited()).to.equal(0);
    expect(served.output()).to.equal(`${version}\n`);
    const help = serve(['--help']);
    expect(await help.exited()).to.equal(0);
    for (const name of [
      'GATEWAY_CONFIG]',
      'GATEWAY_CONFIG_SOURCE]',
      '[PORT]',
      '[HOST]',
      '[ADMIN_PORT]',
      '[ADMIN_HOST]',
      '[ADMIN_HOST_NAME]',
      '[TRUST_PROXY',
      '[WORKERS]',
      '[GRACE_PERIOD_MS]',
      '[GATEWAY_USERS_FILE]',
      '[GATEWAY_AUDIT_FILE]',
      '[GATEWAY_METRICS]',
      '[LOG_LEVEL]',
      '[LOG_FORMAT]',
      '[GATEWAY_ACCESS_LOG=1]',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'SIGHUP',
    ])
      expect(help.output(), name).to.include(name);
  });

  it('PORT, ADMIN_PORT and GATEWAY_CONFIG serve without flags; a flag wins over its variable; a bad value exits 2 naming the variable', async () => {
    const open = path.join(copy.dir, 'env.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const [port, adminPort, flagPort] = [await freePort(), await freePort(), await freePort()];
    const served = serve(['serve'], { GATEWAY_CONFIG: open, PORT: String(port), ADMIN_PORT: String(adminPort), HOST: '127.0.0.1' });
    try {
      const [, api, admin] = await served.waitFor(/serving APIs at (http:\/\/[^\s,]+), admin and console at (http:\/\/\S+)/);
      expect([api, admin]).to.deep.equal([`http://127.0.0.1:${port}`, `http://127.0.0.1:${adminPort}`]);
      expect((await fetch(`${api}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
      expect((await fetch(`${admin}/gateway/health/ready`)).status).to.equal(200);
    } finally {
      await stop(served);
    }
    const flagged = serve(['serve', '--port', String(flagPort), '--admin-port', '0'], { GATEWAY_CONFIG: open, PORT: String(port) });
    try {
      const [, api] = await flagged.waitFor(/serving APIs at (http:\/\/\S+)/);
      expect(api).to.equal(`http://127.0.0.1:${flagPort}`);
    } finally {
      await stop(flagged);
    }
    for (const [env, message] of [
      [{ PORT: 'http' }, 'PORT must be a whole number from 0 to 65535, got "http"'],
      [{ WORKERS: '0' }, 'WORKERS must be a whole number from 1 to 256, got "0"'],
      [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be error, warn, info or debug, got "verbose"'],
      [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT must be json or pretty, got "xml"'],
      [{ GATEWAY_ACCESS_LOG: 'maybe' }, 'GATEWAY_ACCESS_LOG must be 1 or 0'],
      [{ TRUST_PROXY: '2' }, 'TRUST_PROXY must list addresses or subnets'],
    ] as const) {
      const bad = serve(['serve', '--admin-port', '0'], { GATEWAY_CONFIG: open, ...env });
      expect(await bad.exited(), message).to.equal(2);
      expect(bad.output()).to.include(message);
    }
  });

  it('a YAML configuration serves (comments, anchors); custom tags and bad fields exit 2 with the path', async () => {
    const yamlFile = path.join(copy.dir, 'gateway.config.yaml');
    await writeFile(
      yamlFile,
      [
        '# Two versions of the echo API, one backend',
        'apis:',
        '  - provider: Ente',
        '    name: Echo',
        '    version: 1',
        '    backend: &echo',
        `      url: ${echo.url}`,
        '  - provider: Ente',
        '    name: Echo',
        '    version: 2',
        '    backend: *echo',
        '',
      ].join('\n'),
    );
    const good = serve(['serve', '--config', yamlFile, '--port', '0', '--admin-port', '0']);
    try {
      const [, api] = await good.waitFor(/serving APIs at (http:\/\/\S+)/);
      for (const version of [1, 2]) expect((await fetch(`${api}/gateway/Ente/Echo/v${version}/ping`)).status).to.equal(201);
    } finally {
      await stop(good);
    }
    const tagged = path.join(copy.dir, 'tagged.yml');
    await writeFile(
      tagged,
      `apis:\n  - provider: Ente\n    name: !!js/function 'function () { return 1 }'\n    version: 1\n    backend: { url: '${echo.url}' }\n`,
    );
    const refused = serve(['serve', '--config', tagged, '--port', '0', '--admin-port', '0']);
    expect(await refused.exited()).to.equal(2);
    expect(refused.output()).to.include('not valid YAML');
    const badField = path.join(copy.dir, 'bad.yml');
    await writeFile(badField, `apis:\n  - provider: Ente\n    name: Echo\n    version: 1\n    backend: { url: 'ftp://nope' }\n`);
    const invalid = serve(['serve', '--config', badField, '--port', '0', '--admin-port', '0']);
    expect(await invalid.exited()).to.equal(2);
    expect(invalid.output()).to.include('apis[0].backend.url');
  });

  it('SIGHUP reloads a changed configuration and the process goes on; an invalid one is logged and the one in force stays', async () => {
    const file = path.join(copy.dir, 'reloaded.json');
    const config: GatewayConfig = openConfig(echo.url);
    await writeFile(file, JSON.stringify(config));
    const served = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0']);
    try {
      const [, api] = await served.waitFor(/serving APIs at (http:\/\/\S+)/);
      const url = `${api}/gateway/Ente/Echo/v1/ping`;
      expect((await fetch(url)).status).to.equal(201);
      // The API now requires a token: a request without one is refused with 400.
      await writeFile(
        file,
        JSON.stringify({
          tokenPolicies: { Idp: { issuer: 'http://127.0.0.1:9', clientId: 'gateway', clientSecret: 'secret' } },
          apis: [{ ...config.apis[0], tokenManagement: { enabled: true, policy: 'Idp', introspection: true } }],
        }),
      );
      served.child.kill('SIGHUP');
      await eventually(async () => (await fetch(url)).status === 400, 'the token requirement', served);
      await served.waitFor(/SIGHUP: reading the configuration again/);
      await served.waitFor(/ResetAllCaches by SIGHUP: 1 API\(s\) in force/);
      // An invalid file: logged with its path, the process alive, the configuration in force kept.
      await writeFile(file, JSON.stringify({ apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: 'ftp://nope' } }] }));
      served.child.kill('SIGHUP');
      await served.waitFor(/configuration refused at ResetAllCaches \(by SIGHUP\)[^\n]*\n\s+apis\[0\]\.backend\.url/);
      expect(served.child.exitCode).to.equal(null);
      expect((await fetch(url)).status).to.equal(400);
      // Several at once: still alive, still serving.
      for (let i = 0; i < 3; i++) served.child.kill('SIGHUP');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(served.child.exitCode).to.equal(null);
      expect((await fetch(url)).status).to.equal(400);
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
  });

  it('--workers 2: SIGHUP to the primary reloads every worker, once each even when the workers get it too', async () => {
    const file = path.join(copy.dir, 'workers-reloaded.json');
    const config: GatewayConfig = openConfig(echo.url);
    await writeFile(file, JSON.stringify(config));
    const port = await freePort();
    const served = serve(['serve', '--config', file, '--port', String(port), '--admin-port', '0', '--workers', '2']);
    try {
      await served.waitFor(/(worker \d+ serving[\s\S]*){2}/);
      const url = `http://127.0.0.1:${port}/gateway/Ente/Echo/v2/ping`;
      await writeFile(file, JSON.stringify({ apis: [{ ...config.apis[0], version: 2 }] }));
      served.child.kill('SIGHUP');
      await served.waitFor(/(ResetAllCaches by SIGHUP[\s\S]*){2}/);
      // A new connection each time: the primary hands them to the workers in turn.
      for (let i = 0; i < 6; i++) expect((await fetch(url, { headers: { connection: 'close' } })).status, `request ${i}`).to.equal(201);
      expect(served.child.exitCode).to.equal(null);

      // As `kill -HUP -<process group>` or `pkill -HUP` does: the primary and every worker.
      const workers = [...served.output().matchAll(/worker (\d+) serving/g)].map((m) => Number(m[1]));
      expect(workers).to.have.length(2);
      for (const pid of [served.child.pid!, ...workers]) process.kill(pid, 'SIGHUP');
      await served.waitFor(/(ResetAllCaches by SIGHUP[\s\S]*){4}/);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(served.output().match(/ResetAllCaches by SIGHUP/g), 'resets').to.have.length(4);
      expect(served.child.exitCode).to.equal(null);
    } finally {
      await stop(served);
    }
  });
});
