/**
 * `serve` over HTTPS (`--tls-cert`, `--tls-key`, `--tls-client-ca`, `--tls-client-auth`, or their
 * variables): both listeners speak TLS, the APIs' one asks for client certificates (the
 * certificates of bound tokens), and SIGHUP reads the files again. A throwaway CA made by the test.
 */
import { X509Certificate } from 'node:crypto';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import { createTestPki, type Issued, type TestPki } from '../support/certificates.js';
import { echoBackend, openConfig } from '../gateway/helpers.js';
import { createGateway, InvalidOptionError, serveGateway } from '../../src/index.js';
import { startMtlsAuthServer, type MtlsAuthServer } from '../token/binding/mtls-auth-server.js';
import { freePort, serve, stop, type Served } from './support.js';

interface Answer {
  status: number;
  /** SHA-256 fingerprint of the certificate the server presented. */
  serverCertificate: string;
}

function call(url: string, ca: string, options: { certificate?: Issued; token?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca,
        agent: false,
        ...(options.certificate === undefined ? {} : { cert: options.certificate.cert, key: options.certificate.key }),
        headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
      },
      (res) => {
        const serverCertificate = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, serverCertificate }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fingerprint = (certificate: Issued): string => new X509Certificate(certificate.cert).fingerprint256;

describe('serve over HTTPS (--tls-*)', function () {
  this.timeout(60_000);
  let pki: TestPki;
  let client: Issued;
  let as: MtlsAuthServer;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  let configFile: string;
  let certFile: string;
  let keyFile: string;
  let token: string;
  const running: Served[] = [];

  before(async () => {
    pki = await createTestPki();
    client = await pki.issue('client', 'client');
    as = await startMtlsAuthServer(pki);
    backend = await echoBackend();
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-serve-tls-'));
    configFile = path.join(dir, 'gateway.config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        tokenPolicies: { Strict: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
        apis: [
          {
            provider: 'Ente',
            name: 'Echo',
            version: 1,
            backend: { url: backend.url },
            tokenManagement: { enabled: true, policy: 'Strict' },
          },
        ],
      }),
    );
    // Files the SIGHUP test replaces.
    certFile = path.join(dir, 'server.pem');
    keyFile = path.join(dir, 'server.key');
    await Promise.all([copyFile(pki.server.certFile, certFile), copyFile(pki.server.keyFile, keyFile)]);
    token = await as.issueToken('bound', client);
  });

  after(async () => {
    await Promise.all(running.map((served) => stop(served)));
    await Promise.all([
      as?.stop(),
      backend?.stop(),
      pki?.remove(),
      dir === undefined ? undefined : rm(dir, { recursive: true, force: true }),
    ]);
  });

  async function start(args: string[], env: Record<string, string> = {}): Promise<{ served: Served; api: string; admin: string }> {
    const adminPort = await freePort();
    const served = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', String(adminPort), ...args], {
      ADMIN_PASSWORD: 'tls-admin',
      ...env,
    });
    running.push(served);
    const [, api, admin] = await served.waitFor(/serving APIs at (https:\/\/[\d.:]+), admin and console at (https:\/\/[\d.:]+)/);
    return { served, api: api!, admin: admin! };
  }

  it('serves both listeners over HTTPS; a bound token passes with its certificate only; SIGHUP reads the files again', async () => {
    // The client CA and its mode from the environment, the rest from flags.
    const { served, api, admin } = await start(['--tls-cert', certFile, '--tls-key', keyFile], {
      TLS_CLIENT_CA_FILE: pki.ca.certFile,
      TLS_CLIENT_AUTH: 'optional',
    });
    const url = `${api}/gateway/Ente/Echo/v1/pets`;
    const bound = await call(url, pki.ca.cert, { certificate: client, token });
    expect(bound.status).to.equal(201);
    expect(bound.serverCertificate).to.equal(fingerprint(pki.server));
    expect((await call(url, pki.ca.cert, { token })).status).to.equal(401);
    // The admin listener speaks HTTPS and asks for no client certificate.
    expect((await call(`${admin}/gateway/health/live`, pki.ca.cert)).status).to.equal(200);

    // A renewed certificate: new connections get it after SIGHUP, without a restart.
    const renewed = await pki.issue('server-renewed', 'server');
    await Promise.all([copyFile(renewed.certFile, certFile), copyFile(renewed.keyFile, keyFile)]);
    served.child.kill('SIGHUP');
    await served.waitFor(/TLS certificate, key and client CA read again/);
    expect((await call(url, pki.ca.cert, { certificate: client, token })).serverCertificate).to.equal(fingerprint(renewed));
    expect((await call(`${admin}/gateway/health/live`, pki.ca.cert)).serverCertificate).to.equal(fingerprint(renewed));

    // A key that does not match the certificate: logged, and the files in force stay.
    await copyFile(pki.server.keyFile, keyFile);
    served.child.kill('SIGHUP');
    await served.waitFor(/the TLS files cannot be used; the ones in force stay/);
    const after = await call(url, pki.ca.cert, { certificate: client, token });
    expect(after.status).to.equal(201);
    expect(after.serverCertificate).to.equal(fingerprint(renewed));
    expect(served.child.exitCode).to.equal(null);
    await stop(served);
  });

  it('--workers: SIGHUP makes every worker read the TLS files again', async () => {
    const workerCert = path.join(dir, 'workers.pem');
    const workerKey = path.join(dir, 'workers.key');
    await Promise.all([copyFile(pki.server.certFile, workerCert), copyFile(pki.server.keyFile, workerKey)]);
    const { served, api } = await start(['--workers', '2', '--tls-cert', workerCert, '--tls-key', workerKey]);
    // Both workers serve before the signal.
    await served.waitFor(/serving APIs at[\s\S]*serving APIs at/);
    const url = `${api}/gateway/health/live`;
    const renewed = await pki.issue('server-workers', 'server');
    await Promise.all([copyFile(renewed.certFile, workerCert), copyFile(renewed.keyFile, workerKey)]);
    served.child.kill('SIGHUP');
    await served.waitFor(/TLS certificate, key and client CA read again[\s\S]*TLS certificate, key and client CA read again/);
    // New connections are shared between the workers: every one gets the renewed certificate.
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) seen.add((await call(url, pki.ca.cert).catch(() => ({ serverCertificate: 'none' }))).serverCertificate);
    expect([...seen]).to.deep.equal([fingerprint(renewed)]);
    await stop(served);
  });

  it('--tls-client-auth required: a client without a certificate does not get through the handshake', async () => {
    const { api } = await start([
      '--tls-cert',
      pki.server.certFile,
      '--tls-key',
      pki.server.keyFile,
      '--tls-client-ca',
      pki.ca.certFile,
      '--tls-client-auth',
      'required',
    ]);
    const url = `${api}/gateway/Ente/Echo/v1/pets`;
    expect((await call(url, pki.ca.cert, { certificate: client, token })).status).to.equal(201);
    const refused = await call(url, pki.ca.cert, { token }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(Error);
  });

  it('bad usage exits 2 naming the flag or variable', async () => {
    const cases: Array<[string[], Record<string, string>, string]> = [
      [['--tls-cert', certFile], {}, '--tls-cert needs --tls-key (TLS_KEY_FILE) too'],
      [[], { TLS_KEY_FILE: keyFile }, 'TLS_KEY_FILE needs --tls-cert (TLS_CERT_FILE) too'],
      [['--tls-client-ca', pki.ca.certFile], {}, '--tls-client-ca needs --tls-cert and --tls-key'],
      [['--tls-cert', certFile, '--tls-key', keyFile, '--tls-client-auth', 'required'], {}, '--tls-client-auth needs --tls-client-ca'],
      [
        ['--tls-cert', certFile, '--tls-key', keyFile, '--tls-client-ca', pki.ca.certFile, '--tls-client-auth', 'always'],
        {},
        '--tls-client-auth must be optional or required',
      ],
    ];
    for (const [args, env, message] of cases) {
      const served = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', '0', ...args], env);
      expect(await served.exited(), message).to.equal(2);
      expect(served.output()).to.include(message);
    }
  });

  it('--check-config checks the TLS files too', async () => {
    const fine = serve([
      'serve',
      '--config',
      configFile,
      '--check-config',
      '--tls-cert',
      pki.server.certFile,
      '--tls-key',
      pki.server.keyFile,
    ]);
    expect(await fine.exited()).to.equal(0);
    expect(fine.output()).to.include('tls: ok');
    const other = await pki.issue('check-other', 'server');
    const mismatch = serve([
      'serve',
      '--config',
      configFile,
      '--check-config',
      '--tls-cert',
      pki.server.certFile,
      '--tls-key',
      other.keyFile,
    ]);
    expect(await mismatch.exited()).to.equal(2);
    // Nothing says ok before everything is checked, and the line names the part once.
    const lines = mismatch.output().trimEnd().split('\n');
    expect(lines[0]).to.equal(`configuration not usable: ${configFile}: 1 problem(s)`);
    expect(lines).to.include('  token policy Strict: ok');
    expect(lines.at(-1)).to.match(/^ {2}tls: the certificate, key or client CA cannot be used \(.+\)$/);
    expect(mismatch.output()).not.to.include('configuration ok').and.not.to.include('tls: tls:');
    // A key file that cannot be read is named by its part, with the configuration's own checks beside it.
    const unread = serve([
      'serve',
      '--config',
      configFile,
      '--check-config',
      '--tls-cert',
      pki.server.certFile,
      '--tls-key',
      path.join(dir, 'none.pem'),
    ]);
    expect(await unread.exited()).to.equal(2);
    expect(unread.output()).to.include(`configuration not usable: ${configFile}: 1 problem(s)`);
    expect(unread.output()).to.include(`  tls.key: cannot read ${path.join(dir, 'none.pem')} (ENOENT)`);
  });

  it('a certificate file that cannot be read stops the start, naming it', async () => {
    const served = serve([
      'serve',
      '--config',
      configFile,
      '--port',
      '0',
      '--admin-port',
      '0',
      '--tls-cert',
      path.join(dir, 'missing.pem'),
      '--tls-key',
      keyFile,
    ]);
    expect(await served.exited()).to.equal(1);
    expect(served.output()).to.include('tls.cert: cannot read');
    expect(served.output()).to.include('missing.pem (ENOENT)');
  });
});

describe('serveGateway: tls', function () {
  this.timeout(60_000);
  let pki: TestPki;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  before(async () => {
    pki = await createTestPki();
    backend = await echoBackend();
  });
  after(async () => {
    await Promise.all([backend?.stop(), pki?.remove()]);
  });

  it('takes PEM text as well as files; refuses bad settings before listening, naming them', async () => {
    // The last server's stop() closes the gateway.
    const gateway = createGateway({ config: openConfig(backend.url), metrics: false });
    const refusal = (tls: unknown) =>
      serveGateway(gateway, { port: 0, adminPort: false, tls: tls as never }).then(
        (server) => server.stop().then(() => undefined),
        (err: unknown) => err as Error,
      );
    const required = await refusal({ cert: pki.server.certFile, key: pki.server.keyFile, clientAuth: 'required' });
    expect(required).to.be.instanceOf(InvalidOptionError);
    expect(required?.message).to.include('tls.clientAuth');
    expect((await refusal({ cert: pki.server.certFile, key: pki.server.keyFile, ca: pki.ca.certFile }))?.message).to.include('tls.ca');
    expect((await refusal({ cert: pki.server.certFile }))?.message).to.include('tls.key');
    // A key that is not the certificate's: OpenSSL's reason, never the key.
    const other = await pki.issue('other', 'server');
    const mismatch = await refusal({ cert: pki.server.cert, key: other.key });
    expect(mismatch?.message).to.include('tls: the certificate, key or client CA cannot be used');
    expect(mismatch?.message).not.to.include('PRIVATE KEY');

    const server = await serveGateway(gateway, {
      port: 0,
      adminPort: false,
      tls: { cert: pki.server.cert, key: Buffer.from(pki.server.key) },
    });
    try {
      expect(server.url).to.match(/^https:/);
      const answer = await call(`${server.url}/gateway/Ente/Echo/v1/pets`, pki.ca.cert);
      expect(answer.status).to.equal(201);
      expect(answer.serverCertificate).to.equal(fingerprint(pki.server));
      await server.reloadTls();
    } finally {
      await server.stop();
    }
  });
});
