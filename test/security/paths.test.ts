/**
 * Attacks on the request path, played over real HTTP against a gateway built with `createGateway`
 * in an Express app, in front of an echo backend and a stock Python `wsgiref` backend, with the
 * demo authorization server: one canonical path per request, decided before routing and used for
 * routing, XACML, the record and the relay.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import express from 'express';
import { createGateway, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { close, echoBackend, listen, type Seen } from '../gateway/helpers.js';
import { rawRequest } from './support/http.js';
import { startWsgiBackend, type WsgiBackend, type WsgiSeen } from './support/wsgi-backend.js';

const STRING = 'http://www.w3.org/2001/XMLSchema#string';
/** Denies the API's admin area by the invocation path, permits the rest. */
const DENY_ADMIN = `<?xml version="1.0" encoding="UTF-8"?>
<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="deny-admin"
        RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="no-admin" Effect="Deny">
    <Condition>
      <Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:any-of">
        <Function FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-regexp-match"/>
        <AttributeValue DataType="${STRING}">^/gateway/Ente/Res/v1/admin(/|$)</AttributeValue>
        <ResourceAttributeDesignator AttributeId="urn:oasis:names:tc:xacml:1.0:resource:resource-id" DataType="${STRING}"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="rest" Effect="Permit"/>
</Policy>`;

describe('security: the canonical request path', () => {
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let wsgi: WsgiBackend;
  let dir: string;
  let store: MemoryTransactionStore;
  let gateway: Gateway;
  let server: Server;
  let base: string;
  let token: string;

  before(async () => {
    [as, echo, wsgi] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), startWsgiBackend()]);
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-paths-'));
    await writeFile(path.join(dir, 'deny-admin.xml'), DENY_ADMIN);
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Res',
          version: 1,
          backend: { url: `${echo.url}/res` },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: true },
          authorization: { mode: 'xacml-Policy', policy: 'deny-admin.xml' },
        },
        // An API without token management, in front of a backend that also serves protected paths.
        { provider: 'Ente', name: 'Open', version: 1, backend: { url: `${wsgi.url}/open` } },
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: `${echo.url}/pets` },
          operations: [{ name: 'getPetById', method: 'GET', path: '/pet/{petId}' }],
        },
      ],
    };
    store = new MemoryTransactionStore();
    gateway = createGateway({ config, baseDir: dir, store, messages: 'en' });
    await gateway.ready();
    const app = express();
    app.use(gateway.router);
    app.use((_req, res) => res.status(418).send('the host app'));
    server = createServer(app);
    base = await listen(server);
    token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
  });

  after(async () => {
    await close(server);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop(), wsgi.stop(), rm(dir, { recursive: true, force: true })]);
  });

  const bearer = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  it('an upper-case base path or API name is not routed: 404, the deny rule is not dodged, nothing relayed', async () => {
    // Before: Express's mount matched /GATEWAY case-insensitively while XACML read the raw URL, so
    // the deny rule on ^/gateway/Ente/Res/v1/admin did not match and /res/admin/secret was relayed.
    const seen = echo.seen.length;
    for (const target of ['/GATEWAY/Ente/Res/v1/admin/secret', '/Gateway/Ente/Res/v1/admin/secret', '/gateway/ente/res/v1/admin/secret']) {
      const res = await rawRequest(base, target, { headers: bearer() });
      expect(res.status, target).to.equal(404);
      expect(res.headers['content-type'], target).to.match(/^application\/problem\+json/);
    }
    expect(echo.seen.length, 'requests relayed').to.equal(seen);
  });

  it('escaped unreserved characters are decoded before the policy: /%61dmin is /admin and denied', async () => {
    const seen = echo.seen.length;
    const res = await rawRequest(base, '/gateway/Ente/Res/v1/%61dmin/secret', { headers: bearer() });
    expect(res.status).to.equal(403);
    expect(JSON.parse(res.body)).to.include({ gateway_status: 'protocol:GATEWAY-1352' });
    expect(echo.seen.length, 'requests relayed').to.equal(seen);
  });

  it('the backend receives exactly the path the policy evaluated, and the record says the same', async () => {
    const res = await rawRequest(base, '/gateway/Ente/Res/v1/pets/%7Eme%2a?q=%61', { headers: bearer() });
    expect(res.status).to.equal(201);
    const seen = JSON.parse(res.body) as Seen;
    expect(seen.url).to.equal('/res/pets/~me%2A?q=%61');
    const id = res.headers['gateway-transaction-id'] as string;
    const record = await store.get(id);
    expect(record?.url).to.equal('/gateway/Ente/Res/v1/pets/~me%2A?q=%61');
  });

  const refused = [
    '/gateway/Ente/Res/v1/x/../admin/secret',
    '/gateway/Ente/Res/v1/./admin/secret',
    '/gateway/Ente/Res/v1/x/%2e%2e/admin/secret',
    '/gateway/Ente/Res/v1/x/%2E%2e/%2e%2E/%2e%2e/Open/v1/y',
    '/gateway/Ente/Res/v1/admin%2fsecret',
    '/gateway/Ente/Res/v1/admin%2Fsecret',
    '/gateway/Ente/Res/v1/x%5c..%5cadmin',
    '/gateway/Ente/Res/v1/x\\..\\admin',
    '/gateway/Ente/Res/v1//admin/secret',
    '/gateway/Ente/Res/v1/admin;jsessionid=1/secret',
    '/gateway/Ente/Res/v1/admin%00.json',
    '/gateway/Ente/Res/v1/admin%0d%0aX-Injected:%201',
    '/gateway/Ente/Res/v1/admin%zz',
    '/gateway/Ente/Res/v1/admin#fragment',
    '/gateway/Ente/Pets/v1/pet/..',
    '/gateway/Ente/Pets/v1/pet/%2e',
    '/gateway/./Ente/Res/v1/admin',
  ];

  for (const target of refused) {
    it(`refuses ${JSON.stringify(target)} with 400 ERR_PATH_REFUSED before any token work, and relays nothing`, async () => {
      const seen = echo.seen.length;
      const introspections = as.stats.introspections;
      // With a valid token: the refusal comes before introspection. Without one: before the 400 for a missing token.
      for (const headers of [bearer(), {}]) {
        const res = await rawRequest(base, target, { headers });
        expect(res.status, target).to.equal(400);
        expect(res.headers['www-authenticate'], 'no token challenge').to.equal(undefined);
        expect(JSON.parse(res.body)).to.include({ status: 400, gateway_status: 'protocol:GATEWAY-400', detail: 'Invalid request path' });
        expect(res.headers['gateway-transaction-id']).to.be.a('string');
      }
      expect(echo.seen.length, 'requests relayed').to.equal(seen);
      expect(as.stats.introspections, 'introspection calls').to.equal(introspections);
    });
  }

  it('a refused path is recorded with the code and the reason', async () => {
    const res = await rawRequest(base, '/gateway/Ente/Res/v1/x/../admin');
    const record = await store.get(res.headers['gateway-transaction-id'] as string);
    expect(record?.errorCode).to.equal('ERR_PATH_REFUSED');
    expect(record?.diagnostics.map((d) => d.message).join('\n')).to.include('dot segment');
  });

  it('through an API without token management, an escaped separator cannot reach another backend path (WSGI decodes PATH_INFO)', async () => {
    // Before: relayed raw as /open/..%2fprivate, which the WSGI backend reads as /open/../private.
    const attack = await rawRequest(base, '/gateway/Ente/Open/v1/..%2fprivate');
    expect(attack.status).to.equal(400);
    const ok = await rawRequest(base, '/gateway/Ente/Open/v1/docs/%69ndex');
    expect(ok.status).to.equal(200);
    expect((JSON.parse(ok.body) as WsgiSeen).PATH_INFO).to.equal('/open/docs/index');
  });

  it('a token in the URL never reaches the backend, whatever the shape of its parameter name', async () => {
    for (const query of [
      `access%5Ftoken=${encodeURIComponent(token)}`,
      `access_token%5B%5D=${encodeURIComponent(token)}`,
      `access_token[x]=${encodeURIComponent(token)}`,
      `ACCESS_TOKEN=${encodeURIComponent(token)}`,
      `+access_token+=${encodeURIComponent(token)}`,
    ]) {
      // A header token too where the query form is not one RFC 6750 knows, so that the request is valid.
      const headers = query.startsWith('access%5F') ? {} : bearer();
      const res = await rawRequest(base, `/gateway/Ente/Res/v1/pets?${query}&keep=1`, { headers });
      expect(res.status, query).to.equal(201);
      const seen = JSON.parse(res.body) as Seen;
      expect(seen.url, query).to.equal('/res/pets?keep=1');
      expect(JSON.stringify(seen), query).to.not.include(token);
      const record = await store.get(res.headers['gateway-transaction-id'] as string);
      expect(JSON.stringify(record), query).to.not.include(token);
    }
  });

  it('requests outside the base path are left to the host app', async () => {
    const res = await rawRequest(base, '/elsewhere/../gateway');
    expect(res.status).to.equal(418);
    expect(res.body).to.equal('the host app');
  });
});

describe('security: the canonical request path, as a plain node:http handler', () => {
  it('serves the same rules without Express, and 404 outside the base path', async () => {
    const echo = await echoBackend();
    const gateway = createGateway({
      config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url } }] },
      messages: 'en',
    });
    const server = createServer(gateway.handler);
    const base = await listen(server);
    try {
      expect((await rawRequest(base, '/gateway/Ente/Echo/v1/a/../b')).status).to.equal(400);
      expect((await rawRequest(base, '/GATEWAY/Ente/Echo/v1/b')).status).to.equal(404);
      expect((await rawRequest(base, '/other')).status).to.equal(404);
      const ok = await rawRequest(base, '/gateway/Ente/Echo/v1/%62');
      expect(ok.status).to.equal(201);
      expect((JSON.parse(ok.body) as Seen).url).to.equal('/b');
      expect(echo.seen.map((s) => s.url)).to.deep.equal(['/b']);
    } finally {
      await close(server);
      await gateway.close();
      await echo.stop();
    }
  });

  it('maxRequestTargetBytes bounds the request target (path and query): 414 past it, before routing; it is validated at start', async () => {
    for (const bad of [0, -1, 1.5, '8k']) {
      expect(() => createGateway({ config: { apis: [] }, maxRequestTargetBytes: bad as never })).to.throw(
        TypeError,
        /maxRequestTargetBytes must be a positive integer/,
      );
    }
    const echo = await echoBackend();
    const gateway = createGateway({
      config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url } }] },
      maxRequestTargetBytes: 64,
    });
    const server = createServer(gateway.handler);
    const base = await listen(server);
    try {
      const at = '/gateway/Ente/Echo/v1/';
      const within = await rawRequest(base, `${at}${'a'.repeat(64 - at.length)}`);
      expect(within.status).to.equal(201);
      for (const over of [
        `${at}${'a'.repeat(65 - at.length)}`,
        `${at}x?${'q'.repeat(64)}`,
        `/gateway/Nobody/Nothing/v1/${'a'.repeat(64)}`,
      ]) {
        const refused = await rawRequest(base, over);
        expect(refused.status, over).to.equal(414);
        expect(JSON.parse(refused.body)).to.include({ status: 414, gateway_status: 'protocol:GATEWAY-414' });
      }
      expect(echo.seen).to.have.length(1);
    } finally {
      await close(server);
      await gateway.close();
      await echo.stop();
    }
  });

  it('allowEmptySegments lets /a//b through as it is; it is validated at start', async () => {
    expect(() => createGateway({ config: { apis: [] }, allowEmptySegments: 'yes' as never })).to.throw(
      TypeError,
      /allowEmptySegments must be a boolean/,
    );
    const echo = await echoBackend();
    const gateway = createGateway({
      config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url } }] },
      allowEmptySegments: true,
    });
    const server = createServer(gateway.handler);
    const base = await listen(server);
    try {
      const ok = await rawRequest(base, '/gateway/Ente/Echo/v1/a//b');
      expect(ok.status).to.equal(201);
      expect((JSON.parse(ok.body) as Seen).url).to.equal('/a//b');
      expect((await rawRequest(base, '/gateway/Ente/Echo/v1/a/../b')).status).to.equal(400);
    } finally {
      await close(server);
      await gateway.close();
      await echo.stop();
    }
  });
});
