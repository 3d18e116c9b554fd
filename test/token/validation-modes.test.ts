import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { expect } from 'chai';
import { exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { startTestApp, type TestApp } from './helpers.js';

const INVALID = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token invalid"';

describe('token policies: JWT validation, UserInfo, client authentication, explicit metadata', function () {
  let as: DemoAuthServer;
  let privateKey: CryptoKey;
  const open: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  before(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey as CryptoKey;
    as = await startDemoAuthServer({
      port: 0,
      clients: [
        { clientId: 'client1', clientSecret: 'client1-secret' },
        {
          clientId: 'client2',
          clientSecret: 'client2-secret',
          profile: { name: 'Maria Rossi', given_name: 'Maria', family_name: 'Rossi', email: 'maria@example.test' },
        },
        { clientId: 'gateway', clientSecret: 'gateway-secret' },
        { clientId: 'gateway-post', clientSecret: 'gateway-post-secret', tokenEndpointAuthMethod: 'client_secret_post' },
        {
          clientId: 'gateway-jwt',
          clientSecret: 'unused-secret-for-pkjwt',
          tokenEndpointAuthMethod: 'private_key_jwt',
          jwks: { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] },
        },
      ],
      introspectionClientId: ['gateway', 'gateway-post', 'gateway-jwt'],
    });
  });
  after(async () => {
    for (const { app, policy } of open) {
      await app.close();
      policy.close();
    }
    await as.stop();
  });

  async function appWith(options: Partial<TokenPolicyOptions>): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    open.push({ app, policy });
    return app;
  }

  it('answers 401, not 503, when UserInfo refuses the token for its scope (403 insufficient_scope)', async () => {
    const strict = await startDemoAuthServer({ port: 0, userInfoScope: 'profile' });
    try {
      const policy = createTokenPolicy({
        name: 'PetStore IdP',
        issuer: strict.issuer,
        clientId: 'gateway',
        clientSecret: 'gateway-secret',
        userInfo: true,
      });
      const app = await startTestApp({ policy });
      open.push({ app, policy });
      const withoutScope = await request(app.url)
        .get('/pets')
        .set('Authorization', `Bearer ${await strict.issueToken('client1', 'client1-secret', { scope: 'read' })}`);
      expect(withoutScope.status).to.equal(401);
      expect(withoutScope.headers['www-authenticate']).to.equal(INVALID);
      expect(withoutScope.body.gateway_status).to.equal('protocol:GATEWAY-1367');
    } finally {
      await strict.stop();
    }
  });

  it('validates a JWT access token with the issuer JWKS (introspection off), checking the audience', async () => {
    const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api' });
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write', format: 'jwt' });
    const before = as.stats.introspections;
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(200);
    expect(res.body.jwt).to.include({ sub: 'client1', azp: 'client1', aud: 'petstore-api', iss: as.issuer, scope: 'read write' });
    expect(res.body.info).to.deep.include({
      clientId: 'client1',
      subject: 'client1',
      audience: ['petstore-api'],
      scopes: ['read', 'write'],
    });
    expect(res.body.introspection).to.equal(undefined);
    expect(as.stats.introspections).to.equal(before);
  });

  it("accepts the demo server's JWT access tokens (typ at+jwt) with jwtTypes, and with anyAudience", async () => {
    const token = await as.issueToken('client1', 'client1-secret', { format: 'jwt' });
    const typed = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api', jwtTypes: ['application/at+jwt'] });
    expect((await request(typed.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(200);
    const any = await appWith({ introspection: false, jwtValidation: true, anyAudience: true, jwtTypes: ['at+jwt'] });
    expect((await request(any.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(200);
    const other = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api', jwtTypes: ['JWT'] });
    expect((await request(other.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(401);
  });

  it('refuses a JWT with a bad signature, another audience, or an opaque token, with 401', async () => {
    const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api' });
    const token = await as.issueToken('client1', 'client1-secret', { format: 'jwt' });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const altered = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'admin' })).toString('base64url')}.${signature}`;
    const tampered = await request(app.url).get('/pets').set('Authorization', `Bearer ${altered}`);
    expect(tampered.status).to.equal(401);
    expect(tampered.headers['www-authenticate']).to.equal(INVALID);
    const opaque = await request(app.url)
      .get('/pets')
      .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`);
    expect(opaque.status).to.equal(401);
    const otherAudience = await appWith({ introspection: false, jwtValidation: true, audience: 'another-api' });
    expect((await request(otherAudience.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(401);
    const es256Only = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api', jwtAlgorithms: ['ES256'] });
    expect((await request(es256Only.url).get('/pets').set('Authorization', `Bearer ${token}`)).status).to.equal(401);
  });

  it('calls UserInfo together with introspection and fills info.userInfo', async () => {
    const app = await appWith({ introspection: true, userInfo: true });
    const token = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    const before = as.stats.userinfo;
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(200);
    expect(as.stats.userinfo - before).to.equal(1);
    expect(res.body.userInfo).to.include({ sub: 'client2', email: 'maria@example.test' });
    expect(res.body.info.userInfo).to.deep.equal({
      fullName: 'Maria Rossi',
      firstName: 'Maria',
      middleName: 'Client',
      familyName: 'Rossi',
      eMail: 'maria@example.test',
    });
    expect(res.body.info.username).to.equal('client2');
    expect(res.body.introspection.active).to.equal(true);
  });

  it('works with UserInfo alone, and answers 401 when UserInfo refuses the token', async () => {
    const app = await appWith({ introspection: false, userInfo: true });
    const token = await as.issueToken('client1', 'client1-secret');
    const ok = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(ok.status).to.equal(200);
    expect(ok.body.info.subject).to.equal('client1');
    expect(ok.body.info.userInfo.eMail).to.equal('client1@example.test');
    const bad = await request(app.url).get('/pets').set('Authorization', 'Bearer no-such-token');
    expect(bad.status).to.equal(401);
    expect(bad.headers['www-authenticate']).to.equal(INVALID);
  });

  it('authenticates to introspection with client_secret_post', async () => {
    const app = await appWith({ clientId: 'gateway-post', clientSecret: 'gateway-post-secret', clientAuthMethod: 'client_secret_post' });
    const res = await request(app.url)
      .get('/pets')
      .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`);
    expect(res.status).to.equal(200);
    expect(res.body.info.clientId).to.equal('client1');
  });

  it('authenticates to introspection with private_key_jwt', async () => {
    const app = await appWith({
      clientId: 'gateway-jwt',
      clientSecret: undefined,
      clientAuthMethod: 'private_key_jwt',
      privateKey: { key: privateKey, kid: 'k1' },
    });
    const res = await request(app.url)
      .get('/pets')
      .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`);
    expect(res.status).to.equal(200);
    expect(res.body.info.clientId).to.equal('client1');
  });

  it('answers 503 (not 401) when the gateway client is refused by the authorization server', async () => {
    const app = await appWith({ clientSecret: 'wrong-secret' });
    const res = await request(app.url)
      .get('/pets')
      .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`);
    expect(res.status).to.equal(503);
    expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1369');
  });

  it('accepts explicit endpoint metadata instead of discovery', async () => {
    const app = await appWith({ issuer: undefined, metadata: { issuer: as.issuer, introspection_endpoint: as.endpoints.introspection } });
    const discoveries = as.stats.discoveries;
    const res = await request(app.url)
      .get('/pets')
      .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`);
    expect(res.status).to.equal(200);
    expect(as.stats.discoveries).to.equal(discoveries);
  });

  it('discovers once per policy, shared by every route and request', async () => {
    const discoveries = as.stats.discoveries;
    const app = await appWith({});
    const token = await as.issueToken('client1', 'client1-secret');
    await Promise.all([1, 2, 3].map(() => request(app.url).get('/pets').set('Authorization', `Bearer ${token}`)));
    const other = await as.issueToken('client2', 'client2-secret');
    expect((await request(app.url).get('/pets').set('Authorization', `Bearer ${other}`)).status).to.equal(200);
    expect(as.stats.discoveries - discoveries).to.equal(1);
  });
});

describe('token policies: an authorization server that misbehaves', () => {
  let server: Server;
  let url: string;
  let mode: 'hang' | 'html' | 'bad-json' | 'ok' = 'hang';
  const sockets = new Set<Socket>();
  const apps: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  before(async () => {
    server = createServer((req, res) => {
      if (mode === 'hang') return; // never answers
      if (mode === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(mode === 'bad-json' ? '{"active":"yes"}' : '{"active":true,"sub":"x"}');
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const { app, policy } of apps) {
      await app.close();
      policy.close();
    }
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  async function appWith(options: Partial<TokenPolicyOptions>): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      metadata: { issuer: url, introspection_endpoint: `${url}/introspect` },
      clientId: 'gateway',
      clientSecret: 's',
      timeoutMs: 300,
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    apps.push({ app, policy });
    return app;
  }

  it('answers 503 with Retry-After when introspection times out, the cause only in diagnostics', async () => {
    mode = 'hang';
    const app = await appWith({});
    const res = await request(app.url).get('/pets').set('Authorization', 'Bearer abc');
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.equal('5');
    expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1369');
    expect(res.text).not.to.contain('timed out');
    expect(app.contexts.at(-1)!.diagnostics.map((d) => d.message)).to.include('introspection: timed out');
  });

  it('answers 503 when discovery times out, and retries discovery at the next request', async () => {
    mode = 'hang';
    const app = await appWith({ metadata: undefined, issuer: url });
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer abc')).status).to.equal(503);
    expect(app.contexts.at(-1)!.diagnostics.map((d) => d.message)).to.include('discovery: timed out');
    mode = 'html';
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer abc')).status).to.equal(503);
    expect(app.contexts.at(-1)!.diagnostics.at(-1)!.message).to.match(/^discovery: non-conforming/);
  });

  it('answers 503 for a non-conforming introspection response (HTML, or active not a boolean)', async () => {
    const app = await appWith({});
    mode = 'html';
    const html = await request(app.url).get('/pets').set('Authorization', 'Bearer abc');
    expect(html.status).to.equal(503);
    expect(app.contexts.at(-1)!.diagnostics.at(-1)!.message).to.match(/^introspection: non-conforming/);
    mode = 'bad-json';
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer abc')).status).to.equal(503);
    mode = 'ok';
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer abc')).status).to.equal(200);
  });
});

describe('createTokenPolicy options', () => {
  const base = { name: 'p', issuer: 'https://idp.example.com', clientId: 'gw', clientSecret: 's' };
  it('rejects bad options at factory time, naming them', () => {
    expect(() => createTokenPolicy({ ...base, name: '' })).to.throw(TypeError, /options\.name/);
    expect(() => createTokenPolicy({ ...base, issuer: undefined })).to.throw(TypeError, /issuer/);
    expect(() => createTokenPolicy({ ...base, clientSecret: undefined })).to.throw(TypeError, /clientSecret/);
    expect(() => createTokenPolicy({ ...base, clientAuthMethod: 'private_key_jwt' })).to.throw(TypeError, /privateKey/);
    expect(() => createTokenPolicy({ ...base, introspection: false })).to.throw(TypeError, /at least one/);
    expect(() => createTokenPolicy({ ...base, jwtAlgorithms: ['HS256'] })).to.throw(TypeError, /jwtAlgorithms/);
    expect(() => createTokenPolicy({ ...base, timeoutMs: 0 })).to.throw(TypeError, /timeoutMs/);
    expect(() => createTokenPolicy({ ...base, cache: { maxEntries: -1 } })).to.throw(TypeError, /maxEntries/);
  });
  it('refuses http:// issuers except on loopback or when explicitly allowed', () => {
    expect(() => createTokenPolicy({ ...base, issuer: 'http://idp.example.com' })).to.throw(TypeError, /allowInsecureRequests/);
    expect(() => createTokenPolicy({ ...base, issuer: 'http://idp.example.com', allowInsecureRequests: true })).not.to.throw();
    expect(() => createTokenPolicy({ ...base, issuer: 'http://127.0.0.1:9000' })).not.to.throw();
    expect(() => createTokenPolicy({ ...base, issuer: 'http://localhost:9000' })).not.to.throw();
  });
});
