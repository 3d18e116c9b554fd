/**
 * Certificate-bound access tokens (RFC 8705) end to end: a real authorization server
 * (oidc-provider, `mTLS.certificateBoundAccessTokens`) issues tokens bound to client certificates
 * of a CA made for the test; the gateway serves HTTPS with that CA as its client CA. A bound token
 * passes only with its certificate (401 `invalid_token` otherwise); the record, the metric, the
 * XACML request and the forwarded token information say what was found.
 */
import { request } from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createGateway, serveGateway, type GatewayConfig, type GatewayServer, type TransactionRecord } from '../../../src/index.js';
import { createTestPki, type Issued, type TestPki } from '../../support/certificates.js';
import { echoBackend, type Seen } from '../../gateway/helpers.js';
import { startMtlsAuthServer, type MtlsAuthServer } from './mtls-auth-server.js';

/** The XACML policy: permits only a request whose token binding the gateway verified. */
const BINDING_POLICY = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="urn:test:bound-only"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:permit-overrides">
  <Target/>
  <Rule RuleId="bound" Effect="Permit">
    <Condition>
      <Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-is-in">
        <AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">x5t#S256</AttributeValue>
        <SubjectAttributeDesignator AttributeId="org:gateway:subject:token:binding" DataType="http://www.w3.org/2001/XMLSchema#string"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="others" Effect="Deny"/>
</Policy>`;

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over a new TLS connection, with a client certificate or none. */
export function httpsCall(
  url: string,
  options: { ca: string; certificate?: Issued | undefined; token?: string; headers?: Record<string, string | string[]> },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: options.ca,
        agent: false,
        ...(options.certificate === undefined ? {} : { cert: options.certificate.cert, key: options.certificate.key }),
        headers: { ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }), ...options.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function recordOf(server: GatewayServer, answer: Answer): Promise<TransactionRecord> {
  const id = answer.headers['gateway-transaction-id'] as string;
  for (let i = 0; i < 200; i++) {
    const found = await server.gateway.store.get(id);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no record ${id}`);
}

describe("certificate-bound tokens over the gateway's own HTTPS listener (RFC 8705)", function () {
  this.timeout(60_000);
  let pki: TestPki;
  let clientA: Issued;
  let clientB: Issued;
  let rogue: Issued;
  let as: MtlsAuthServer;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let server: GatewayServer;
  let dir: string;
  let boundToken: string;
  let plainToken: string;
  let base: string;

  before(async () => {
    pki = await createTestPki();
    [clientA, clientB, rogue] = await Promise.all([
      pki.issue('client-a', 'client'),
      pki.issue('client-b', 'client'),
      pki.selfSigned('rogue'),
    ]);
    as = await startMtlsAuthServer(pki);
    backend = await echoBackend();
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-binding-'));
    await writeFile(path.join(dir, 'bound-only.xml'), BINDING_POLICY);
    const policy = (certificateBoundTokens: 'enforce' | 'ignore') => ({
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      certificateBoundTokens,
    });
    const api = (name: string, tokenPolicy: string, extra: Partial<GatewayConfig['apis'][number]> = {}) => ({
      provider: 'Ente',
      name,
      version: 1,
      backend: { url: backend.url },
      tokenManagement: { enabled: true, policy: tokenPolicy, tokenForward: true },
      recording: { outgoingHeaders: true },
      ...extra,
    });
    const config: GatewayConfig = {
      tokenPolicies: { Strict: policy('enforce'), Lenient: policy('ignore'), Jwt: { ...policy('enforce'), audience: as.jwtAudience } },
      apis: [
        api('Echo', 'Strict'),
        api('Lenient', 'Lenient'),
        api('BoundOnly', 'Strict', { authorization: { mode: 'xacml-Policy', policy: 'bound-only.xml' } }),
        api('Jwt', 'Jwt', {
          tokenManagement: { enabled: true, policy: 'Jwt', jwtValidation: true, introspection: false, tokenForward: true },
        }),
      ],
    };
    const gateway = createGateway({ config, baseDir: dir, metrics: { auth: false } });
    await gateway.ready();
    server = await serveGateway(gateway, {
      port: 0,
      adminPort: false,
      tls: { cert: pki.server.certFile, key: pki.server.keyFile, clientCa: pki.ca.certFile },
    });
    base = `${server.url}/gateway/Ente`;
    [boundToken, plainToken] = await Promise.all([as.issueToken('bound', clientA), as.issueToken('plain', clientA)]);
  });

  after(async () => {
    await server?.stop();
    await Promise.all([
      as?.stop(),
      backend?.stop(),
      pki?.remove(),
      dir === undefined ? undefined : rm(dir, { recursive: true, force: true }),
    ]);
  });

  const lastSeen = (): Seen => backend.seen.at(-1)!;

  it('serves HTTPS: the URL says so', () => {
    expect(server.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('a bound token with its certificate passes; the backend is told the binding was proven', async () => {
    const answer = await httpsCall(`${base}/Echo/v1/pets`, { ca: pki.ca.cert, certificate: clientA, token: boundToken });
    expect(answer.status).to.equal(201);
    expect(lastSeen().headers['gateway-token-binding']).to.equal('x5t#S256');
    const record = await recordOf(server, answer);
    expect(record.binding).to.deep.equal({
      kind: 'x5t#S256',
      thumbprint: clientA.thumbprint,
      result: 'verified',
      presented: clientA.thumbprint,
    });
    expect(record.outgoing?.headers['Gateway-Token-Binding']).to.equal('x5t#S256');
  });

  it('the same token is refused (401 invalid_token) with another certificate of the same CA, without one, and with an unverified one', async () => {
    const cases: Array<[Issued | undefined, string]> = [
      [clientB, 'mismatch'],
      [undefined, 'no_certificate'],
      [rogue, 'unverified_certificate'],
    ];
    for (const [certificate, reason] of cases) {
      // Twice: the second answer comes from the token cache, and is refused all the same.
      for (let round = 0; round < 2; round++) {
        const answer = await httpsCall(`${base}/Echo/v1/pets`, { ca: pki.ca.cert, certificate, token: boundToken });
        expect(answer.status, reason).to.equal(401);
        expect(answer.headers['www-authenticate']).to.equal(
          'Bearer realm="Strict", error="invalid_token", error_description="Token invalid"',
        );
        expect(JSON.parse(answer.body)).to.include({ status: 401, gateway_status: 'protocol:GATEWAY-1367' });
        const record = await recordOf(server, answer);
        expect(record.errorCode).to.equal('ERR_TOKEN_INVALID');
        expect(record.binding).to.include({ kind: 'x5t#S256', thumbprint: clientA.thumbprint, result: 'refused', reason });
        expect(record.binding?.presented).to.equal(certificate === undefined || certificate === rogue ? undefined : certificate.thumbprint);
        expect(record.diagnostics.map((d) => d.message).join('\n')).to.include('certificate-bound token (cnf x5t#S256) refused');
      }
    }
  });

  it('counts the refusals by reason', async () => {
    const text = await server.gateway.metrics!.text();
    for (const reason of ['mismatch', 'no_certificate', 'unverified_certificate'])
      expect(text).to.include(`gateway_token_binding_refusals_total{policy="Strict",kind="x5t#S256",reason="${reason}"} 2`);
  });

  it('a token that is not bound needs no certificate, and the backend is told nothing of a binding', async () => {
    const answer = await httpsCall(`${base}/Echo/v1/pets`, { ca: pki.ca.cert, token: plainToken });
    expect(answer.status).to.equal(201);
    expect(lastSeen().headers).not.to.have.property('gateway-token-binding');
    expect((await recordOf(server, answer)).binding).to.equal(undefined);
  });

  it('certificateBoundTokens "ignore": the bound token passes without its certificate, as a bearer token', async () => {
    const answer = await httpsCall(`${base}/Lenient/v1/pets`, { ca: pki.ca.cert, token: boundToken });
    expect(answer.status).to.equal(201);
    expect(lastSeen().headers).not.to.have.property('gateway-token-binding');
    expect((await recordOf(server, answer)).binding).to.deep.equal({ kind: 'x5t#S256', thumbprint: clientA.thumbprint, result: 'ignored' });
  });

  it('the XACML request says whether the binding was proven: a policy can ask for it', async () => {
    const bound = await httpsCall(`${base}/BoundOnly/v1/pets`, { ca: pki.ca.cert, certificate: clientA, token: boundToken });
    expect(bound.status).to.equal(201);
    const plain = await httpsCall(`${base}/BoundOnly/v1/pets`, { ca: pki.ca.cert, certificate: clientA, token: plainToken });
    expect(plain.status).to.equal(403);
    const attributes = (await recordOf(server, plain)).authorization?.request?.subject ?? [];
    const ids = attributes.map((a) => a.id);
    expect(ids).to.include('org:gateway:subject:token:clientId');
    expect(ids).not.to.include('org:gateway:subject:token:binding');
  });

  it('a JWT access token validated locally is bound by the cnf of its claims', async () => {
    const jwt = await as.issueToken('bound', clientA, 'jwt');
    const url = `${base}/Jwt/v1/pets`;
    const bound = await httpsCall(url, { ca: pki.ca.cert, certificate: clientA, token: jwt });
    expect(bound.status).to.equal(201);
    expect(lastSeen().headers['gateway-token-binding']).to.equal('x5t#S256');
    const other = await httpsCall(url, { ca: pki.ca.cert, certificate: clientB, token: jwt });
    expect(other.status).to.equal(401);
    expect((await recordOf(server, other)).binding).to.include({ result: 'refused', reason: 'mismatch' });
  });
});
