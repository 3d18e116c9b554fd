/**
 * JWT validation together with introspection (issue 2: "alone or together"). The demo authorization
 * server introspects its own JWT access tokens as Keycloak does, so both switches run for real:
 * the signature is checked locally first (a forged token costs the server nothing), then
 * introspection says whether the token is still active (what a signature cannot tell: revocation).
 */
import { expect } from 'chai';
import { generateKeyPair, SignJWT } from 'jose';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { sleep, startTestApp, type TestApp } from './helpers.js';

const INVALID = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token invalid"';
const EXPIRED = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token expired"';

/** POSTs to the demo server's introspection endpoint as `clientId` (client_secret_basic). */
async function introspectAt(
  as: DemoAuthServer,
  token: string,
  clientId: string,
  secret: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(as.endpoints.introspection, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: new URLSearchParams({ token }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const payloadOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

describe('token policies: JWT validation together with introspection', function () {
  let as: DemoAuthServer;
  const open: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
  });
  after(async () => {
    for (const { app, policy } of open) {
      await app.close();
      policy.close();
    }
    await as.stop();
  });

  async function appWith(options: Partial<TokenPolicyOptions> = {}, server: DemoAuthServer = as): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: server.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      jwtValidation: true,
      introspection: true,
      audience: 'petstore-api',
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    open.push({ app, policy });
    return app;
  }

  describe('the demo authorization server introspects its own JWT access tokens', () => {
    it('answers active with the claims for an allowed, authenticated client; inactive otherwise', async () => {
      const token = await as.issueToken('client1', 'client1-secret', { scope: 'read', format: 'jwt' });
      const before = as.stats.introspections;
      const byGateway = await introspectAt(as, token, 'gateway', 'gateway-secret');
      expect(byGateway.status).to.equal(200);
      expect(byGateway.body).to.include({
        active: true,
        client_id: 'client1',
        sub: 'client1',
        azp: 'client1',
        aud: 'petstore-api',
        iss: as.issuer,
        scope: 'read',
        token_type: 'Bearer',
      });
      expect(byGateway.body['jti']).to.equal(payloadOf(token)['jti']);
      expect((await introspectAt(as, token, 'client1', 'client1-secret')).body).to.include({ active: true });
      // Another client may not look at client1's token; a wrong secret is still refused outright.
      expect((await introspectAt(as, token, 'client2', 'client2-secret')).body).to.deep.equal({ active: false });
      const badSecret = await introspectAt(as, token, 'gateway', 'wrong-secret');
      expect(badSecret.status).to.equal(401);
      expect(badSecret.body['error']).to.equal('invalid_client');
      expect(as.stats.introspections - before).to.equal(4);
    });

    it('answers inactive for a JWT signed by another key, and for a revoked one', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await new SignJWT({ client_id: 'client1', scope: 'read' })
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt' })
        .setIssuer(as.issuer)
        .setAudience('petstore-api')
        .setJti('forged')
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      expect((await introspectAt(as, forged, 'gateway', 'gateway-secret')).body).to.deep.equal({ active: false });
      const token = await as.issueToken('client2', 'client2-secret', { format: 'jwt' });
      // Revocation is the token owner's: client1 cannot revoke client2's token.
      await as.revoke(token, 'client1', 'client1-secret');
      expect((await introspectAt(as, token, 'gateway', 'gateway-secret')).body).to.include({ active: true });
      await as.revoke(token, 'client2', 'client2-secret');
      expect((await introspectAt(as, token, 'gateway', 'gateway-secret')).body).to.deep.equal({ active: false });
    });
  });

  it('accepts a JWT access token: 200, with both the JWT claims and the introspection response, one introspection', async () => {
    const app = await appWith();
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write', format: 'jwt' });
    const before = as.stats.introspections;
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(200);
    expect(as.stats.introspections - before).to.equal(1);
    expect(res.body.jwt).to.include({ sub: 'client1', client_id: 'client1', aud: 'petstore-api', iss: as.issuer, scope: 'read write' });
    expect(res.body.introspection).to.include({ active: true, client_id: 'client1', token_type: 'Bearer', aud: 'petstore-api' });
    expect(res.body.introspection.jti).to.equal(res.body.jwt.jti);
    expect(res.body.info).to.deep.include({
      clientId: 'client1',
      subject: 'client1',
      issuer: as.issuer,
      audience: ['petstore-api'],
      scopes: ['read', 'write'],
      jti: res.body.jwt.jti,
    });
  });

  it('refuses a JWT with a bad signature (401) without calling introspection', async () => {
    const app = await appWith();
    const token = await as.issueToken('client1', 'client1-secret', { format: 'jwt' });
    const [header, , signature] = token.split('.') as [string, string, string];
    const altered = `${header}.${Buffer.from(JSON.stringify({ ...payloadOf(token), sub: 'admin', scope: 'read write' })).toString('base64url')}.${signature}`;
    const before = as.stats.introspections;
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${altered}`);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.equal(INVALID);
    expect(as.stats.introspections).to.equal(before);
    expect(app.contexts.at(-1)!.diagnostics.map((d) => d.message)).to.include('jwt: ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  });

  it('refuses a revoked JWT (signature still valid) with 401, because introspection says inactive', async () => {
    const app = await appWith();
    const jwtOnly = await appWith({ introspection: false });
    const token = await as.issueToken('client1', 'client1-secret', { format: 'jwt' });
    await as.revoke(token, 'client1', 'client1-secret');
    // JWT validation alone cannot see the revocation...
    expect((await request(jwtOnly.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(200);
    // ...introspection can.
    const before = as.stats.introspections;
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.equal(INVALID);
    expect(as.stats.introspections - before).to.equal(1);
    expect(app.contexts.at(-1)!.diagnostics.map((d) => d.message)).to.include('introspection: active is false');
  });

  it('sees a revocation at the next request when the cache is off', async () => {
    const app = await appWith({ cache: false });
    const token = await as.issueToken('client2', 'client2-secret', { format: 'jwt' });
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(200);
    await as.revoke(token, 'client2', 'client2-secret');
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(401);
  });

  it('answers 401 Token expired for an expired JWT, without calling introspection', async () => {
    const short = await startDemoAuthServer({ port: 0, accessTokenTtl: 1 });
    try {
      const app = await appWith({ clockSkew: 0 }, short);
      const token = await short.issueToken('client1', 'client1-secret', { format: 'jwt' });
      const exp = payloadOf(token)['exp'] as number;
      while (Date.now() / 1000 < exp + 0.2) await sleep(100);
      const before = short.stats.introspections;
      const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.equal(EXPIRED);
      expect(short.stats.introspections).to.equal(before);
    } finally {
      await short.stop();
    }
  });

  it('answers 503 for a valid JWT when the authorization server is down (introspection required: fail closed)', async () => {
    const down = await startDemoAuthServer({ port: 0 });
    try {
      const app = await appWith({}, down);
      // A first request: the policy now has the metadata and the JWKS, so the JWT itself verifies locally.
      expect(
        (
          await request(app.url)
            .get('/pets')
            .set('Authorization', `Bearer ${await down.issueToken('client1', 'client1-secret', { format: 'jwt' })}`)
        ).status,
      ).to.equal(200);
      const token = await down.issueToken('client1', 'client1-secret', { format: 'jwt' });
      await down.stop();
      const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(503);
      expect(res.headers['retry-after']).to.equal('5');
      expect(res.headers['www-authenticate']).to.equal(undefined);
      expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1369');
      expect(app.contexts.at(-1)!.diagnostics.map((d) => d.message)).to.include('introspection: unreachable (ECONNREFUSED)');
    } finally {
      await down.stop();
    }
  });

  it('runs JWT validation, introspection and UserInfo together: 200 with all three', async () => {
    const app = await appWith({ userInfo: true });
    const token = await as.issueToken('client2', 'client2-secret', { scope: 'read', format: 'jwt' });
    const before = { introspections: as.stats.introspections, userinfo: as.stats.userinfo };
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(200);
    expect(as.stats.introspections - before.introspections).to.equal(1);
    expect(as.stats.userinfo - before.userinfo).to.equal(1);
    expect(res.body.jwt).to.include({ sub: 'client2', client_id: 'client2' });
    expect(res.body.introspection).to.include({ active: true, sub: 'client2' });
    expect(res.body.userInfo).to.include({ sub: 'client2', email: 'client2@example.test' });
    expect(res.body.info.userInfo).to.deep.include({ eMail: 'client2@example.test', fullName: 'Demo client2' });
  });
});
