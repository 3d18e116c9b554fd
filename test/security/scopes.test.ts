/**
 * Issue 14 item 13: scope and claim rules without XACML. A caller whose token lacks a required
 * scope (or holds none of a claim's allowed values) must not reach the backend, whether its token
 * result is fresh or cached, and must be told which scopes to ask for (RFC 6750 section 3.1).
 * Played over real HTTP: the demo authorization server (oidc-provider) issues the tokens, the
 * gateway is an Express app with requireToken + introspect + requireScopes (+ xacmlAuthorize), and
 * a real echo backend counts what gets through.
 */
import type { Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { requireScopes, type RequireScopesOptions } from '../../src/authorize/scopes.js';
import { xacmlAuthorize } from '../../src/authorize/xacml-authorize/index.js';
import { gatewayContext } from '../../src/context.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import { listen } from '../token/forward/helpers.js';

const DESCRIPTION = 'The request requires higher privileges than provided by the access token';
const PERMIT_ALL = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="all"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/><Rule RuleId="permit" Effect="Permit"/></Policy>`;

/** The problem+json body of a 403 insufficient_scope, in the default (Italian) message set. */
const INSUFFICIENT = {
  type: 'https://httpstatuses.com/403',
  title: 'Forbidden',
  status: 403,
  detail: 'Il token non ha gli scope o i claim richiesti dal servizio',
  gateway_status: 'protocol:GATEWAY-1368',
};

describe('security: scope and claim rules (issue 14 item 13)', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let backend: { url: string; close: () => Promise<void>; server: Server };
  let backendCalls = 0;
  let gateway: { url: string; close: () => Promise<void> } | undefined;
  let xacmlEvaluations = 0;

  before(async () => {
    as = await startDemoAuthServer({
      port: 0,
      clients: [
        { clientId: 'client1', clientSecret: 'client1-secret', scope: 'read write' },
        { clientId: 'client2', clientSecret: 'client2-secret', scope: 'read' },
        { clientId: 'gateway', clientSecret: 'gateway-secret' },
      ],
    });
    // The token cache is on (its default): the rules must hold for cached results too.
    policy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    const app = express();
    app.use((_req, res) => {
      backendCalls++;
      res.json({ ok: true });
    });
    backend = await listen(app);
  });
  after(async () => {
    policy.close();
    await backend.close();
    await as.stop();
  });
  beforeEach(() => {
    backendCalls = 0;
    xacmlEvaluations = 0;
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  /** The gateway: routing (the operation by method), the token chain, the rules, a permit-all XACML policy, the relay. */
  async function start(rules: RequireScopesOptions): Promise<string> {
    const app = express();
    app.use('/gateway/Ente/PetStore/v1', (req, _res, next) => {
      gatewayContext(req).api = {
        provider: 'Ente',
        name: 'PetStore',
        version: 1,
        operation: req.method === 'GET' ? 'getPet' : 'updatePet',
        resourcePath: req.path,
      };
      next();
    });
    app.use(
      '/gateway/Ente/PetStore/v1',
      requireToken({ policy }),
      introspect({ policy }),
      requireScopes(rules),
      xacmlAuthorize({ xacmlPolicy: PERMIT_ALL, onRequest: () => void xacmlEvaluations++ }),
      async (req, res) => {
        const answer = await fetch(`${backend.url}${req.url}`, { method: req.method });
        res.status(answer.status).json(await answer.json());
      },
    );
    app.use(problemJsonErrorHandler());
    gateway = await listen(app);
    return `${gateway.url}/gateway/Ente/PetStore/v1/pet/1`;
  }

  async function call(url: string, token: string, method = 'GET'): Promise<{ status: number; challenge: string | null; body: unknown }> {
    const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.json() };
  }

  it('a token without a required scope gets 403 insufficient_scope naming the scopes, fresh and cached, and the backend is not called', async () => {
    const url = await start({ requiredScopes: ['write'] });
    const token = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    const before = as.stats.introspections;
    for (let i = 0; i < 3; i++) {
      const res = await call(url, token);
      expect(res.status, `request ${i + 1}`).to.equal(403);
      expect(res.challenge).to.equal(
        `Bearer realm="demo-idp", error="insufficient_scope", scope="write", error_description="${DESCRIPTION}"`,
      );
      expect(res.body).to.deep.equal(INSUFFICIENT);
    }
    expect(as.stats.introspections - before, 'introspections (the later requests used the cached result)').to.equal(1);
    expect(backendCalls).to.equal(0);
    expect(xacmlEvaluations, 'checked before XACML').to.equal(0);
  });

  it('a token with every required scope passes, on every request', async () => {
    const url = await start({ requiredScopes: ['read', 'write'] });
    const full = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    expect((await call(url, full)).status).to.equal(200);
    expect((await call(url, full)).status).to.equal(200);
    const partial = await as.issueToken('client1', 'client1-secret', { scope: 'write' });
    const res = await call(url, partial);
    expect(res.status).to.equal(403);
    expect(res.challenge).to.equal(
      `Bearer realm="demo-idp", error="insufficient_scope", scope="read write", error_description="${DESCRIPTION}"`,
    );
    expect(backendCalls).to.equal(2);
    expect(xacmlEvaluations).to.equal(2);
  });

  it("an operation requires its scopes on top of the API's: reading passes, writing is refused with both scopes named", async () => {
    const url = await start({
      requiredScopes: ['read'],
      operations: [{ name: 'getPet' }, { name: 'updatePet', requiredScopes: ['write'] }],
    });
    const reader = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    expect((await call(url, reader)).status).to.equal(200);
    const res = await call(url, reader, 'PUT');
    expect(res.status).to.equal(403);
    expect(res.challenge).to.equal(
      `Bearer realm="demo-idp", error="insufficient_scope", scope="read write", error_description="${DESCRIPTION}"`,
    );
    expect(res.body).to.deep.equal(INSUFFICIENT);
    const writer = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    expect((await call(url, writer, 'PUT')).status).to.equal(200);
    expect(backendCalls).to.equal(2);
  });

  it('a claim rule refuses a client whose claim holds none of the allowed values (challenge without scope)', async () => {
    const url = await start({ requiredClaims: { azp: ['client1'], aud: ['petstore-api'] } });
    const other = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    for (let i = 0; i < 2; i++) {
      const res = await call(url, other);
      expect(res.status).to.equal(403);
      expect(res.challenge).to.equal(`Bearer realm="demo-idp", error="insufficient_scope", error_description="${DESCRIPTION}"`);
      expect(res.body).to.deep.equal(INSUFFICIENT);
    }
    const listed = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    expect((await call(url, listed)).status).to.equal(200);
    expect(backendCalls).to.equal(1);
  });

  it('a scope sent by the caller beside the token counts for nothing', async () => {
    const url = await start({ requiredScopes: ['write'] });
    const token = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    const res = await fetch(`${url}?scope=write`, { headers: { authorization: `Bearer ${token}`, scope: 'write', 'x-scope': 'write' } });
    expect(res.status).to.equal(403);
    expect(backendCalls).to.equal(0);
  });
});
