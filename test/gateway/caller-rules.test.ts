/**
 * The configuration's caller rules through createGateway, over real HTTP with the demo
 * authorization server: required scopes per API and per operation (403 insufficient_scope before
 * XACML), and client applications whose organization an XACML policy decides on.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createGateway, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { close, echoBackend, listen } from './helpers.js';

const STRING = 'http://www.w3.org/2001/XMLSchema#string';
const ACME_ONLY = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="acme-only"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="acme" Effect="Permit">
    <Condition>
      <Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-is-in">
        <AttributeValue DataType="${STRING}">Acme</AttributeValue>
        <SubjectAttributeDesignator AttributeId="org:gateway:subject:organization" DataType="${STRING}"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="others" Effect="Deny"/>
</Policy>`;

describe('createGateway: caller rules of the configuration', () => {
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  let gateway: Gateway;
  let store: MemoryTransactionStore;
  let server: Server;
  let base: string;

  before(async () => {
    [as, echo] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend()]);
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-rules-'));
    await writeFile(path.join(dir, 'acme-only.xml'), ACME_ONLY);
    const tokenManagement = { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: true } as const;
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      applications: {
        client1: { name: 'PetShop', organization: 'Acme', roles: ['buyer'] },
        client2: { name: 'Other', organization: 'Globex' },
      },
      apis: [
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: echo.url },
          tokenManagement,
          requiredScopes: ['read'],
          operations: [
            { name: 'getPet', method: 'GET', path: '/pet/{id}' },
            { name: 'addPet', method: 'POST', path: '/pet', requiredScopes: ['write'] },
          ],
        },
        {
          provider: 'Ente',
          name: 'Acme',
          version: 1,
          backend: { url: echo.url },
          tokenManagement,
          authorization: { mode: 'xacml-Policy', policy: 'acme-only.xml' },
        },
      ],
    };
    store = new MemoryTransactionStore();
    gateway = createGateway({ config, baseDir: dir, store, messages: 'en' });
    await gateway.ready();
    server = createServer(gateway.handler);
    base = await listen(server);
  });

  after(async () => {
    await close(server);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop(), rm(dir, { recursive: true, force: true })]);
  });

  it("requires the API's scopes and the operation's on top, with an insufficient_scope challenge", async () => {
    const readOnly = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    const readWrite = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    const writeOnly = await as.issueToken('client1', 'client1-secret', { scope: 'write' });
    const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
    const seen = echo.seen.length;

    expect((await fetch(`${base}/gateway/Ente/Pets/v1/pet/1`, { headers: bearer(readOnly) })).status).to.equal(201);
    const noWrite = await fetch(`${base}/gateway/Ente/Pets/v1/pet`, { method: 'POST', headers: bearer(readOnly) });
    expect(noWrite.status).to.equal(403);
    expect(noWrite.headers.get('www-authenticate')).to.match(/^Bearer realm="DemoIdP", error="insufficient_scope", scope="read write"/);
    expect(await noWrite.json()).to.include({ gateway_status: 'protocol:GATEWAY-1368' });
    const noRead = await fetch(`${base}/gateway/Ente/Pets/v1/pet/1`, { headers: bearer(writeOnly) });
    expect(noRead.status).to.equal(403);
    expect(noRead.headers.get('www-authenticate')).to.include('scope="read"');
    expect((await fetch(`${base}/gateway/Ente/Pets/v1/pet`, { method: 'POST', headers: bearer(readWrite) })).status).to.equal(201);
    expect(echo.seen.length - seen, 'requests relayed').to.equal(2);

    const record = await store.get(noWrite.headers.get('gateway-transaction-id')!);
    expect(record?.outcome.code).to.equal('INSUFFICIENT_SCOPE');
  });

  it('fills org:gateway:subject:organization from the registered application, for the policy to decide on', async () => {
    const acme = await as.issueToken('client1', 'client1-secret');
    const globex = await as.issueToken('client2', 'client2-secret');
    const permitted = await fetch(`${base}/gateway/Ente/Acme/v1/x`, { headers: { authorization: `Bearer ${acme}` } });
    expect(permitted.status).to.equal(201);
    const record = await store.get(permitted.headers.get('gateway-transaction-id')!);
    expect(record?.sender.application).to.deep.equal({ name: 'PetShop', organization: 'Acme', roles: ['buyer'] });
    expect(record?.sender.clientId).to.equal('client1');
    const denied = await fetch(`${base}/gateway/Ente/Acme/v1/x`, { headers: { authorization: `Bearer ${globex}` } });
    expect(denied.status).to.equal(403);
    expect(await denied.json()).to.include({ gateway_status: 'protocol:GATEWAY-1352' });
  });
});

describe('createGateway: scope alternatives of an API and of an operation', () => {
  it('passes a token holding one way of the API crossed with the operation, refuses others naming the first way and listing all', async () => {
    const as = await startDemoAuthServer({ port: 0 });
    const echo = await echoBackend();
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP' },
          scopeAlternatives: [['read'], ['write']],
          operations: [
            { name: 'getPet', method: 'GET', path: '/pet/{id}' },
            { name: 'addPet', method: 'POST', path: '/pet', scopeAlternatives: [['write'], []] },
          ],
        },
      ],
    };
    const gateway = createGateway({ config, messages: 'en' });
    await gateway.ready();
    const server = createServer(gateway.handler);
    const base = await listen(server);
    try {
      const token = async (scope?: string) =>
        `Bearer ${await as.issueToken('client1', 'client1-secret', scope === undefined ? {} : { scope })}`;
      const seen = echo.seen.length;
      for (const scope of ['read', 'write']) {
        const res = await fetch(`${base}/gateway/Ente/Pets/v1/pet/1`, { headers: { authorization: await token(scope) } });
        expect(res.status, scope).to.equal(201);
      }
      // addPet's empty alternative needs nothing more than the API's rule.
      const add = await fetch(`${base}/gateway/Ente/Pets/v1/pet`, { method: 'POST', headers: { authorization: await token('read') } });
      expect(add.status).to.equal(201);
      expect(echo.seen.length - seen, 'requests relayed').to.equal(3);
      const refused = await fetch(`${base}/gateway/Ente/Pets/v1/pet`, { method: 'POST', headers: { authorization: await token() } });
      expect(refused.status).to.equal(403);
      expect(refused.headers.get('www-authenticate')).to.match(/^Bearer realm="DemoIdP", error="insufficient_scope", scope="read write",/);
      expect(await refused.json()).to.deep.include({
        gateway_status: 'protocol:GATEWAY-1368',
        scope_alternatives: [['read', 'write'], ['read'], ['write']],
      });
      expect(echo.seen.length - seen, 'requests relayed').to.equal(3);
    } finally {
      await close(server);
      await gateway.close();
      await Promise.all([as.stop(), echo.stop()]);
    }
  });
});

describe('createGateway: the invalid-token throttle behind a trusted proxy', () => {
  it('keys the throttle on the forwarded client address when trustProxy trusts the peer', async () => {
    const as = await startDemoAuthServer({ port: 0 });
    const echo = await echoBackend();
    const config: GatewayConfig = {
      tokenPolicies: {
        DemoIdP: {
          issuer: as.issuer,
          clientId: 'gateway',
          clientSecret: 'gateway-secret',
          invalidTokenThrottle: { maxRefusals: 3, windowSeconds: 60 },
        },
      },
      apis: [
        {
          provider: 'Ente',
          name: 'Echo',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
        },
      ],
    };
    const throttleStore = new MemoryTransactionStore();
    const gateway = createGateway({ config, trustProxy: 'loopback', store: throttleStore });
    const server = createServer(gateway.handler);
    const base = await listen(server);
    const call = (n: number, client: string): Promise<number> =>
      fetch(`${base}/gateway/Ente/Echo/v1/x`, {
        headers: { authorization: `Bearer not-a-token-${client}-${n}`, 'x-forwarded-for': client },
      }).then((r) => r.status);
    try {
      const first: number[] = [];
      for (let i = 0; i < 5; i++) first.push(await call(i, '203.0.113.1'));
      expect(first.slice(0, 3)).to.deep.equal([401, 401, 401]);
      expect(first.slice(3)).to.deep.equal([429, 429]);
      // Retry-After tells when this address's window ends (60 s here), not a fixed default.
      const throttled = await fetch(`${base}/gateway/Ente/Echo/v1/x`, {
        headers: { authorization: 'Bearer not-a-token-again', 'x-forwarded-for': '203.0.113.1' },
      });
      expect(throttled.status).to.equal(429);
      expect(Number(throttled.headers.get('retry-after'))).to.be.within(50, 60);
      // Another client behind the same proxy is not throttled with the first.
      expect(await call(0, '203.0.113.2')).to.equal(401);
      // The records show the address the throttle used.
      const addresses = new Set((await throttleStore.query({})).items.map((r) => r.clientAddress));
      expect([...addresses].sort()).to.deep.equal(['203.0.113.1', '203.0.113.2']);
    } finally {
      await close(server);
      await gateway.close();
      await Promise.all([as.stop(), echo.stop()]);
    }
  });
});
