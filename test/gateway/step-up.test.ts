/**
 * Step-up authentication (RFC 9470) through createGateway, over real HTTP: the demo authorization
 * server (oidc-provider) issues tokens whose `acr` and `auth_time` say which user authentication is
 * behind them (opaque tokens: in the introspection answer; JWT access tokens: in the JWT), a real
 * backend answers what gets through. An API requiring acr values, one requiring a recent
 * authentication (JWT validation, protected resource metadata), an operation's stricter rule,
 * DPoP's challenge, the record's outcome and the console's filter on it.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import { dpopKey, proof, type DpopKey } from '../token/binding/support.js';
import { close, echoBackend, listen } from './helpers.js';

const SILVER = 'urn:mace:incommon:iap:silver';
const GOLD = 'urn:mace:incommon:iap:gold';
const BRONZE = 'urn:mace:incommon:iap:bronze';
const PUBLIC = 'https://api.example.org';
const ADMIN = { authorization: `Basic ${Buffer.from('admin:step-up-test').toString('base64')}`, 'x-gateway-console': '1' };

describe('createGateway: step-up authentication (RFC 9470)', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let gateway: Gateway;
  let store: MemoryTransactionStore;
  let api: Server;
  let admin: Server;
  let base: string;
  let adminUrl: string;
  let key: DpopKey;

  before(async () => {
    const minutesAgo = (minutes: number) => (now: number) => now - minutes * 60;
    [as, echo, key] = await Promise.all([
      startDemoAuthServer({
        port: 0,
        clients: [
          { clientId: 'plain', clientSecret: 'plain-secret' },
          { clientId: 'bronze', clientSecret: 'bronze-secret', authentication: { acr: BRONZE, authTime: minutesAgo(1) } },
          { clientId: 'silver', clientSecret: 'silver-secret', authentication: { acr: SILVER, authTime: minutesAgo(1) } },
          { clientId: 'gold-stale', clientSecret: 'gold-stale-secret', authentication: { acr: GOLD, authTime: minutesAgo(60) } },
          { clientId: 'gold-fresh', clientSecret: 'gold-fresh-secret', authentication: { acr: GOLD, authTime: minutesAgo(1) } },
          { clientId: 'gold-no-time', clientSecret: 'gold-no-time-secret', authentication: { acr: GOLD } },
          { clientId: 'gateway', clientSecret: 'gateway-secret' },
        ],
      }),
      echoBackend(),
      dpopKey(),
    ]);
    const backend = { url: echo.url };
    const config: GatewayConfig = {
      publicBaseUrl: PUBLIC,
      tokenPolicies: {
        DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' },
        DemoJwt: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', audience: as.audience },
        DemoDPoP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', dpop: 'allowed' },
      },
      apis: [
        {
          provider: 'Ente',
          name: 'Payments',
          version: 1,
          backend,
          tokenManagement: { enabled: true, policy: 'DemoIdP' },
          requiredAcrValues: [SILVER, GOLD],
          operations: [
            { name: 'listPayments', method: 'GET', path: '/payments' },
            { name: 'transfer', method: 'POST', path: '/transfer', requiredAcrValues: [GOLD], maxAuthenticationAge: 600 },
          ],
        },
        {
          provider: 'Ente',
          name: 'Profile',
          version: 1,
          backend,
          tokenManagement: { enabled: true, policy: 'DemoJwt', jwtValidation: true, introspection: false },
          protectedResourceMetadata: true,
          maxAuthenticationAge: 900,
        },
        {
          provider: 'Ente',
          name: 'Bound',
          version: 1,
          backend,
          tokenManagement: { enabled: true, policy: 'DemoDPoP' },
          requiredAcrValues: [SILVER],
        },
      ],
    };
    store = new MemoryTransactionStore();
    gateway = createGateway({ config, store, messages: 'en', admin: { basicAuth: { username: 'admin', password: 'step-up-test' } } });
    await gateway.ready();
    api = createServer(gateway.handler);
    admin = createServer(express().use(gateway.adminRouter));
    [base, adminUrl] = await Promise.all([listen(api), listen(admin)]);
  });

  after(async () => {
    await Promise.all([close(api), close(admin)]);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop()]);
  });

  const token = (client: string, format: 'opaque' | 'jwt' = 'opaque') => as.issueToken(client, `${client}-secret`, { format });
  const call = async (path: string, bearer: string, method = 'GET') =>
    fetch(`${base}/gateway/Ente${path}`, { method, headers: { authorization: `Bearer ${bearer}` } });

  it('refuses a token without acr with 401 insufficient_user_authentication naming the acr values; the backend is not called', async () => {
    const seen = echo.seen.length;
    const res = await call('/Payments/v1/payments', await token('plain'));
    expect(res.status).to.equal(401);
    expect(res.headers.get('content-type')).to.equal('application/problem+json');
    expect(res.headers.get('www-authenticate')).to.equal(
      `Bearer realm="DemoIdP", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${SILVER} ${GOLD}"`,
    );
    expect(await res.json()).to.deep.equal({
      type: 'https://httpstatuses.com/401',
      title: 'Unauthorized',
      status: 401,
      detail: "The user's authentication is not of the level the service requires, or not recent enough",
      gateway_status: 'protocol:GATEWAY-1374',
    });
    expect(echo.seen.length, 'requests relayed').to.equal(seen);

    // An acr outside the list is refused alike; the diagnostic says which it was.
    const bronze = await call('/Payments/v1/payments', await token('bronze'));
    expect(bronze.status).to.equal(401);
    const record = await store.get(bronze.headers.get('gateway-transaction-id')!);
    expect(record?.outcome.code).to.equal('INSUFFICIENT_USER_AUTHENTICATION');
    expect(record?.status).to.equal(401);
    expect(record?.diagnostics.map((d) => d.message).join('\n')).to.include(`acr "${BRONZE}" is not one of ${SILVER} ${GOLD}`);
  });

  it('relays a token whose acr is in the list to the backend, fresh and from the token cache', async () => {
    const silver = await token('silver');
    const seen = echo.seen.length;
    for (let i = 0; i < 2; i++) {
      const res = await call('/Payments/v1/payments', silver);
      expect(res.status, await res.text()).to.equal(201);
    }
    expect(echo.seen.slice(seen).map((s) => s.url)).to.deep.equal(['/payments', '/payments']);
  });

  it("an operation's rule: its acr list replaces the API's and its max age applies (max_age in the challenge)", async () => {
    // silver passes the API's rule, not the operation's.
    const silver = await call('/Payments/v1/transfer', await token('silver'), 'POST');
    expect(silver.status).to.equal(401);
    expect(silver.headers.get('www-authenticate')).to.equal(
      `Bearer realm="DemoIdP", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${GOLD}", max_age="600"`,
    );
    // gold, authenticated an hour ago: too old.
    const stale = await call('/Payments/v1/transfer', await token('gold-stale'), 'POST');
    expect(stale.status).to.equal(401);
    expect(stale.headers.get('www-authenticate')).to.equal(
      `Bearer realm="DemoIdP", error="insufficient_user_authentication", error_description="More recent authentication is required", acr_values="${GOLD}", max_age="600"`,
    );
    const record = await store.get(stale.headers.get('gateway-transaction-id')!);
    expect(record?.operation).to.equal('transfer');
    expect(record?.diagnostics.map((d) => d.message).join('\n')).to.match(/authenticated 36\d\d s ago, more than the 600 s allowed/);
    // gold without auth_time: a max age needs one.
    const noTime = await call('/Payments/v1/transfer', await token('gold-no-time'), 'POST');
    expect(noTime.status).to.equal(401);
    expect(noTime.headers.get('www-authenticate')).to.include('error_description="More recent authentication is required"');
    // gold, a minute ago: through.
    const seen = echo.seen.length;
    const fresh = await call('/Payments/v1/transfer', await token('gold-fresh'), 'POST');
    expect(fresh.status, await fresh.text()).to.equal(201);
    expect(echo.seen.slice(seen).map((s) => `${s.method} ${s.url}`)).to.deep.equal(['POST /transfer']);
    // The API's other operation keeps the API's rule: gold passes it without a max age.
    expect((await call('/Payments/v1/payments', await token('gold-stale'))).status).to.equal(201);
  });

  it('reads auth_time from a validated JWT: an old authentication gets max_age, with the resource metadata of the URL', async () => {
    const stale = await call('/Profile/v1/me', await token('gold-stale', 'jwt'));
    expect(stale.status).to.equal(401);
    expect(stale.headers.get('www-authenticate')).to.equal(
      'Bearer realm="DemoJwt", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="900", ' +
        `resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource/gateway/Ente/Profile/v1/me"`,
    );
    const none = await call('/Profile/v1/me', await token('plain', 'jwt'));
    expect(none.status).to.equal(401);
    expect((await call('/Profile/v1/me', await token('silver', 'jwt'))).status).to.equal(201);
  });

  it('under a token policy with DPoP on, challenges as its other 401s do: in the DPoP challenge for a DPoP request', async () => {
    const bound = await as.issueToken('bronze', 'bronze-secret', { dpop: key });
    const url = `${PUBLIC}/gateway/Ente/Bound/v1/x`;
    const res = await fetch(`${base}/gateway/Ente/Bound/v1/x`, {
      headers: { authorization: `DPoP ${bound}`, dpop: await proof(key, { method: 'GET', url, token: bound }) },
    });
    expect(res.status).to.equal(401);
    expect(res.headers.get('www-authenticate')).to.equal(
      `DPoP realm="DemoDPoP", algs="ES256 PS256 EdDSA", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${SILVER}", ` +
        'Bearer realm="DemoDPoP"',
    );
    // A Bearer request (the policy allows them): the error in the Bearer challenge, DPoP offered beside it.
    const bearer = await call('/Bound/v1/x', await token('plain'));
    expect(bearer.status).to.equal(401);
    expect(bearer.headers.get('www-authenticate')).to.equal(
      `Bearer realm="DemoDPoP", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${SILVER}", ` +
        'DPoP realm="DemoDPoP", algs="ES256 PS256 EdDSA"',
    );
    const silver = await as.issueToken('silver', 'silver-secret', { dpop: key });
    const ok = await fetch(`${base}/gateway/Ente/Bound/v1/x`, {
      headers: { authorization: `DPoP ${silver}`, dpop: await proof(key, { method: 'GET', url, token: silver }) },
    });
    expect(ok.status, await ok.text()).to.equal(201);
  });

  it('the console filters the records on the outcome, alone and in the token group', async () => {
    const refused = await call('/Payments/v1/payments', await token('plain'));
    const id = refused.headers.get('gateway-transaction-id')!;
    await call('/Payments/v1/payments', await token('silver'));
    const list = async (query: string): Promise<Array<{ id: string; outcome: { code: string } }>> => {
      const res = await fetch(`${adminUrl}/gateway/console/api/transactions?${query}&limit=500`, { headers: ADMIN });
      expect(res.status).to.equal(200);
      return ((await res.json()) as { items: Array<{ id: string; outcome: { code: string } }> }).items;
    };
    const only = await list('outcome=INSUFFICIENT_USER_AUTHENTICATION');
    expect(only.map((r) => r.id)).to.include(id);
    expect(new Set(only.map((r) => r.outcome.code))).to.deep.equal(new Set(['INSUFFICIENT_USER_AUTHENTICATION']));
    expect((await list('outcomeGroup=token')).map((r) => r.id)).to.include(id);
    expect((await list('outcomeGroup=success')).map((r) => r.id)).to.not.include(id);
  });
});
