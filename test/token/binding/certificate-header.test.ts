/**
 * Certificate-bound tokens behind a TLS-terminating proxy: the client certificate comes in the
 * configuration's `clientCertificateHeader` (URL-encoded PEM, as nginx's
 * `$ssl_client_escaped_cert`), believed only from a peer the file's `trustProxy` trusts and never
 * relayed. Malformed, oversized and repeated headers are refusals (401), never a 5xx.
 */
import { request, type Server } from 'node:http';
import { createServer } from 'node:http';
import { expect } from 'chai';
import { ConfigError, createGateway, type Gateway, type GatewayConfig } from '../../../src/index.js';
import { createTestPki, type Issued, type TestPki } from '../../support/certificates.js';
import { close, echoBackend, listen } from '../../gateway/helpers.js';
import { startMtlsAuthServer, type MtlsAuthServer } from './mtls-auth-server.js';

const HEADER = 'X-SSL-Client-Cert';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A plain HTTP request; a header given as an array is sent as that many lines. */
function call(url: string, headers: Record<string, string | string[]>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('certificate-bound tokens behind a TLS-terminating proxy (clientCertificateHeader)', function () {
  this.timeout(60_000);
  let pki: TestPki;
  let clientA: Issued;
  let clientB: Issued;
  let as: MtlsAuthServer;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  const gateways: Gateway[] = [];
  const servers: Server[] = [];
  let boundToken: string;
  let plainToken: string;

  /** A gateway whose file says `listener`, served over plain HTTP; its API's base URL. */
  async function gatewayWith(
    listener: Partial<GatewayConfig>,
    options: { trustProxy?: string } = {},
  ): Promise<{ url: string; gateway: Gateway }> {
    const config: GatewayConfig = {
      tokenPolicies: { Strict: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Echo',
          version: 1,
          backend: { url: backend.url },
          tokenManagement: { enabled: true, policy: 'Strict', tokenForward: true },
          recording: { incomingHeaders: true, outgoingHeaders: true },
        },
      ],
      ...listener,
    };
    const gateway = createGateway({ config, metrics: { auth: false }, ...options });
    gateways.push(gateway);
    const server = createServer(gateway.handler);
    servers.push(server);
    return { url: `${await listen(server)}/gateway/Ente/Echo/v1/pets`, gateway };
  }

  const escaped = (certificate: Issued): string => encodeURIComponent(certificate.cert);

  before(async () => {
    pki = await createTestPki();
    [clientA, clientB] = await Promise.all([pki.issue('client-a', 'client'), pki.issue('client-b', 'client')]);
    as = await startMtlsAuthServer(pki);
    backend = await echoBackend();
    [boundToken, plainToken] = await Promise.all([as.issueToken('bound', clientA), as.issueToken('plain', clientA)]);
  });

  after(async () => {
    await Promise.all(servers.map((server) => close(server)));
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await Promise.all([as?.stop(), backend?.stop(), pki?.remove()]);
  });

  describe('from a trusted proxy (trustProxy: "loopback" in the file)', () => {
    let url: string;
    let gateway: Gateway;
    before(async () => {
      ({ url, gateway } = await gatewayWith({ trustProxy: 'loopback', clientCertificateHeader: HEADER }));
    });

    const recordOf = async (answer: Answer) => {
      const id = answer.headers['gateway-transaction-id'] as string;
      for (let i = 0; i < 200 && (await gateway.store.get(id)) === undefined; i++) await new Promise((r) => setTimeout(r, 5));
      return (await gateway.store.get(id))!;
    };

    it("the certificate in the header binds: its own passes (in any of the proxies' encodings), and the header is not relayed", async () => {
      const base64Der = clientA.cert.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
      for (const value of [escaped(clientA), base64Der]) {
        const answer = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: value });
        expect(answer.status, value.slice(0, 20)).to.equal(201);
        const seen = backend.seen.at(-1)!;
        expect(seen.headers['gateway-token-binding']).to.equal('x5t#S256');
        expect(seen.headers).not.to.have.property('x-ssl-client-cert');
        expect((await recordOf(answer)).binding).to.include({ result: 'verified', presented: clientA.thumbprint });
      }
    });

    it('another certificate, or none, is refused 401 invalid_token', async () => {
      const other = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: escaped(clientB) });
      expect(other.status).to.equal(401);
      expect(other.headers['www-authenticate']).to.include('error="invalid_token"');
      expect((await recordOf(other)).binding).to.include({ result: 'refused', reason: 'mismatch', presented: clientB.thumbprint });
      const none = await call(url, { authorization: `Bearer ${boundToken}` });
      expect(none.status).to.equal(401);
      expect((await recordOf(none)).binding).to.include({ result: 'refused', reason: 'no_certificate' });
    });

    it('malformed, oversized and repeated headers are refusals (401 bad_certificate_header), never a 5xx', async () => {
      const bad: Array<[string, string | string[]]> = [
        ['undecodable escape', '%E0%A4%A'],
        ['not a certificate', encodeURIComponent('-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n')],
        ['garbage', 'garbage!*'],
        ['oversized (past 8 KiB)', `${escaped(clientA)}${'A'.repeat(8192)}`],
        ['repeated', [escaped(clientA), escaped(clientA)]],
        ['repeated, the second another', [escaped(clientA), escaped(clientB)]],
      ];
      for (const [what, value] of bad) {
        const answer = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: value });
        expect(answer.status, what).to.equal(401);
        expect((await recordOf(answer)).binding, what).to.include({ result: 'refused', reason: 'bad_certificate_header' });
      }
      const text = await gateway.metrics!.text();
      expect(text).to.include('gateway_token_binding_refusals_total{policy="Strict",kind="x5t#S256",reason="bad_certificate_header"} 6');
    });

    it('a token that is not bound goes through whatever the header holds, and the header is never relayed', async () => {
      const answer = await call(url, { authorization: `Bearer ${plainToken}`, [HEADER]: 'garbage!*' });
      expect(answer.status).to.equal(201);
      expect(backend.seen.at(-1)!.headers).not.to.have.property('x-ssl-client-cert');
      const record = await recordOf(answer);
      expect(record.binding).to.equal(undefined);
      expect(Object.keys(record.outgoing?.headers ?? {}).map((name) => name.toLowerCase())).not.to.include('x-ssl-client-cert');
    });
  });

  it('from a peer trustProxy does not trust, the header is ignored: the bound token has no certificate', async () => {
    const { url, gateway } = await gatewayWith({ trustProxy: ['10.0.0.0/8'], clientCertificateHeader: HEADER });
    const answer = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: escaped(clientA) });
    expect(answer.status).to.equal(401);
    const id = answer.headers['gateway-transaction-id'] as string;
    for (let i = 0; i < 200 && (await gateway.store.get(id)) === undefined; i++) await new Promise((r) => setTimeout(r, 5));
    expect((await gateway.store.get(id))!.binding).to.include({ result: 'refused', reason: 'no_certificate' });
    // Nor is it relayed for a token that needs none.
    const plain = await call(url, { authorization: `Bearer ${plainToken}`, [HEADER]: escaped(clientA) });
    expect(plain.status).to.equal(201);
    expect(backend.seen.at(-1)!.headers).not.to.have.property('x-ssl-client-cert');
  });

  it('without trustProxy anywhere nobody is trusted: the header is ignored', async () => {
    const { url } = await gatewayWith({ clientCertificateHeader: HEADER });
    const answer = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: escaped(clientA) });
    expect(answer.status).to.equal(401);
  });

  it('trustProxy from createGateway serves too; given in both places, the configuration is refused naming the field', async () => {
    const { url } = await gatewayWith({ clientCertificateHeader: HEADER }, { trustProxy: 'loopback' });
    const answer = await call(url, { authorization: `Bearer ${boundToken}`, [HEADER]: escaped(clientA) });
    expect(answer.status).to.equal(201);
    const { gateway } = await gatewayWith({ trustProxy: 'loopback', clientCertificateHeader: HEADER }, { trustProxy: 'loopback' });
    const refused = await gateway.ready().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(ConfigError);
    expect((refused as ConfigError).message).to.include('trustProxy: is also given by createGateway');
  });

  it("the file's listener settings are checked at load, each problem with its path", async () => {
    const config = (listener: Record<string, unknown>) => ({
      apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: backend.url } }],
      ...listener,
    });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ clientCertificateHeader: 'Bad Header' }, /clientCertificateHeader: must be a header name/],
      [{ clientCertificateHeader: 'Authorization' }, /clientCertificateHeader: cannot be Authorization/],
      [{ trustProxy: 'not-an-address' }, /trustProxy: has an invalid address/],
      [{ trustProxy: { a: 1 } }, /trustProxy: must be a boolean, a hop count, or addresses/],
      [{ trustProxy: true, clientCertificateHeader: HEADER }, /trustProxy: must list the proxies/],
      [{ trustProxy: 1, clientCertificateHeader: HEADER }, /trustProxy: must list the proxies/],
      [{ publicBaseUrl: 'https://api.example.org/path?x=1' }, /publicBaseUrl: must be an http\(s\) URL without query or fragment/],
    ];
    for (const [listener, message] of cases) {
      const gateway = createGateway({ config: config(listener), metrics: false });
      gateways.push(gateway);
      const err = await gateway.ready().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(listener)).to.be.instanceOf(ConfigError);
      expect((err as Error).message).to.match(message);
    }
    const fine = createGateway({ config: config({ publicBaseUrl: 'https://api.example.org/' }), metrics: false });
    gateways.push(fine);
    await fine.ready();
  });
});
