/**
 * Interoperability with RFC 7662 servers other than oidc-provider (issue 14, items 1-6 and 11):
 * each case over real HTTP, against oidc-provider configured to behave that way or against the
 * purpose-built peer where oidc-provider cannot.
 */
import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import request from 'supertest';
import { startDemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { PolicyApps, sleep, startTestApp, type TestApp } from './helpers.js';
import { json, nowSeconds, startPeer, tokenOf, type Peer } from './peer.js';

describe('interoperability with other RFC 7662 authorization servers', function () {
  this.timeout(60_000);
  let peer: Peer;
  const apps = new PolicyApps();

  beforeEach(async () => {
    peer = await startPeer();
  });
  afterEach(async () => {
    await apps.closeAll();
    await peer.stop();
  });

  const appWith = (options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> => apps.start(peer.issuer, options);

  const active = (extra: Record<string, unknown> = {}) => {
    const now = nowSeconds();
    return {
      active: true,
      iss: peer.issuer,
      sub: 'client1',
      client_id: 'client1',
      aud: 'petstore-api',
      scope: 'read write',
      iat: now,
      exp: now + 3600,
      ...extra,
    };
  };
  const call = (app: TestApp, token: string) => request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
  const diagnostics = (app: TestApp) => app.contexts.at(-1)!.diagnostics.map((d) => d.message);

  it('item 1: an aud string is one value, spaces and all (oidc-provider with the audience "petstore api")', async () => {
    const as = await startDemoAuthServer({ port: 0, audience: 'petstore api' });
    try {
      const policy = createTokenPolicy({
        name: 'PetStore IdP',
        issuer: as.issuer,
        clientId: 'gateway',
        clientSecret: 'gateway-secret',
        audience: 'petstore api',
      });
      const app = await startTestApp({ policy });
      apps.open.push({ app, policy });
      const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
      const res = await call(app, token);
      expect(res.status).to.equal(200);
      expect(res.body.introspection.aud).to.equal('petstore api');
      expect(res.body.info.audience).to.deep.equal(['petstore api']);
      // scope is still split.
      expect(res.body.info.scopes).to.deep.equal(['read', 'write']);
    } finally {
      await as.stop();
    }
  });

  for (const status of [404, 400, 403]) {
    it(`item 2: UserInfo answering ${status} refuses the token: 401 invalid_token, not an outage`, async () => {
      peer.introspection = (_req, res) => json(res, active());
      peer.userinfo = (_req, res) => {
        res.writeHead(status, { 'content-type': 'text/plain' }).end('no end-user behind this token');
      };
      const app = await appWith({ userInfo: true });
      const res = await call(app, `client-credentials-${status}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/error="invalid_token"/);
      expect(res.headers['retry-after']).to.equal(undefined);
      expect(diagnostics(app)).to.include(`userinfo: the server refused the token (HTTP ${status})`);
    });
  }

  for (const status of [408, 429, 502]) {
    it(`item 2: UserInfo answering ${status} is an outage: 503`, async () => {
      peer.introspection = (_req, res) => json(res, active());
      peer.userinfo = (_req, res) => {
        res.writeHead(status).end();
      };
      const app = await appWith({ userInfo: true });
      const res = await call(app, `busy-${status}`);
      expect(res.status).to.equal(503);
    });
  }

  it("item 3: the issuer of a token whose introspection omits iss is the policy's discovered issuer", async () => {
    const { iss: _omitted, ...claims } = active();
    peer.introspection = (_req, res) => json(res, claims);
    const app = await appWith();
    const res = await call(app, 'no-iss');
    expect(res.status).to.equal(200);
    expect(res.body.introspection.iss).to.equal(undefined);
    expect(res.body.info.issuer).to.equal(peer.issuer);
  });

  it("item 4: a 401 from the introspection endpoint is named: the server refused the gateway's client authentication (HTTP 401)", async () => {
    peer.introspection = (_req, res) => {
      res.writeHead(401, { 'content-type': 'text/html' }).end('<h1>Unauthorized</h1>');
    };
    const app = await appWith();
    const res = await call(app, 'any');
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.equal('5');
    expect(diagnostics(app)).to.include("introspection: the authorization server refused the gateway's client authentication (HTTP 401)");
  });

  it('item 4: against oidc-provider, a wrong gateway secret is named too (HTTP 401, invalid_client)', async () => {
    const as = await startDemoAuthServer({ port: 0 });
    try {
      const policy = createTokenPolicy({ name: 'PetStore IdP', issuer: as.issuer, clientId: 'gateway', clientSecret: 'wrong-secret' });
      const app = await startTestApp({ policy });
      apps.open.push({ app, policy });
      const token = await as.issueToken('client1', 'client1-secret');
      const res = await call(app, token);
      expect(res.status).to.equal(503);
      expect(diagnostics(app).join('\n')).to.include(
        "introspection: the authorization server refused the gateway's client authentication (HTTP 401, invalid_client)",
      );
    } finally {
      await as.stop();
    }
  });

  describe('item 5: client authentication', () => {
    /** A server that compares the Basic credentials without form-decoding them (as some do). */
    function literalBasic(req: IncomingMessage, body: string): boolean {
      const basic = `Basic ${Buffer.from('gateway:gateway-secret').toString('base64')}`;
      const form = new URLSearchParams(body);
      return req.headers.authorization === basic || (form.get('client_id') === 'gateway' && form.get('client_secret') === 'gateway-secret');
    }

    it('client_secret_basic form-encodes the secret (gateway-secret is sent as gateway%2Dsecret): a server that does not decode refuses it; client_secret_post works', async () => {
      peer.introspection = (req, res, body) =>
        literalBasic(req, body) ? json(res, active()) : json(res, { error: 'invalid_client' }, 401);
      const basic = await appWith();
      expect((await call(basic, 'a-token')).status).to.equal(503);
      expect(diagnostics(basic)).to.include(
        "introspection: the authorization server refused the gateway's client authentication (HTTP 401, invalid_client)",
      );
      const post = await appWith({ clientAuthMethod: 'client_secret_post' });
      expect((await call(post, 'a-token')).status).to.equal(200);
    });

    it('bearer: introspection authorized by a token the gateway obtains by client_credentials, with the scope asked for, one token for many calls', async () => {
      let issued = 0;
      const live = new Set<string>();
      const asked: string[] = [];
      peer.token = (req, res, body) => {
        const form = new URLSearchParams(body);
        asked.push(form.get('scope') ?? '');
        if (
          !literalBasic(req, body) &&
          req.headers.authorization !== `Basic ${Buffer.from('gateway:gateway%2Dsecret').toString('base64')}`
        ) {
          return json(res, { error: 'invalid_client' }, 401);
        }
        if (form.get('grant_type') !== 'client_credentials' || form.get('scope') !== 'introspection')
          return json(res, { error: 'invalid_scope' }, 400);
        const token = `gateway-bearer-${++issued}`;
        live.add(token);
        json(res, { access_token: token, token_type: 'Bearer', expires_in: 3600, scope: 'introspection' });
      };
      peer.introspection = (req, res, body) => {
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        if (bearer === undefined || !live.has(bearer)) return json(res, { error: 'invalid_token' }, 401);
        json(res, active({ sub: tokenOf(body) }));
      };
      const app = await appWith({ clientAuthMethod: 'bearer', bearer: { scope: 'introspection' } });
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call(app, `caller-${i}`)));
      expect(answers.map((a) => a.status)).to.deep.equal(new Array(20).fill(200));
      expect(issued).to.equal(1);
      expect(asked).to.deep.equal(['introspection']);
      // The server revokes the gateway's token: that call is a 503 naming the refusal, and the next one gets a new token.
      live.clear();
      expect((await call(app, 'caller-after-revocation')).status).to.equal(503);
      expect(diagnostics(app)).to.include(
        "introspection: the authorization server refused the gateway's client authentication (HTTP 401, invalid_token)",
      );
      expect((await call(app, 'caller-after-revocation')).status).to.equal(200);
      expect(issued).to.equal(2);
    });

    it('bearer: the token is not used past its expiry; a new one is asked for', async () => {
      let issued = 0;
      const seen: string[] = [];
      peer.token = (_req, res) => json(res, { access_token: `short-${++issued}`, token_type: 'Bearer', expires_in: 1 });
      peer.introspection = (req, res, body) => {
        seen.push(req.headers.authorization ?? '');
        json(res, active({ sub: tokenOf(body) }));
      };
      const app = await appWith({ clientAuthMethod: 'bearer' });
      expect((await call(app, 'first')).status).to.equal(200);
      await sleep(1000);
      expect((await call(app, 'second')).status).to.equal(200);
      expect(seen).to.deep.equal(['Bearer short-1', 'Bearer short-2']);
    });

    it('bearer: a token endpoint that refuses the gateway is a 503 naming it', async () => {
      peer.token = (_req, res) => json(res, { error: 'invalid_client' }, 401);
      const app = await appWith({ clientAuthMethod: 'bearer' });
      expect((await call(app, 'x')).status).to.equal(503);
      expect(diagnostics(app)).to.include(
        "token: the authorization server refused the gateway's client authentication (HTTP 401, invalid_client)",
      );
      expect(peer.calls['/introspect'] ?? 0).to.equal(0);
    });
  });

  describe('item 6: explicit endpoints complete discovery', () => {
    it('a discovery document without introspection_endpoint, completed by introspectionEndpoint (the rest still discovered)', async () => {
      const { introspection_endpoint: _none, ...withoutIntrospection } = peer.metadata();
      peer.discovery = (_req, res) => json(res, withoutIntrospection);
      peer.introspection = (_req, res) => json(res, active());
      const app = await appWith({ introspectionEndpoint: `${peer.issuer}/introspect`, userInfo: true });
      const res = await call(app, 'x');
      expect(res.status).to.equal(200);
      // UserInfo's endpoint came from discovery.
      expect(res.body.userInfo).to.deep.include({ name: 'Demo' });
      expect(peer.calls['/.well-known/openid-configuration']).to.equal(1);
    });

    it('falls back to RFC 8414 metadata when OpenID Connect discovery fails', async () => {
      peer.discovery = (_req, res) => {
        res.writeHead(404).end();
      };
      peer.oauthMetadata = (_req, res) => json(res, peer.metadata());
      peer.introspection = (_req, res) => json(res, active());
      const app = await appWith();
      expect((await call(app, 'x')).status).to.equal(200);
      expect(peer.calls['/.well-known/oauth-authorization-server']).to.equal(1);
    });

    it('falls back to RFC 8414 metadata when the OpenID Connect document lacks a needed endpoint', async () => {
      const { introspection_endpoint: _none, ...withoutIntrospection } = peer.metadata();
      peer.discovery = (_req, res) => json(res, withoutIntrospection);
      peer.oauthMetadata = (_req, res) => json(res, peer.metadata());
      peer.introspection = (_req, res) => json(res, active());
      const app = await appWith();
      expect((await call(app, 'x')).status).to.equal(200);
    });

    it('uses the explicit endpoints alone when the server publishes no metadata at all', async () => {
      peer.discovery = (_req, res) => {
        res.writeHead(404).end();
      };
      peer.introspection = (_req, res) => json(res, active());
      const app = await appWith({ introspectionEndpoint: `${peer.issuer}/introspect` });
      const res = await call(app, 'x');
      expect(res.status).to.equal(200);
      expect(res.body.info.issuer).to.equal(peer.issuer);
    });

    it('says which endpoint is missing when neither discovery nor the policy gives it', async () => {
      const { introspection_endpoint: _none, ...withoutIntrospection } = peer.metadata();
      peer.discovery = (_req, res) => json(res, withoutIntrospection);
      const app = await appWith();
      expect((await call(app, 'x')).status).to.equal(503);
      expect(diagnostics(app).join('\n')).to.include('has no introspection_endpoint');
    });
  });

  describe('item 11: stale on error (staleIfErrorSeconds)', () => {
    it('serves a token valid at its last check while the server is down, and says so', async () => {
      let down = false;
      peer.introspection = (_req, res) => (down ? json(res, { error: 'temporarily_unavailable' }, 503) : json(res, active()));
      const app = await appWith({ cache: { ttlSeconds: 0.2 }, staleIfErrorSeconds: 60 });
      expect((await call(app, 'known')).status).to.equal(200);
      down = true;
      await sleep(300);
      const res = await call(app, 'known');
      expect(res.status).to.equal(200);
      const stale = app.contexts.at(-1)!.diagnostics.find((d) => d.code === 'TOKEN_VALID')!;
      expect(stale.level).to.equal('warn');
      expect(stale.message).to.match(
        /\(stale: last checked \d+ s ago; the authorization server could not be used: introspection: non-conforming response \(HTTP 503\)\)$/,
      );
      // A token never seen valid is not helped.
      expect((await call(app, 'unknown')).status).to.equal(503);
    });

    it('is off by default: the same outage is a 503', async () => {
      let down = false;
      peer.introspection = (_req, res) => (down ? json(res, { error: 'temporarily_unavailable' }, 503) : json(res, active()));
      const app = await appWith({ cache: { ttlSeconds: 0.2 } });
      expect((await call(app, 'known')).status).to.equal(200);
      down = true;
      await sleep(300);
      expect((await call(app, 'known')).status).to.equal(503);
    });

    it('never serves a token past its exp, nor one checked longer ago than staleIfErrorSeconds', async () => {
      let down = false;
      peer.introspection = (_req, res, body) => {
        if (down) return json(res, { error: 'temporarily_unavailable' }, 503);
        json(res, active(tokenOf(body) === 'short' ? { exp: nowSeconds() + 1 } : {}));
      };
      const app = await appWith({ cache: { ttlSeconds: 0.2 }, staleIfErrorSeconds: 1, clockSkew: 0 });
      expect((await call(app, 'short')).status).to.equal(200);
      expect((await call(app, 'long')).status).to.equal(200);
      down = true;
      await sleep(1300);
      expect((await call(app, 'short')).status).to.not.equal(200);
      expect((await call(app, 'long')).status).to.equal(503);
    });
  });
});
