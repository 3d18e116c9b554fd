/**
 * Protected resource metadata (RFC 9728) as a strict client reads it, over real HTTP: a challenge's
 * `resource_metadata` names a document whose `resource` is identical to the URL the client
 * requested (RFC 9728 section 3.3; a client discards any other), whatever URL of the API it
 * requested; a request without any token (the discovery step of section 5) gets it in its 400
 * challenge too, the rest of that challenge unchanged; `tls_client_certificate_bound_access_tokens`
 * is advertised only where the listener can see client certificates. The demo authorization server
 * (oidc-provider), a real backend, `serveGateway` over HTTP and HTTPS, and the `serve` command.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, serveGateway, type GatewayConfig, type GatewayServer } from '../../src/index.js';
import { createTestPki, type TestPki } from '../support/certificates.js';
import { serve, stop } from '../server/support.js';
import { echoBackend } from './helpers.js';

const PUBLIC = 'https://api.example.org';
const INVALID = 'Bearer realm="DemoIdP", error="invalid_token", error_description="Token invalid"';
const MISSING = 'Bearer realm="DemoIdP", error="invalid_request", error_description="The request is missing a required token parameter"';
const WELL_KNOWN = `${PUBLIC}/.well-known/oauth-protected-resource`;

/** The `resource_metadata` parameter of a challenge (RFC 9728 section 5.1), as a client parses it. */
function resourceMetadataOf(challenge: string | null): string | undefined {
  return challenge === null ? undefined : /(?:^|[\s,])resource_metadata="([^"\\]*)"/.exec(challenge)?.[1];
}

/** The URL a client requested, as RFC 9728 section 3.3 compares it with `resource`: without its query. */
function withoutQuery(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? url : url.slice(0, at);
}

interface Discovery {
  /** The challenge's status. */
  status: number;
  challenge: string | null;
  metadataUrl: string | undefined;
  metadataStatus: number | undefined;
  document: Record<string, unknown> | undefined;
  /** What a strict client concludes: the document is the requested resource's (RFC 9728 section 3.3). */
  accepted: boolean;
}

describe('protected resource metadata for strict clients (RFC 9728 sections 3.3 and 5)', function () {
  this.timeout(90_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    echo = await echoBackend();
  });
  after(async () => {
    await echo.stop();
    await as.stop();
  });

  function config(extra: Partial<GatewayConfig> = {}): GatewayConfig {
    return {
      publicBaseUrl: PUBLIC,
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        {
          provider: 'Ente',
          name: 'PetStore',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP' },
          protectedResourceMetadata: true,
          requiredScopes: ['read'],
          operations: [
            { name: 'getPetById', method: 'GET', path: '/pet/{petId}' },
            { name: 'addPet', method: 'POST', path: '/pet', requiredScopes: ['write'] },
          ],
        },
        { provider: 'Ente', name: 'Plain', version: 1, backend: { url: echo.url }, tokenManagement: { enabled: true, policy: 'DemoIdP' } },
      ],
      ...extra,
    } as GatewayConfig;
  }

  /**
   * A strict client: calls `path` (with `headers`), reads `resource_metadata` from the challenge,
   * fetches that document from the gateway (its public origin is the test's listener) and accepts
   * it only when its `resource` is the URL it requested, without the query.
   */
  async function discover(base: string, path: string, init: RequestInit = {}): Promise<Discovery> {
    const res = await fetch(`${base}${path}`, init);
    await res.arrayBuffer();
    const challenge = res.headers.get('www-authenticate');
    const metadataUrl = resourceMetadataOf(challenge);
    const out: Discovery = {
      status: res.status,
      challenge,
      metadataUrl,
      metadataStatus: undefined,
      document: undefined,
      accepted: false,
    };
    if (metadataUrl === undefined || !metadataUrl.startsWith(`${PUBLIC}/`)) return out;
    const metadata = await fetch(`${base}${metadataUrl.slice(PUBLIC.length)}`);
    out.metadataStatus = metadata.status;
    if (metadata.status !== 200) return out;
    out.document = (await metadata.json()) as Record<string, unknown>;
    out.accepted = out.document['resource'] === withoutQuery(`${PUBLIC}${path}`);
    return out;
  }

  describe('over serveGateway on plain HTTP (no client CA, no certificate header)', () => {
    let server: GatewayServer;

    before(async () => {
      const gateway = createGateway({ config: config(), messages: 'en' });
      await gateway.ready();
      server = await serveGateway(gateway, { port: 0, adminPort: 0 });
    });
    after(() => server.stop());

    it('a 401 on a URL below the API names a document whose resource is exactly that URL, without its query', async () => {
      const found = await discover(server.url, '/gateway/Ente/PetStore/v1/pet/1?color=red', {
        headers: { authorization: 'Bearer not-a-token' },
      });
      expect(found.status).to.equal(401);
      expect(found.challenge).to.equal(`${INVALID}, resource_metadata="${WELL_KNOWN}/gateway/Ente/PetStore/v1/pet/1"`);
      expect(found.metadataStatus).to.equal(200);
      expect(found.document).to.deep.equal({
        resource: `${PUBLIC}/gateway/Ente/PetStore/v1/pet/1`,
        authorization_servers: [as.issuer],
        scopes_supported: ['read', 'write'],
        bearer_methods_supported: ['header', 'body', 'query'],
      });
      expect(found.accepted, 'a strict client keeps the document').to.equal(true);
      const post = await discover(server.url, '/gateway/Ente/PetStore/v1/pet', {
        method: 'POST',
        headers: { authorization: 'Bearer not-a-token' },
      });
      expect(post.status).to.equal(401);
      expect(post.metadataUrl).to.equal(`${WELL_KNOWN}/gateway/Ente/PetStore/v1/pet`);
      expect(post.accepted).to.equal(true);
    });

    it('a request without any token gets resource_metadata in its 400 challenge, the rest of the challenge exactly as before', async () => {
      const found = await discover(server.url, '/gateway/Ente/PetStore/v1/pet/7');
      expect(found.status).to.equal(400);
      expect(found.challenge).to.equal(`${MISSING}, resource_metadata="${WELL_KNOWN}/gateway/Ente/PetStore/v1/pet/7"`);
      expect(found.accepted, 'a strict client finds the document of the URL it asked for').to.equal(true);
      const res = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet/7`);
      expect(res.headers.get('content-type')).to.equal('application/problem+json');
      expect(await res.json()).to.include({ status: 400, gateway_status: 'protocol:GATEWAY-1366' });
      // An API that does not publish metadata keeps its exact challenges.
      const plainMissing = await fetch(`${server.url}/gateway/Ente/Plain/v1/pet/7`);
      expect(plainMissing.status).to.equal(400);
      expect(plainMissing.headers.get('www-authenticate')).to.equal(MISSING);
      const plainInvalid = await fetch(`${server.url}/gateway/Ente/Plain/v1/pet/7`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(plainInvalid.status).to.equal(401);
      expect(plainInvalid.headers.get('www-authenticate')).to.equal(INVALID);
    });

    it('serves the path-inserted document of every URL under the API, its resource that URL; the API root keeps its own', async () => {
      for (const below of ['', '/', '/pet/1', '/things/1', '/pet/%C3%A9t%C3%A9']) {
        const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1${below}?x=1`);
        expect(res.status, below).to.equal(200);
        expect(res.headers.get('content-type')).to.equal('application/json');
        expect(((await res.json()) as { resource: string }).resource, below).to.equal(`${PUBLIC}/gateway/Ente/PetStore/v1${below}`);
      }
      const head = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1/pet/1`, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(await head.text()).to.equal('');
      const post = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1/pet/1`, { method: 'POST' });
      expect(post.status).to.equal(404);
      // An API that does not publish metadata has no document at any path.
      for (const below of ['', '/pet/7']) {
        const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/Plain/v1${below}`);
        expect(res.status, below).to.equal(404);
      }
      expect(echo.seen, 'no backend saw a metadata request').to.deep.equal([]);
    });
  });

  describe('tls_client_certificate_bound_access_tokens: only where client certificates can be seen', () => {
    let pki: TestPki;

    before(async () => {
      pki = await createTestPki();
    });
    after(() => pki.remove());

    function httpsDocument(url: string): Promise<Record<string, unknown>> {
      return new Promise((resolve, reject) => {
        const req = request(url, { ca: pki.ca.cert, agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as Record<string, unknown>) : reject(new Error(text))));
        });
        req.on('error', reject);
        req.end();
      });
    }

    async function advertised(document: GatewayConfig, tls?: { clientCa?: string }): Promise<unknown> {
      const gateway = createGateway({ config: document, messages: 'en' });
      await gateway.ready();
      const server = await serveGateway(gateway, {
        port: 0,
        adminPort: 0,
        ...(tls === undefined ? {} : { tls: { cert: pki.server.certFile, key: pki.server.keyFile, ...tls } }),
      });
      try {
        const url = `${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1`;
        const body = tls === undefined ? ((await (await fetch(url)).json()) as Record<string, unknown>) : await httpsDocument(url);
        return body['tls_client_certificate_bound_access_tokens'];
      } finally {
        await server.stop();
      }
    }

    it("advertised only on the HTTPS listener with a client CA or behind a trusted proxy's certificate header, and only while enforced", async () => {
      // The listener cannot see client certificates: plain HTTP, HTTPS without a client CA.
      expect(await advertised(config()), 'plain HTTP').to.equal(undefined);
      expect(await advertised(config(), {}), 'HTTPS without a client CA').to.equal(undefined);
      // It can: the APIs' HTTPS listener asks clients for certificates, or a trusted proxy sends them.
      expect(await advertised(config(), { clientCa: pki.ca.certFile }), 'HTTPS with a client CA').to.equal(true);
      const proxied = config({ trustProxy: ['loopback'], clientCertificateHeader: 'X-SSL-Client-Cert' });
      expect(await advertised(proxied), 'plain HTTP behind a trusted proxy').to.equal(true);
      // A token policy that ignores certificate-bound tokens never advertises them.
      proxied.tokenPolicies!['DemoIdP'] = { ...proxied.tokenPolicies!['DemoIdP']!, certificateBoundTokens: 'ignore' };
      expect(await advertised(proxied), 'ignore, behind a proxy').to.equal(undefined);
      expect(await advertised(proxied, { clientCa: pki.ca.certFile }), 'ignore, with a client CA').to.equal(undefined);
    });
  });

  it('`serve` from a configuration file: the challenge without a token and the document a strict client keeps', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-prm-strict-'));
    const file = path.join(dir, 'gateway.config.json');
    await writeFile(file, JSON.stringify(config()));
    const served = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0']);
    try {
      const [, api] = await served.waitFor(/serving APIs at (http:\/\/[^\s,]+)/);
      const missing = await discover(api!, '/gateway/Ente/PetStore/v1/pet/3?q=1');
      expect(missing.status).to.equal(400);
      expect(missing.challenge).to.equal(`${MISSING}, resource_metadata="${WELL_KNOWN}/gateway/Ente/PetStore/v1/pet/3"`);
      expect(missing.accepted).to.equal(true);
      expect(missing.document).to.not.have.property('tls_client_certificate_bound_access_tokens');
      const invalid = await discover(api!, '/gateway/Ente/PetStore/v1/pet/3', { headers: { authorization: 'Bearer nope' } });
      expect(invalid.status).to.equal(401);
      expect(invalid.accepted).to.equal(true);
    } finally {
      await stop(served);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
