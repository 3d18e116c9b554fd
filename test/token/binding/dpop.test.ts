/**
 * DPoP (RFC 9449) at the gateway, against a real authorization server issuing bound tokens
 * (oidc-provider with its `dPoP` feature, in-process): every check RFC 9449 sections 4.3 and 7.1
 * ask of a resource server, each refusal with its challenge, and malformed proofs never a 5xx.
 */
import { expect } from 'chai';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../../src/token/policy-options.js';
import { startTestApp, type TestApp } from '../helpers.js';
import { ath, dpopKey, proof, rawJws, type DpopKey } from './support.js';

const PUBLIC = 'https://api.example.org';
const URL_OF_PETS = `${PUBLIC}/pets`;
const ALGS = 'algs="ES256 PS256 EdDSA"';

describe('DPoP-bound tokens (RFC 9449) against oidc-provider', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let key: DpopKey;
  let other: DpopKey;
  let bound: string;
  let boundJwt: string;
  let unbound: string;
  const open: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    key = await dpopKey('ES256');
    other = await dpopKey('ES256');
    bound = await as.issueToken('client1', 'client1-secret', { scope: 'read', dpop: key });
    boundJwt = await as.issueToken('client1', 'client1-secret', { scope: 'read', format: 'jwt', dpop: key });
    unbound = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
  });
  after(async () => {
    for (const { app, policy } of open.splice(0)) {
      await app.close();
      policy.close();
    }
    await as.stop();
  });

  async function appWith(options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      dpop: 'allowed',
      publicBaseUrl: PUBLIC,
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    open.push({ app, policy });
    return app;
  }

  const dpopCall = (app: TestApp, token: string, proofValue: string | string[] | undefined) => {
    const call = request(app.url).get('/pets').set('Authorization', `DPoP ${token}`);
    // An array sends one DPoP line per value (superagent's typing allows it for Cookie only).
    return proofValue === undefined ? call : call.set('DPoP', proofValue as string);
  };

  /** Expects a refusal of the proof: 401, the DPoP challenge with `algs` and the error (and, given, the cause in the diagnostics). */
  function refusedProof(res: request.Response, error = 'invalid_dpop_proof', app?: TestApp, cause?: RegExp): void {
    expect(res.status, res.text).to.equal(401);
    if (app !== undefined && cause !== undefined) {
      const said = app.contexts
        .at(-1)!
        .diagnostics.map((d) => d.message)
        .join('\n');
      expect(said, said).to.match(cause);
    }
    expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(res.headers['www-authenticate']).to.match(
      new RegExp(`^DPoP realm="PetStore IdP", ${ALGS}, error="${error}", error_description="[^"]+"`),
    );
  }

  describe('a valid request', () => {
    it('passes with the bound token under the DPoP scheme and a proof of its key; the binding is on the request', async () => {
      const app = await appWith();
      const res = await dpopCall(app, bound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound }));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.scheme).to.equal('DPoP');
      expect(res.body.binding).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'verified' });
      // The introspection answer says it: token_type DPoP, cnf.jkt the key's thumbprint.
      expect(res.body.introspection.token_type).to.equal('DPoP');
      expect(res.body.introspection.cnf).to.deep.equal({ jkt: key.jkt });
    });

    it('passes again with a new proof while the token result is cached (no second introspection)', async () => {
      const app = await appWith();
      const before = as.stats.introspections;
      for (let i = 0; i < 3; i++) {
        const res = await dpopCall(app, bound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound }));
        expect(res.status, res.text).to.equal(200);
      }
      expect(as.stats.introspections - before).to.equal(1);
    });

    it('takes cnf.jkt from a JWT access token validated locally', async () => {
      const app = await appWith({ introspection: false, jwtValidation: true, audience: 'petstore-api' });
      const res = await dpopCall(app, boundJwt, await proof(key, { method: 'GET', url: URL_OF_PETS, token: boundJwt }));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.jwt.cnf).to.deep.equal({ jkt: key.jkt });
      expect(res.body.binding).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'verified' });
    });

    it('checks htu against publicBaseUrl and the path, whatever the query and the Host header', async () => {
      const app = await appWith();
      const res = await request(app.url)
        .get('/pets?limit=2')
        .set('Host', 'evil.example')
        .set('Authorization', `DPoP ${bound}`)
        .set('DPoP', await proof(key, { method: 'GET', url: `${URL_OF_PETS}?other=1#frag`, token: bound }));
      expect(res.status, res.text).to.equal(200);
    });

    it('accepts an unbound token as Bearer under dpop allowed, with the DPoP challenge offered beside the Bearer one on a refusal', async () => {
      const app = await appWith();
      const ok = await request(app.url).get('/pets').set('Authorization', `Bearer ${unbound}`);
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.binding).to.equal(undefined);
      const missing = await request(app.url).get('/pets');
      expect(missing.status).to.equal(400);
      expect(missing.headers['www-authenticate']).to.equal(
        `Bearer realm="PetStore IdP", error="invalid_request", error_description="The request is missing a required token parameter", DPoP realm="PetStore IdP", ${ALGS}`,
      );
    });
  });

  describe('the binding', () => {
    it('refuses a DPoP-bound token under the Bearer scheme: invalid_token', async () => {
      const app = await appWith();
      const res = await request(app.url)
        .get('/pets')
        .set('Authorization', `Bearer ${bound}`)
        .set('DPoP', await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound }));
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(
        /^Bearer realm="PetStore IdP", error="invalid_token", .*, DPoP realm="PetStore IdP", algs="ES256 PS256 EdDSA"$/,
      );
    });

    it('refuses a DPoP-bound token as Bearer when the policy has DPoP off too', async () => {
      const app = await appWith({ dpop: 'off' });
      const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${bound}`);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/^Bearer realm="PetStore IdP", error="invalid_token"/);
    });

    it('accepts a DPoP-bound token as a bearer token under certificateBoundTokens ignore, DPoP off or allowed; its binding noted ignored', async () => {
      for (const dpop of ['off', 'allowed'] as const) {
        const app = await appWith({ dpop, certificateBoundTokens: 'ignore' });
        const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${bound}`);
        expect(res.status, `${dpop}: ${res.text}`).to.equal(200);
        expect(res.body.binding, dpop).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'ignored' });
        // Under the DPoP scheme its proof is checked all the same.
        if (dpop === 'allowed')
          refusedProof(await dpopCall(app, bound, await proof(other, { method: 'GET', url: URL_OF_PETS, token: bound })));
      }
      // certificateBoundTokens enforce (the default, said here) refuses it, DPoP off or on.
      for (const dpop of ['off', 'allowed'] as const) {
        const app = await appWith({ dpop, certificateBoundTokens: 'enforce' });
        const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${bound}`);
        expect(res.status, dpop).to.equal(401);
        expect(res.headers['www-authenticate'], dpop).to.match(/^Bearer realm="PetStore IdP", error="invalid_token"/);
      }
      // dpop required takes DPoP only, whatever certificateBoundTokens says.
      const strict = await appWith({ dpop: 'required', certificateBoundTokens: 'ignore' });
      refusedProof(await request(strict.url).get('/pets').set('Authorization', `Bearer ${bound}`), 'invalid_token');
    });

    it('refuses a proof signed by a key other than cnf.jkt: invalid_dpop_proof', async () => {
      const app = await appWith();
      refusedProof(await dpopCall(app, bound, await proof(other, { method: 'GET', url: URL_OF_PETS, token: bound })));
    });

    it('refuses an unbound token under the DPoP scheme: invalid_token in the DPoP challenge', async () => {
      const app = await appWith();
      refusedProof(await dpopCall(app, unbound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: unbound })), 'invalid_token');
    });

    it('refuses Bearer under dpop required, with the DPoP challenge alone', async () => {
      const app = await appWith({ dpop: 'required' });
      const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${unbound}`);
      refusedProof(res, 'invalid_token');
      const missing = await request(app.url).get('/pets');
      expect(missing.headers['www-authenticate']).to.match(new RegExp(`^DPoP realm="PetStore IdP", ${ALGS}, error="invalid_request"`));
    });
  });

  describe('the proof (RFC 9449 section 4.3)', () => {
    let app: TestApp;
    before(async () => {
      app = await appWith();
    });
    const good = (parts: Partial<Parameters<typeof proof>[1]> = {}, signer = key) =>
      proof(signer, { method: 'GET', url: URL_OF_PETS, token: bound, ...parts });

    it('1: no DPoP header', async () => refusedProof(await dpopCall(app, bound, undefined), 'invalid_dpop_proof', app, /no DPoP header/));
    it('1: two DPoP headers', async () =>
      refusedProof(await dpopCall(app, bound, [await good(), await good()]), 'invalid_dpop_proof', app, /2 DPoP headers/));
    it('2: not a JWT', async () => refusedProof(await dpopCall(app, bound, 'not-a-jwt'), 'invalid_dpop_proof', app, /not a compact JWS/));
    it('2: three parts that are not base64url JSON', async () =>
      refusedProof(await dpopCall(app, bound, 'a.b.c'), 'invalid_dpop_proof', app, /header is not a JSON object/));
    it('2: a header that is not JSON', async () =>
      refusedProof(
        await dpopCall(app, bound, rawJws('{not json', { htm: 'GET' })),
        'invalid_dpop_proof',
        app,
        /header is not a JSON object/,
      ));
    it('2: a payload that is not JSON, signed all the same', async () => {
      const { CompactSign } = await import('jose');
      const signed = await new CompactSign(Buffer.from('[1,'))
        .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicJwk })
        .sign(key.privateKey);
      refusedProof(await dpopCall(app, bound, signed), 'invalid_dpop_proof', app, /not a valid JWT/);
    });
    it('2: an oversized proof', async () =>
      refusedProof(
        await dpopCall(app, bound, await good({ claims: { pad: 'x'.repeat(9000) } })),
        'invalid_dpop_proof',
        app,
        /longer than 8192/,
      ));
    it('3: no jti', async () =>
      refusedProof(await dpopCall(app, bound, await good({ claims: { jti: undefined } })), 'invalid_dpop_proof', app, /jti is not/));
    it('4: typ is not dpop+jwt', async () =>
      refusedProof(await dpopCall(app, bound, await good({ header: { typ: 'JWT' } })), 'invalid_dpop_proof', app, /typ is not dpop\+jwt/));
    it('5: alg none', async () => {
      const [, payload] = (await good()).split('.');
      const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'none', jwk: key.publicJwk })).toString('base64url');
      refusedProof(await dpopCall(app, bound, `${header}.${payload}.`), 'invalid_dpop_proof', app, /not a compact JWS/);
      // With a signature part all the same: the algorithm is refused.
      refusedProof(await dpopCall(app, bound, `${header}.${payload}.c2ln`), 'invalid_dpop_proof', app, /alg is not one of/);
    });
    it('5: an algorithm outside dpopSigningAlgs (ES384)', async () => {
      const es384 = await dpopKey('ES384');
      refusedProof(
        await dpopCall(app, bound, await proof(es384, { method: 'GET', url: URL_OF_PETS, token: bound })),
        'invalid_dpop_proof',
        app,
        /alg is not one of/,
      );
    });
    it('5: HS256 with the jwk as a symmetric key', async () => {
      const header = { typ: 'dpop+jwt', alg: 'HS256', jwk: { kty: 'oct', k: 'c2VjcmV0' } };
      refusedProof(
        await dpopCall(app, bound, rawJws(header, { jti: 'x', htm: 'GET', htu: URL_OF_PETS, iat: Date.now() / 1000 })),
        'invalid_dpop_proof',
        app,
        /alg is not one of/,
      );
    });
    it('6: a signature by another key than the jwk header', async () =>
      refusedProof(await dpopCall(app, bound, await good({ signWith: other })), 'invalid_dpop_proof', app, /signature does not verify/));
    it('6: a tampered payload', async () => {
      const [header, , signature] = (await good()).split('.');
      const payload = Buffer.from(
        JSON.stringify({ jti: 'x', htm: 'GET', htu: URL_OF_PETS, iat: Math.floor(Date.now() / 1000), ath: ath(bound) }),
      ).toString('base64url');
      refusedProof(await dpopCall(app, bound, `${header}.${payload}.${signature}`), 'invalid_dpop_proof', app, /signature does not verify/);
    });
    it('7: a jwk holding the private key', async () => {
      const { exportJWK } = await import('jose');
      const privateJwk = await exportJWK(key.privateKey);
      refusedProof(
        await dpopCall(app, bound, await good({ header: { jwk: privateJwk } })),
        'invalid_dpop_proof',
        app,
        /private or symmetric key/,
      );
    });
    it('8: htm is not the method', async () =>
      refusedProof(await dpopCall(app, bound, await good({ method: 'POST' })), 'invalid_dpop_proof', app, /htm is not/));
    it('9: htu names the Host the client sent, not publicBaseUrl', async () => {
      const res = await request(app.url)
        .get('/pets')
        .set('Host', 'api.example.org')
        .set('Authorization', `DPoP ${bound}`)
        .set('DPoP', await good({ url: 'http://api.example.org/pets' }));
      refusedProof(res, 'invalid_dpop_proof', app, /htu is not/);
    });
    it('9: htu names another path', async () =>
      refusedProof(await dpopCall(app, bound, await good({ url: `${PUBLIC}/other` })), 'invalid_dpop_proof', app, /htu is not/));
    it('9: htu is not a URL', async () =>
      refusedProof(await dpopCall(app, bound, await good({ url: 'pets' })), 'invalid_dpop_proof', app, /htu is not/));
    it('11: iat older than dpopProofMaxAgeSeconds', async () =>
      refusedProof(
        await dpopCall(app, bound, await good({ claims: { iat: Math.floor(Date.now() / 1000) - 400 } })),
        'invalid_dpop_proof',
        app,
        /older than 300 s/,
      ));
    it('11: iat in the future', async () =>
      refusedProof(
        await dpopCall(app, bound, await good({ claims: { iat: Math.floor(Date.now() / 1000) + 120 } })),
        'invalid_dpop_proof',
        app,
        /iat is in the future/,
      ));
    it('12: no ath', async () =>
      refusedProof(await dpopCall(app, bound, await good({ token: undefined })), 'invalid_dpop_proof', app, /ath is not/));
    it('12: ath of another token', async () =>
      refusedProof(await dpopCall(app, bound, await good({ token: unbound })), 'invalid_dpop_proof', app, /ath is not/));
    it('replay: the same proof twice', async () => {
      const once = await good();
      expect((await dpopCall(app, bound, once)).status).to.equal(200);
      refusedProof(await dpopCall(app, bound, once));
    });
  });

  describe('server nonces (dpopNonce)', () => {
    it('asks for a nonce with use_dpop_nonce and DPoP-Nonce, then accepts a proof carrying it', async () => {
      const app = await appWith({ dpopNonce: true });
      const first = await dpopCall(app, bound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound }));
      refusedProof(first, 'use_dpop_nonce');
      const nonce = first.headers['dpop-nonce'] as string;
      expect(nonce).to.be.a('string').and.not.equal('');
      const wrong = await dpopCall(app, bound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound, nonce: `${nonce}x` }));
      refusedProof(wrong, 'use_dpop_nonce');
      const ok = await dpopCall(app, bound, await proof(key, { method: 'GET', url: URL_OF_PETS, token: bound, nonce }));
      expect(ok.status, ok.text).to.equal(200);
    });
  });

  describe('options', () => {
    it('refuses dpop without publicBaseUrl, HMAC proof algorithms and a bad publicBaseUrl at creation', () => {
      const base = { name: 'p', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' };
      expect(() => createTokenPolicy({ ...base, dpop: 'required' })).to.throw(
        TypeError,
        /options\.publicBaseUrl is required with dpop 'required'/,
      );
      expect(() => createTokenPolicy({ ...base, dpop: 'allowed', publicBaseUrl: PUBLIC, dpopSigningAlgs: ['HS256'] })).to.throw(
        TypeError,
        /options\.dpopSigningAlgs/,
      );
      expect(() => createTokenPolicy({ ...base, dpop: 'allowed', publicBaseUrl: 'https://api.example.org/?x=1' })).to.throw(
        TypeError,
        /options\.publicBaseUrl/,
      );
      expect(() => createTokenPolicy({ ...base, dpop: 'sometimes' as never, publicBaseUrl: PUBLIC })).to.throw(TypeError, /options\.dpop/);
    });
  });
});
