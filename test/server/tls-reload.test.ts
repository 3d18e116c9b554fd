/**
 * SIGHUP reads the TLS files again, and checks them as at start (docs/security.md): a client CA,
 * certificate or key file that cannot be used (garbage, empty, a certificate cut short) leaves the
 * ones in force, with a `config_error` record, as a bad configuration file does. Before, a garbage
 * or empty `--tls-client-ca` replaced the CA in force, and every certificate-bound client got 401.
 * Real `serve` over HTTPS, a throwaway CA made with openssl, tokens bound to a client certificate.
 */
import { X509Certificate } from 'node:crypto';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { expect } from 'chai';
import { createTestPki, type Issued, type TestPki } from '../support/certificates.js';
import { echoBackend } from '../gateway/helpers.js';
import { createGateway, serveGateway } from '../../src/index.js';
import { startMtlsAuthServer, type MtlsAuthServer } from '../token/binding/mtls-auth-server.js';
import { freePort, serve, stop, type Served } from './support.js';

/** A call with `token` and `certificate`: its status and the fingerprint of the server's certificate. */
function call(url: string, ca: string, certificate: Issued, token: string): Promise<{ status: number; server: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca, agent: false, cert: certificate.cert, key: certificate.key, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const server = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, server }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fingerprint = (certificate: Issued): string => new X509Certificate(certificate.cert).fingerprint256;

/** What a reload's record says: `tls_reload` (read again) or `config_error` (refused); counted in the output. */
const OUTCOME = /event=(tls_reload|config_error)/g;

describe('serve: SIGHUP with TLS files that cannot be used leaves the ones in force', function () {
  this.timeout(90_000);
  let pki: TestPki;
  let client: Issued;
  let as: MtlsAuthServer;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  let token: string;
  const running: Served[] = [];

  before(async () => {
    pki = await createTestPki();
    client = await pki.issue('client', 'client');
    as = await startMtlsAuthServer(pki);
    backend = await echoBackend();
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-tls-reload-'));
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

  it('a garbage, empty or cut client CA, certificate or key: config_error, and certificate-bound clients still get through', async () => {
    const configFile = path.join(dir, 'gateway.config.json');
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
    const certFile = path.join(dir, 'server.pem');
    const keyFile = path.join(dir, 'server.key');
    const caFile = path.join(dir, 'client-ca.pem');
    const restore = (): Promise<unknown> =>
      Promise.all([copyFile(pki.server.certFile, certFile), copyFile(pki.server.keyFile, keyFile), copyFile(pki.ca.certFile, caFile)]);
    await restore();
    const served = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', String(await freePort())], {
      ADMIN_PASSWORD: 'tls-admin',
      TLS_CERT_FILE: certFile,
      TLS_KEY_FILE: keyFile,
      TLS_CLIENT_CA_FILE: caFile,
    });
    running.push(served);
    const [, api] = await served.waitFor(/serving APIs at (https:\/\/[\d.:]+)/);
    const url = `${api!}/gateway/Ente/Echo/v1/pets`;
    const bound = (): ReturnType<typeof call> => call(url, pki.ca.cert, client, token);
    expect(await bound()).to.deep.equal({ status: 201, server: fingerprint(pki.server) });

    /** Sends SIGHUP and resolves with the outcome its record names. */
    async function reload(): Promise<string> {
      const before = [...served.output().matchAll(OUTCOME)].length;
      served.child.kill('SIGHUP');
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        const outcomes = [...served.output().matchAll(OUTCOME)];
        if (outcomes.length > before) return outcomes[before]![1]!;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no outcome of the reload:\n${served.output()}`);
    }

    const pemOf = (certificate: string): string => certificate.slice(0, certificate.length / 2);
    const cases: Array<[string, string, string, RegExp]> = [
      ['client CA: garbage', caFile, 'garbage\n', /tls\.clientCa: .*client-ca\.pem holds no PEM certificate/],
      ['client CA: empty', caFile, '', /tls\.clientCa: .*client-ca\.pem holds no PEM certificate/],
      [
        'client CA: a certificate cut short',
        caFile,
        `${pemOf(pki.ca.cert)}\n-----END CERTIFICATE-----\n`,
        /tls\.clientCa: .*(holds a certificate that cannot be read|holds no PEM certificate)/,
      ],
      ['certificate: garbage', certFile, 'garbage\n', /tls\.cert: .*server\.pem holds no PEM certificate/],
      ['key: empty', keyFile, '', /tls\.key: .*server\.key holds no private key that can be read/],
    ];
    for (const [label, file, content, reason] of cases) {
      await writeFile(file, content);
      const outcome = await reload();
      // The files in force stay: the bound client passes with its certificate, the server's is the same.
      expect(await bound(), label).to.deep.equal({ status: 201, server: fingerprint(pki.server) });
      expect(outcome, `${label}: the reload's record\n${served.output().slice(-2000)}`).to.equal('config_error');
      expect(
        served
          .output()
          .split('\n')
          .reverse()
          .find((line) => line.includes('event=config_error')),
      ).to.match(reason);
      await restore();
    }
    // Usable files are still read again.
    expect(await reload()).to.equal('tls_reload');
    expect(await bound()).to.deep.equal({ status: 201, server: fingerprint(pki.server) });
    expect(served.child.exitCode).to.equal(null);
  });

  it('the same checks at start: a garbage client CA stops the start, naming the file', async () => {
    const garbage = path.join(dir, 'garbage-ca.pem');
    await writeFile(garbage, 'garbage\n');
    const gateway = createGateway({ config: { apis: [] }, metrics: false });
    // A server's stop() closes the gateway; a refusal leaves it to the caller.
    const refused = await serveGateway(gateway, {
      port: 0,
      adminPort: false,
      tls: { cert: pki.server.certFile, key: pki.server.keyFile, clientCa: garbage },
    }).then(
      (server) => server.stop().then(() => undefined),
      (err: unknown) => gateway.close().then(() => err as Error),
    );
    expect(refused, 'the start refused').to.be.instanceOf(Error);
    expect(refused!.message).to.include(`tls.clientCa: ${garbage} holds no PEM certificate`);
  });
});
