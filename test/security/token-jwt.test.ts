/**
 * Security: what JWT validation and introspection accept as an access token.
 *
 * A purpose-built authorization server (test/token/peer.ts) signs the tokens oidc-provider would
 * never issue (no `exp`, other `typ`s, an ID token for another client, times beyond a JavaScript
 * date) and answers introspection as a server that introspects every kind of token would. Each
 * token is sent as a caller would, over real HTTP, through `requireToken` + `introspect`.
 */
import { expect } from 'chai';
import request from 'supertest';
import { createTokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { PolicyApps, type TestApp } from '../token/helpers.js';
import { json, nowSeconds, startPeer, type Peer } from '../token/peer.js';

const INVALID = 'Bearer realm="PetStore IdP", error="invalid_token", error_description="Token invalid"';

describe('security: which tokens JWT validation and introspection accept', function () {
  let peer: Peer;
  const apps = new PolicyApps();

  before(async () => {
    peer = await startPeer();
  });
  after(async () => {
    await apps.closeAll();
    await peer.stop();
  });

  const appWith = (options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> => apps.start(peer.issuer, options);

  /** An access token of client1 for petstore-api, valid for an hour, with `extra` claims over it. */
  function accessClaims(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const now = nowSeconds();
    return {
      iss: peer.issuer,
      sub: 'client1',
      client_id: 'client1',
      aud: 'petstore-api',
      iat: now,
      exp: now + 3600,
      jti: `j-${Math.random()}`,
      ...extra,
    };
  }

  async function expectInvalid(app: TestApp, token: string, why: string): Promise<void> {
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status, why).to.equal(401);
    expect(res.headers['www-authenticate'], why).to.equal(INVALID);
    expect(res.body.gateway_status, why).to.equal('protocol:GATEWAY-1367');
  }

  async function expectValid(app: TestApp, token: string, why: string): Promise<void> {
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status, why).to.equal(200);
  }

  describe('JWT validation', () => {
    it('refuses at start-up JWT validation without an audience, unless anyAudience: true says so', () => {
      const base = { name: 'PetStore IdP', issuer: peer.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' };
      expect(() => createTokenPolicy({ ...base, introspection: false, jwtValidation: true })).to.throw(
        TypeError,
        /options\.audience.*options\.anyAudience/,
      );
      expect(() => createTokenPolicy({ ...base, jwtValidation: true })).to.throw(TypeError, /options\.anyAudience/);
      expect(() => createTokenPolicy({ ...base, jwtValidation: true, anyAudience: 'yes' as unknown as boolean })).to.throw(
        TypeError,
        /options\.anyAudience/,
      );
      expect(() => createTokenPolicy({ ...base, jwtValidation: true, anyAudience: true, audience: 'a' })).to.throw(
        TypeError,
        /options\.anyAudience/,
      );
      expect(() => createTokenPolicy({ ...base, jwtValidation: true, audience: 'a', jwtTypes: [] })).to.throw(
        TypeError,
        /options\.jwtTypes/,
      );
      expect(() => createTokenPolicy({ ...base, jwtValidation: true, audience: 'a', jwtTypes: [''] })).to.throw(
        TypeError,
        /options\.jwtTypes/,
      );
      createTokenPolicy({ ...base, jwtValidation: true, anyAudience: true }).close();
      createTokenPolicy({ ...base, jwtValidation: true, audience: 'petstore-api', jwtTypes: ['at+jwt'] }).close();
    });

    it('answers 401 for a JWT without exp', async () => {
      const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api' });
      const { exp: _exp, ...claims } = accessClaims();
      await expectValid(app, await peer.sign(accessClaims(), 'at+jwt'), 'the same token with exp');
      await expectInvalid(app, await peer.sign(claims, 'at+jwt'), 'no exp');
    });

    it('answers 401 for an ID token issued to another client, with anyAudience and jwtTypes [at+jwt]', async () => {
      const app = await appWith({ introspection: false, jwtValidation: true, anyAudience: true, jwtTypes: ['at+jwt'] });
      const now = nowSeconds();
      const idToken = await peer.sign(
        {
          iss: peer.issuer,
          sub: 'alice',
          aud: 'another-client',
          azp: 'another-client',
          iat: now,
          exp: now + 3600,
          auth_time: now,
          nonce: 'n',
        },
        'JWT',
      );
      await expectInvalid(app, idToken, 'ID token (typ JWT)');
      const untyped = await peer.sign({ iss: peer.issuer, sub: 'alice', aud: 'another-client', iat: now, exp: now + 3600 });
      await expectInvalid(app, untyped, 'ID token without typ');
      await expectValid(app, await peer.sign(accessClaims(), 'at+jwt'), 'an access token');
    });

    it('checks typ case-insensitively, with or without the application/ prefix, on both sides', async () => {
      const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api', jwtTypes: ['application/AT+JWT'] });
      for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt', 'Application/At+Jwt']) {
        await expectValid(app, await peer.sign(accessClaims(), typ), `typ ${typ}`);
      }
      for (const typ of [undefined, 'JWT', 'application/jwt', 'at+jwt ', 'x/at+jwt', 'application/application/at+jwt']) {
        await expectInvalid(app, await peer.sign(accessClaims(), typ), `typ ${String(typ)}`);
      }
    });

    for (const [claim, value] of [
      ['exp', 1e20],
      ['nbf', -1e20],
      ['iat', -1e20],
      ['exp', 8.64e12 + 1],
    ] as const) {
      it(`answers 401, not 200 nor 500, for a JWT whose ${claim} is ${value} (outside a JavaScript date)`, async () => {
        const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api' });
        await expectInvalid(app, await peer.sign(accessClaims({ [claim]: value }), 'at+jwt'), `${claim} ${value}`);
      });
    }
  });

  describe('introspection', () => {
    it('answers 401 when token_type says the token is a refresh token or an ID token', async () => {
      const app = await appWith({ cache: false });
      for (const tokenType of [
        'refresh_token',
        'id_token',
        'Refresh_Token',
        'urn:ietf:params:oauth:token-type:refresh_token',
        'urn:ietf:params:oauth:token-type:id_token',
      ]) {
        peer.introspection = (_req, res) => json(res, { active: true, ...accessClaims(), token_type: tokenType });
        await expectInvalid(app, `opaque-${tokenType.length}`, `token_type ${tokenType}`);
      }
      // Keycloak says it in the typ claim.
      for (const typ of ['Refresh', 'Offline', 'ID']) {
        peer.introspection = (_req, res) => json(res, { active: true, ...accessClaims(), typ });
        await expectInvalid(app, `opaque-${typ}`, `typ ${typ}`);
      }
      for (const tokenType of ['Bearer', 'access_token', 'urn:ietf:params:oauth:token-type:access_token', undefined]) {
        peer.introspection = (_req, res) => json(res, { active: true, ...accessClaims(), token_type: tokenType });
        await expectValid(app, 'opaque-access', `token_type ${String(tokenType)}`);
      }
    });

    it('answers 401, not 200 nor 500, for time claims outside a JavaScript date', async () => {
      const app = await appWith({ cache: false });
      for (const [claim, value] of [
        ['exp', 1e20],
        ['nbf', -1e20],
        ['iat', -1e20],
      ] as const) {
        peer.introspection = (_req, res) => json(res, { active: true, ...accessClaims({ [claim]: value }), token_type: 'Bearer' });
        await expectInvalid(app, 'opaque-time', `${claim} ${value}`);
      }
    });
  });
});
