/**
 * Key rotation (issue 31): a JWT signed with a key the cached JWKS lacks makes one fetch of the
 * JWKS, at most once per cool-down (`jwksCooldownSeconds`), so that made-up `kid`s cannot make the
 * gateway hammer the authorization server. The issuer here is a real HTTP server publishing its
 * discovery document and a JWKS it rotates, counting the JWKS requests it answers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import request from 'supertest';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { sleep, startTestApp, type TestApp } from './helpers.js';

const AUDIENCE = 'petstore-api';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** An issuer whose published keys the test changes, counting the JWKS fetches it answers. */
interface RotatingIssuer {
  issuer: string;
  /** JWKS requests answered. */
  jwksFetches: number;
  /** The keys published now. */
  published: SigningKey[];
  /** While set, the JWKS endpoint answers 500. */
  failing: boolean;
  newKey(): Promise<SigningKey>;
  sign(key: SigningKey, options?: { kid?: string }): Promise<string>;
  close(): Promise<void>;
}

async function startRotatingIssuer(): Promise<RotatingIssuer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: state.issuer, jwks_uri: `${state.issuer}/jwks`, token_endpoint: `${state.issuer}/token` }));
      return;
    }
    if (path === '/jwks') {
      state.jwksFetches += 1;
      if (state.failing) {
        res.writeHead(500).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
      res.end(JSON.stringify({ keys: state.published.map((k) => k.publicJwk) }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state: RotatingIssuer = {
    issuer,
    jwksFetches: 0,
    published: [],
    failing: false,
    async newKey() {
      const { privateKey, publicKey } = await generateKeyPair('ES256');
      const kid = randomUUID();
      return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
    },
    sign(key, options = {}) {
      return new SignJWT({ client_id: 'client1', scope: 'read', jti: randomUUID() })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: options.kid ?? key.kid })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setSubject('client1')
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(key.privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return state;
}

describe('token policies: JWKS key rotation and the refetch cool-down', function () {
  let issuer: RotatingIssuer;
  let keyA: SigningKey;
  let keyB: SigningKey;
  const open: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  beforeEach(async () => {
    issuer = await startRotatingIssuer();
    keyA = await issuer.newKey();
    keyB = await issuer.newKey();
    issuer.published = [keyA];
  });
  afterEach(async () => {
    for (const { app, policy } of open.splice(0)) {
      await app.close();
      policy.close();
    }
    await issuer.close();
  });

  async function appWith(options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'Rotating IdP',
      issuer: issuer.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      introspection: false,
      jwtValidation: true,
      audience: AUDIENCE,
      // Every refused token reaches the key getter: the worst case for the authorization server.
      invalidTokenThrottle: false,
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    open.push({ app, policy });
    return app;
  }

  const get = (app: TestApp, token: string) => request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);

  it('accepts tokens of the old key and, after one fetch, of the new key while both are in use', async () => {
    const app = await appWith({ jwksCooldownSeconds: 0.2 });
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
    expect(issuer.jwksFetches).to.equal(1);

    // The authorization server rotates: it publishes the new key beside the old one and signs with it.
    issuer.published = [keyA, keyB];
    await sleep(250);
    const first = await get(app, await issuer.sign(keyB));
    expect(first.status).to.equal(200);
    expect(first.body.jwt.iss).to.equal(issuer.issuer);
    expect(issuer.jwksFetches).to.equal(2);

    // Tokens of both keys, new ones (not cached), interleaved: no more fetches.
    for (let i = 0; i < 10; i++) {
      expect((await get(app, await issuer.sign(i % 2 === 0 ? keyA : keyB))).status).to.equal(200);
    }
    expect(issuer.jwksFetches).to.equal(2);
  });

  it('keeps a refusal for an unknown key in the refusal cache no longer than the cool-down', async () => {
    const app = await appWith({ jwksCooldownSeconds: 1, negativeCache: { ttlSeconds: 300 } });
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
    issuer.published = [keyA, keyB];
    const tokenB = await issuer.sign(keyB);
    expect((await get(app, tokenB)).status).to.equal(401);
    // Remembered within the cool-down: no fetch, same answer.
    expect((await get(app, tokenB)).status).to.equal(401);
    expect(issuer.jwksFetches).to.equal(1);
    await sleep(1100);
    expect((await get(app, tokenB)).status).to.equal(200);
    expect(issuer.jwksFetches).to.equal(2);
  });

  it('1,000 distinct unknown kids, with tokens of both keys in use, make at most one fetch per cool-down', async () => {
    const cooldownSeconds = 0.5;
    const app = await appWith({ jwksCooldownSeconds: cooldownSeconds });
    issuer.published = [keyA, keyB];
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
    expect(issuer.jwksFetches).to.equal(1);
    const started = Date.now();
    const statuses: Record<string, number[]> = { garbage: [], valid: [] };
    for (let batch = 0; batch < 20; batch++) {
      const sent = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const valid = i % 10 === 0;
          const token = valid ? await issuer.sign(i % 20 === 0 ? keyA : keyB) : await issuer.sign(keyA, { kid: randomUUID() });
          return { valid, status: (await get(app, token)).status };
        }),
      );
      for (const { valid, status } of sent) statuses[valid ? 'valid' : 'garbage']!.push(status);
    }
    const elapsed = Date.now() - started;
    expect(statuses['garbage']).to.have.length(900);
    expect(new Set(statuses['garbage'])).to.deep.equal(new Set([401]));
    expect(new Set(statuses['valid'])).to.deep.equal(new Set([200]));
    // One initial fetch, then at most one per cool-down elapsed (plus the one that may start it).
    const bound = 1 + Math.floor(elapsed / (cooldownSeconds * 1000)) + 1;
    expect(issuer.jwksFetches, `${issuer.jwksFetches} fetches in ${elapsed} ms`).to.be.at.most(bound);
  });

  it('with the default cool-down (30 s), 1,000 distinct unknown kids sent at once make at most one fetch', async () => {
    const app = await appWith();
    issuer.published = [keyA, keyB];
    expect((await get(app, await issuer.sign(keyB))).status).to.equal(200);
    const tokens = await Promise.all(Array.from({ length: 1000 }, () => issuer.sign(keyA, { kid: randomUUID() })));
    for (let at = 0; at < tokens.length; at += 100) {
      const statuses = await Promise.all(tokens.slice(at, at + 100).map(async (token) => (await get(app, token)).status));
      expect(new Set(statuses)).to.deep.equal(new Set([401]));
    }
    // The first token's fetch and, since the cool-down had not started, at most one refetch.
    expect(issuer.jwksFetches).to.be.at.most(2);
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
  });

  it('counts a failed fetch in the cool-down: a failing JWKS endpoint is not asked again for every unknown kid', async () => {
    const app = await appWith({ jwksCooldownSeconds: 0.3 });
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
    issuer.failing = true;
    await sleep(350);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) statuses.push((await get(app, await issuer.sign(keyA, { kid: randomUUID() }))).status);
    const elapsed = Date.now() - started;
    // The first unknown kid after the cool-down asks (503: the keys could not be obtained, fail closed); the next ones are
    // refused (401) without asking, but for the first after each cool-down (how many depends on how long the 50 took).
    expect(statuses[0]).to.equal(503);
    const asked = statuses.filter((s) => s === 503).length;
    expect(asked + statuses.filter((s) => s === 401).length, statuses.join(',')).to.equal(50);
    expect(asked, `${asked} of 50 asked in ${elapsed} ms`).to.be.at.most(1 + Math.floor(elapsed / 300));
    expect(issuer.jwksFetches, `${issuer.jwksFetches} fetches in ${elapsed} ms`).to.be.at.most(2 + Math.floor(elapsed / 300));
    // Tokens of the key already fetched keep working meanwhile.
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
  });

  it('before any successful fetch, a failing JWKS endpoint is asked at most once per cool-down, whatever the tokens', async () => {
    issuer.failing = true;
    const app = await appWith({ jwksCooldownSeconds: 0.3 });
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const token = i % 2 === 0 ? await issuer.sign(keyA) : await issuer.sign(keyA, { kid: randomUUID() });
      statuses.push((await get(app, token)).status);
    }
    const elapsed = Date.now() - started;
    // The keys cannot be obtained: fail closed, every token.
    expect(new Set(statuses)).to.deep.equal(new Set([503]));
    expect(issuer.jwksFetches, `${issuer.jwksFetches} fetches in ${elapsed} ms`).to.be.at.most(1 + Math.floor(elapsed / 300) + 1);
    // The server back: the next fetch, once the cool-down allows it, serves the tokens.
    issuer.failing = false;
    await sleep(350);
    expect((await get(app, await issuer.sign(keyA))).status).to.equal(200);
  });

  it('refuses a jwksCooldownSeconds that is not a positive number at creation', () => {
    for (const bad of [0, -1, 'soon', Number.NaN]) {
      expect(() =>
        createTokenPolicy({
          name: 'x',
          issuer: issuer.issuer,
          clientId: 'gateway',
          clientSecret: 'gateway-secret',
          introspection: false,
          jwtValidation: true,
          audience: AUDIENCE,
          jwksCooldownSeconds: bad as number,
        }),
      ).to.throw(TypeError, /createTokenPolicy: options\.jwksCooldownSeconds/);
    }
  });
});
