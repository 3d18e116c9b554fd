import { expect } from 'chai';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { express4 } from '../support/express4.js';
import { serialized, sleep, startTestApp, type TestApp } from './helpers.js';

const INVALID = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token invalid"';
const EXPIRED = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token expired"';

describe('introspect with the demo authorization server (opaque tokens)', function () {
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let app: TestApp;
  let token: string;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      audience: 'petstore-api',
    });
    app = await startTestApp({ policy });
    token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
  });
  after(async () => {
    await app.close();
    await as.stop();
    policy.close();
  });

  it('accepts a valid token in the header and exposes the normalized info and the claims', async () => {
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(200);
    expect(res.body.info).to.deep.include({
      issuer: as.issuer,
      subject: 'client1',
      clientId: 'client1',
      audience: ['petstore-api'],
      scopes: ['read', 'write'],
      roles: [],
    });
    expect(res.body.info.expiresAt).to.be.a('number');
    expect(res.body.info.issuedAt).to.be.a('number');
    expect(res.body.introspection).to.include({
      active: true,
      azp: 'client1',
      sub: 'client1',
      client_id: 'client1',
      aud: 'petstore-api',
      scope: 'read write',
      iss: as.issuer,
    });
    expect(res.body.policy).to.equal('PetStore IdP');
  });

  it('accepts it in a form body and in the query', async () => {
    const form = await request(app.url).post('/pets').type('form').send({ access_token: token, name: 'rex' });
    expect(form.status).to.equal(200);
    expect(form.body.method).to.equal('body');
    expect(form.body.info.clientId).to.equal('client1');
    const query = await request(app.url).get(`/pets?access_token=${encodeURIComponent(token)}`);
    expect(query.status).to.equal(200);
    expect(query.body.method).to.equal('query');
  });

  it('answers 401 Token invalid for garbage, without calling anything a success', async () => {
    const res = await request(app.url).get('/pets').set('Authorization', 'Bearer not-a-real-token');
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.equal(INVALID);
    expect(res.body).to.deep.equal({
      type: 'https://httpstatuses.com/401',
      title: 'Unauthorized',
      status: 401,
      detail: 'Token non valido',
      gateway_status: 'protocol:GATEWAY-1367',
    });
  });

  it('answers 401 for a revoked token', async () => {
    const revoked = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    await as.revoke(revoked, 'client2', 'client2-secret');
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${revoked}`);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.equal(INVALID);
  });

  it('answers 401 for a token meant for another audience', async () => {
    const other = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      audience: 'another-api',
    });
    const otherApp = await startTestApp({ policy: other });
    try {
      const res = await request(otherApp.url).get('/pets').set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.equal(INVALID);
    } finally {
      await otherApp.close();
      other.close();
    }
  });

  it('introspects a token once: a second request is served from the cache', async () => {
    const fresh = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    const before = as.stats.introspections;
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${fresh}`)).status).to.equal(200);
    expect(as.stats.introspections - before).to.equal(1);
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${fresh}`)).status).to.equal(200);
    expect(as.stats.introspections - before).to.equal(1);
  });

  it('50 concurrent requests with a fresh token cause exactly one introspection', async () => {
    const fresh = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    const before = as.stats.introspections;
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => request(app.server).get('/pets').set('Authorization', `Bearer ${fresh}`)),
    );
    expect(responses.map((r) => r.status)).to.deep.equal(Array(50).fill(200));
    expect(as.stats.introspections - before).to.equal(1);
  });

  it('clearCache() makes the next request introspect again', async () => {
    const before = as.stats.introspections;
    policy.clearCache();
    expect(policy.cacheSize).to.equal(0);
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(200);
    expect(as.stats.introspections - before).to.equal(1);
  });

  it('answers 503 with Retry-After while the authorization server is down, and 200 once it is back', async () => {
    const fresh = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    await as.stop();
    try {
      const down = await request(app.url).get('/pets').set('Authorization', `Bearer ${fresh}`);
      expect(down.status).to.equal(503);
      expect(down.headers['retry-after']).to.equal('5');
      expect(down.headers['www-authenticate']).to.equal(undefined);
      expect(down.body.gateway_status).to.equal('protocol:GATEWAY-1369');
      expect(down.body.title).to.equal('Service Unavailable');
      const context = app.contexts.at(-1)!;
      expect(context.error?.code).to.equal('ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
      const diagnostic = context.diagnostics.find((d) => d.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
      expect(diagnostic?.message).to.match(/^introspection: unreachable/);
      // The failure was not cached.
    } finally {
      await as.start();
    }
    const up = await request(app.url).get('/pets').set('Authorization', `Bearer ${fresh}`);
    expect(up.status).to.equal(200);
  });

  it('never puts a token value in a response body, a diagnostic or the recorded context', async () => {
    const seen = [token];
    const probe = await as.issueToken('client3', 'client3-secret', { scope: 'read' });
    seen.push(probe, 'garbage-token-value-123');
    const responses = [
      await request(app.url).get('/pets').set('Authorization', `Bearer ${probe}`),
      await request(app.url).get('/pets').set('Authorization', 'Bearer garbage-token-value-123'),
      await request(app.url).get(`/pets?access_token=${probe}`).set('Authorization', `Bearer ${probe}`),
    ];
    expect(responses.map((r) => r.status)).to.deep.equal([200, 401, 400]);
    const everything = serialized(responses.map((r) => [r.text, r.headers])) + serialized(app.contexts);
    for (const value of seen) expect(everything).not.to.contain(value);
    expect(app.contexts.length).to.be.greaterThan(5);
  });

  it('works mounted in an Express 4 app', async () => {
    const app4 = await startTestApp({ express: express4, policy });
    try {
      const ok = await request(app4.url).get('/pets').set('Authorization', `Bearer ${token}`);
      expect(ok.status).to.equal(200);
      expect(ok.body.info.clientId).to.equal('client1');
      const form = await request(app4.url).post('/pets').type('form').send({ access_token: token });
      expect(form.status).to.equal(200);
      const bad = await request(app4.url).get('/pets').set('Authorization', 'Bearer nope');
      expect(bad.status).to.equal(401);
      expect(bad.headers['www-authenticate']).to.equal(INVALID);
      const none = await request(app4.url).get('/pets');
      expect(none.status).to.equal(400);
    } finally {
      await app4.close();
    }
  });
});

describe('introspect: expired tokens', function () {
  this.timeout(20_000);
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let app: TestApp;

  before(async () => {
    as = await startDemoAuthServer({ port: 0, accessTokenTtl: 2 });
    policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      clockSkew: 0,
    });
    app = await startTestApp({ policy });
  });
  after(async () => {
    await app.close();
    await as.stop();
    policy.close();
  });

  async function untilExpired(exp: number) {
    while (Date.now() / 1000 < exp + 0.2) await sleep(100);
  }

  it('answers 401 Token expired for a token that was valid and has expired', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    const ok = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(ok.status).to.equal(200);
    await untilExpired(ok.body.info.expiresAt);
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.equal(EXPIRED);
    expect(res.body.detail).to.equal('Token non valido');
    expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1367');
  });

  it('answers 401 for an expired token the gateway never saw (the server only says inactive)', async () => {
    const token = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    await untilExpired(Math.floor(Date.now() / 1000) + 2);
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.match(/error="invalid_token"/);
  });

  it('answers 401 Token expired for an expired JWT access token', async () => {
    const jwtPolicy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      introspection: false,
      jwtValidation: true,
      audience: 'petstore-api',
      clockSkew: 0,
    });
    const jwtApp = await startTestApp({ policy: jwtPolicy });
    try {
      const token = await as.issueToken('client1', 'client1-secret', { scope: 'read', format: 'jwt' });
      const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).exp as number;
      await untilExpired(exp);
      const res = await request(jwtApp.url).get('/pets').set('Authorization', `Bearer ${token}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.equal(EXPIRED);
    } finally {
      await jwtApp.close();
      jwtPolicy.close();
    }
  });
});
