/**
 * The examples of RFC 9449 as fixtures (test/fixtures/dpop/rfc9449.json): the protected resource
 * request of section 7.1 passes the gateway at its time, the token request's proof of section 4.1
 * does not (it names another URI and carries no `ath`), and the introspection answer's
 * `token_type` must be `DPoP` for a bound token. The authorization server is the tests' peer,
 * which answers introspection as told (oidc-provider cannot issue the RFC's token).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { calculateJwkThumbprint, type JWK } from 'jose';
import request from 'supertest';
import { createTokenPolicy, type TokenPolicy } from '../../../src/token/policy.js';
import { json, startPeer, type Peer } from '../peer.js';
import { startTestApp, type TestApp } from '../helpers.js';
import { ath } from './support.js';
import express from 'express';
import { introspect } from '../../../src/token/introspect.js';
import { requireToken } from '../../../src/token/require-token.js';
import { problemJsonErrorHandler } from '../../../src/problem/handler.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const fixture = JSON.parse(
  readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'dpop', 'rfc9449.json'), 'utf8'),
) as {
  jwk: JWK;
  jkt: string;
  tokenRequestProof: { method: string; url: string; iat: number; proof: string };
  resourceRequest: { method: string; url: string; iat: number; accessToken: string; ath: string; proof: string };
};

describe('RFC 9449 examples', function () {
  this.timeout(30_000);
  let peer: Peer;
  let policy: TokenPolicy | undefined;
  let server: Server | undefined;
  const realNow = Date.now;

  beforeEach(async () => {
    peer = await startPeer();
  });
  afterEach(async () => {
    Date.now = realNow;
    if (server !== undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    }
    server = undefined;
    policy?.close();
    await peer.stop();
  });

  /** Runs the clock at `seconds` (the examples' time): the proofs' `iat` is then fresh. */
  function clockAt(seconds: number): void {
    const offset = seconds * 1000 - realNow();
    Date.now = () => realNow() + offset;
  }

  /** A gateway app at `publicBaseUrl` whose introspection answers `answer` for the example token. */
  async function gateway(publicBaseUrl: string, routePath: string, answer: Record<string, unknown>): Promise<string> {
    peer.introspection = (_req, res) => {
      const now = Math.floor(Date.now() / 1000);
      json(res, { active: true, iss: peer.issuer, sub: 'client1', client_id: 'client1', iat: now, exp: now + 3600, ...answer });
    };
    policy = createTokenPolicy({
      name: 'rfc',
      issuer: peer.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      dpop: 'allowed',
      publicBaseUrl,
    });
    const app = express();
    app.all(routePath, requireToken({ policy }), introspect({ policy }), (req, res) => {
      res.json({ binding: req.gateway?.token?.binding });
    });
    app.use(problemJsonErrorHandler({ messages: 'en' }));
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it("the fixture's key, thumbprint and ath agree (RFC 7638, RFC 9449 section 4.2)", async () => {
    expect(await calculateJwkThumbprint(fixture.jwk, 'sha256')).to.equal(fixture.jkt);
    expect(ath(fixture.resourceRequest.accessToken)).to.equal(fixture.resourceRequest.ath);
  });

  it('section 7.1: the protected resource request passes, bound to the example key', async () => {
    const example = fixture.resourceRequest;
    clockAt(example.iat + 1);
    const url = await gateway('https://resource.example.org', '/protectedresource', { token_type: 'DPoP', cnf: { jkt: fixture.jkt } });
    const res = await request(url).get('/protectedresource').set('Authorization', `DPoP ${example.accessToken}`).set('DPoP', example.proof);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.binding).to.deep.equal({ kind: 'jkt', thumbprint: fixture.jkt, result: 'verified' });
    // Once only.
    const again = await request(url)
      .get('/protectedresource')
      .set('Authorization', `DPoP ${example.accessToken}`)
      .set('DPoP', example.proof);
    expect(again.status).to.equal(401);
    expect(again.headers['www-authenticate']).to.match(/^DPoP realm="rfc", algs="ES256 PS256 EdDSA", error="invalid_dpop_proof"/);
  });

  it('section 7.1: the same request is refused once the proof is older than dpopProofMaxAgeSeconds', async () => {
    const example = fixture.resourceRequest;
    clockAt(example.iat + 400);
    const url = await gateway('https://resource.example.org', '/protectedresource', { token_type: 'DPoP', cnf: { jkt: fixture.jkt } });
    const res = await request(url).get('/protectedresource').set('Authorization', `DPoP ${example.accessToken}`).set('DPoP', example.proof);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.match(/error="invalid_dpop_proof"/);
  });

  it('section 4.1: the token request proof is no proof for a resource (no ath, another htm)', async () => {
    const example = fixture.tokenRequestProof;
    clockAt(example.iat + 1);
    const url = await gateway('https://server.example.com', '/token', { token_type: 'DPoP', cnf: { jkt: fixture.jkt } });
    const res = await request(url)
      .post('/token')
      .set('Authorization', `DPoP ${fixture.resourceRequest.accessToken}`)
      .set('DPoP', example.proof);
    expect(res.status).to.equal(401);
    expect(res.headers['www-authenticate']).to.match(/error="invalid_dpop_proof"/);
  });

  for (const tokenType of ['Bearer', 42]) {
    it(`an introspection answer binding the token (cnf.jkt) with token_type ${JSON.stringify(tokenType)} is refused: invalid_token`, async () => {
      const example = fixture.resourceRequest;
      clockAt(example.iat + 1);
      const url = await gateway('https://resource.example.org', '/protectedresource', { token_type: tokenType, cnf: { jkt: fixture.jkt } });
      const res = await request(url)
        .get('/protectedresource')
        .set('Authorization', `DPoP ${example.accessToken}`)
        .set('DPoP', example.proof);
      expect(res.status).to.equal(401);
      expect(res.headers['www-authenticate']).to.match(/^DPoP realm="rfc", algs="[^"]+", error="invalid_token"/);
    });
  }

  it('a malformed cnf.jkt is refused, never a 5xx', async () => {
    const example = fixture.resourceRequest;
    clockAt(example.iat + 1);
    const url = await gateway('https://resource.example.org', '/protectedresource', { token_type: 'DPoP', cnf: { jkt: { nested: true } } });
    const res = await request(url).get('/protectedresource').set('Authorization', `DPoP ${example.accessToken}`).set('DPoP', example.proof);
    expect(res.status).to.equal(401);
  });

  it('the test app of the other token tests is unaffected (startTestApp without DPoP)', async () => {
    const plain: TestApp = await startTestApp({ realm: 'plain' });
    try {
      const res = await request(plain.url).get('/pets').set('Authorization', 'DPoP abc');
      // A policy without DPoP does not know the scheme: no token.
      expect(res.status).to.equal(400);
      expect(res.headers['www-authenticate']).to.match(/^Bearer realm="plain", error="invalid_request"/);
    } finally {
      await plain.close();
    }
  });
});
