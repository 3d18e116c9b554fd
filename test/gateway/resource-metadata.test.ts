/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728), per API, opt-in (`protectedResourceMetadata`):
 * the document at `/.well-known/oauth-protected-resource<basePath>/<provider>/<name>/v<version>`
 * on the API listener, answered by the gateway (never a backend), and `resource_metadata` in that
 * API's 401 challenges (naming the document of the URL requested: resource-metadata-strict.test.ts);
 * other APIs keep the exact challenges of docs/errors.md. Real listeners, the demo
 * authorization server (oidc-provider), a real backend, and the `serve` command.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { ConfigError, createGateway, serveGateway, type GatewayConfig, type GatewayServer } from '../../src/index.js';
import { close, echoBackend } from './helpers.js';
import { serve, stop } from '../server/support.js';

const INVALID = 'Bearer realm="DemoIdP", error="invalid_token", error_description="Token invalid"';
const METADATA_URL = 'https://api.example.org/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1';
/** The metadata of `…/v1/pet/1`, the URL the challenges below answer. */
const PET_METADATA_URL = `${METADATA_URL}/pet/1`;

describe('protected resource metadata (RFC 9728)', function () {
  this.timeout(60_000);
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

  function config(extra: Partial<GatewayConfig> = {}, api: Record<string, unknown> = {}): GatewayConfig {
    return {
      publicBaseUrl: 'https://api.example.org',
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
            { name: 'addPet', method: 'POST', path: '/pet', requiredScopes: ['write', 'read'] },
          ],
          ...api,
        },
        { provider: 'Ente', name: 'Plain', version: 1, backend: { url: echo.url }, tokenManagement: { enabled: true, policy: 'DemoIdP' } },
      ],
      ...extra,
    } as GatewayConfig;
  }

  describe('on serveGateway, base path /gateway', () => {
    let server: GatewayServer;

    before(async () => {
      const gateway = createGateway({ config: config(), messages: 'en' });
      await gateway.ready();
      server = await serveGateway(gateway, { port: 0, adminPort: 0 });
    });
    after(() => server.stop());
    beforeEach(() => {
      echo.seen.length = 0;
    });

    it('answers the metadata of an API that opts in: resource from publicBaseUrl, its authorization server, scopes, bearer methods', async () => {
      const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/json');
      expect(res.headers.get('gateway-transaction-id')).to.be.a('string');
      expect(await res.json()).to.deep.equal({
        resource: 'https://api.example.org/gateway/Ente/PetStore/v1',
        authorization_servers: [as.issuer],
        scopes_supported: ['read', 'write'],
        bearer_methods_supported: ['header', 'body', 'query'],
        // No tls_client_certificate_bound_access_tokens: plain HTTP without a client CA sees no certificate.
      });
      const head = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1`, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(await head.text()).to.equal('');
      expect(echo.seen, 'no backend saw it').to.deep.equal([]);
    });

    it("names the metadata in that API's 401 challenges; a valid token still goes through", async () => {
      const refused = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet/1`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.equal(`${INVALID}, resource_metadata="${PET_METADATA_URL}"`);
      expect(((await refused.json()) as { gateway_status: string }).gateway_status).to.equal('protocol:GATEWAY-1367');
      const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
      const ok = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet/1`, { headers: { authorization: `Bearer ${token}` } });
      // The echo backend answers 201 with what it received.
      expect(ok.status).to.equal(201);
      expect(echo.seen.map((seen) => seen.url)).to.deep.equal(['/pet/1']);
      // A 403 is not a 401: its challenge stays RFC 6750's.
      const short = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(short.status).to.equal(403);
      expect(short.headers.get('www-authenticate')).to.not.include('resource_metadata');
    });

    it('leaves the documented exact challenge to an API that does not opt in, and answers 404 problem+json for its metadata', async () => {
      const refused = await fetch(`${server.url}/gateway/Ente/Plain/v1/pet/1`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.equal(INVALID);
      const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/Plain/v1`);
      expect(res.status).to.equal(404);
      expect(res.headers.get('content-type')).to.equal('application/problem+json');
      expect(await res.json()).to.include({ status: 404, gateway_status: 'protocol:GATEWAY-404' });
    });

    it('answers 404 problem+json for unknown APIs, other methods and other base paths; never a backend', async () => {
      const prefix = `${server.url}/.well-known/oauth-protected-resource`;
      for (const [url, method] of [
        [`${prefix}/gateway/Ente/Nope/v1`, 'GET'],
        [`${prefix}/gateway/Ente/PetStore/v2`, 'GET'],
        [`${prefix}/gateway/Ente/PetStore`, 'GET'],
        [`${prefix}/gateway/`, 'GET'],
        [`${prefix}/Ente/PetStore/v1`, 'GET'],
        [`${prefix}/gateway/Ente/PetStore/v1`, 'POST'],
        [`${prefix}/gateway/Ente/PetStore/v1`, 'DELETE'],
      ] as const) {
        const res = await fetch(url, { method });
        expect(res.status, `${method} ${url}`).to.equal(404);
        expect(res.headers.get('content-type'), url).to.equal('application/problem+json');
      }
      expect(echo.seen).to.deep.equal([]);
    });

    it('records the metadata exchange like any other of the listener', async () => {
      const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1?x=1`);
      const id = res.headers.get('gateway-transaction-id')!;
      const page = await server.gateway.store.query({ limit: 500 });
      const record = page.items.find((item) => item.id === id);
      expect(record?.status).to.equal(200);
    });
  });

  it('says what a token policy with DPoP on accepts, and names the metadata in both challenges of its 401s', async () => {
    const document = config();
    document.tokenPolicies!.DemoIdP = {
      ...document.tokenPolicies!.DemoIdP!,
      dpop: 'allowed',
      dpopSigningAlgs: ['ES256', 'EdDSA'],
      certificateBoundTokens: 'ignore',
    };
    const gateway = createGateway({ config: document, messages: 'en' });
    await gateway.ready();
    const server = await serveGateway(gateway, { port: 0, adminPort: 0 });
    try {
      const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1`);
      expect(await res.json()).to.deep.equal({
        resource: 'https://api.example.org/gateway/Ente/PetStore/v1',
        authorization_servers: [as.issuer],
        scopes_supported: ['read', 'write'],
        bearer_methods_supported: ['header', 'body', 'query'],
        dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
        dpop_bound_access_tokens_required: false,
      });
      const refused = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet/1`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.equal(
        `${INVALID}, resource_metadata="${PET_METADATA_URL}", DPoP realm="DemoIdP", algs="ES256 EdDSA", resource_metadata="${PET_METADATA_URL}"`,
      );
      const plain = await fetch(`${server.url}/gateway/Ente/Plain/v1/pet/1`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(plain.headers.get('www-authenticate')).to.equal(`${INVALID}, DPoP realm="DemoIdP", algs="ES256 EdDSA"`);
    } finally {
      await server.stop();
    }
  });

  it("with base path / and createGateway's publicBaseUrl (path prefix kept), in an Express app after the host's own routes", async () => {
    const gateway = createGateway({
      config: config({ publicBaseUrl: undefined }),
      basePath: '/',
      publicBaseUrl: 'https://example.net/apis/',
    });
    await gateway.ready();
    const app = express();
    // With base path `/` the gateway takes every path: the host's own routes go first.
    app.get('/.well-known/other', (_req, res) => res.json({ host: true }));
    app.use(gateway.router);
    const http = app.listen(0, '127.0.0.1');
    try {
      const url = await new Promise<string>((resolve) =>
        http.once('listening', () => resolve(`http://127.0.0.1:${(http.address() as { port: number }).port}`)),
      );
      const res = await fetch(`${url}/.well-known/oauth-protected-resource/Ente/PetStore/v1`);
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { resource: string }).resource).to.equal('https://example.net/apis/Ente/PetStore/v1');
      const refused = await fetch(`${url}/Ente/PetStore/v1/pet/1`, { headers: { authorization: 'Bearer nope' } });
      expect(refused.headers.get('www-authenticate')).to.equal(
        `${INVALID}, resource_metadata="https://example.net/.well-known/oauth-protected-resource/apis/Ente/PetStore/v1/pet/1"`,
      );
      expect((await fetch(`${url}/.well-known/other`)).status).to.equal(200);
    } finally {
      await close(http);
      await gateway.close();
    }
  });

  it('refuses to load an API that opts in without publicBaseUrl, or without token management; `.well-known` is no provider', async () => {
    const issues = async (document: GatewayConfig): Promise<string[]> => {
      const gateway = createGateway({ config: document });
      const error = await gateway.ready().catch((e: unknown) => e);
      await gateway.close();
      expect(error).to.be.instanceOf(ConfigError);
      return (error as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
    };
    expect(await issues(config({ publicBaseUrl: undefined }))).to.deep.equal([
      "apis[0].protectedResourceMetadata: needs publicBaseUrl at the top of the configuration (or createGateway's publicBaseUrl): the resource's URL",
    ]);
    expect(await issues(config({}, { tokenManagement: undefined, requiredScopes: undefined, operations: undefined }))).to.deep.equal([
      'apis[0].protectedResourceMetadata: needs token management enabled (the metadata names its authorization server)',
    ]);
    expect(await issues(config({}, { provider: '.well-known' }))).to.deep.equal([
      'apis[0].provider: ".well-known" is reserved for well-known URIs (RFC 8615)',
    ]);
    expect(await issues(config({ publicBaseUrl: 'api.example.org' }))).to.deep.equal([
      'publicBaseUrl: must be an http(s) URL without query or fragment',
    ]);
  });

  it('`serve` answers it from a configuration file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-prm-'));
    const file = path.join(dir, 'gateway.config.json');
    await writeFile(file, JSON.stringify(config()));
    const served = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0']);
    try {
      const [, api] = await served.waitFor(/serving APIs at (http:\/\/[^\s,]+)/);
      const res = await fetch(`${api}/.well-known/oauth-protected-resource/gateway/Ente/PetStore/v1`);
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { resource: string }).resource).to.equal('https://api.example.org/gateway/Ente/PetStore/v1');
      const refused = await fetch(`${api}/gateway/Ente/PetStore/v1/pet/1`, { headers: { authorization: 'Bearer nope' } });
      expect(refused.headers.get('www-authenticate')).to.equal(`${INVALID}, resource_metadata="${PET_METADATA_URL}"`);
    } finally {
      await stop(served);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
