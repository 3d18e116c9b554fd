/**
 * forwardTokenHeaders behind the real token chain: tokens from the demo authorization server
 * (oidc-provider, port 0), validated by requireToken + introspect, relayed by http-proxy-middleware
 * to a real backend. One test per mode, plus the form-body token.
 */
import { expect } from 'chai';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { generateKeyPair, jwtVerify } from 'jose';
import supertest from 'supertest';
import { startDemoAuthServer } from '../../../examples/petstore/auth-server.js';
import type { DemoAuthServer } from '../../../examples/petstore/auth-server.js';
import { gatewayContext } from '../../../src/context.js';
import type { GatewayContext } from '../../../src/context.js';
import { problemJsonErrorHandler } from '../../../src/problem/handler.js';
import { introspect } from '../../../src/token/introspect.js';
import { createTokenPolicy } from '../../../src/token/policy.js';
import type { TokenPolicy } from '../../../src/token/policy.js';
import { requireToken } from '../../../src/token/require-token.js';
import { forwardTokenHeaders } from '../../../src/token/forward/index.js';
import type { ForwardTokenHeadersOptions } from '../../../src/token/forward/index.js';
import { startEchoBackend } from './helpers.js';
import type { Echo } from './helpers.js';

describe('forwardTokenHeaders behind the real token chain', () => {
  let as: DemoAuthServer;
  let backend: { url: string; close: () => Promise<void> };
  let policy: TokenPolicy;
  let token: string;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    backend = await startEchoBackend();
    policy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    token = await as.issueToken('client2', 'client2-secret', { scope: 'read write' });
  });
  after(async () => {
    await as.stop();
    await backend.close();
  });

  function app(options: ForwardTokenHeadersOptions) {
    const seen: { gateway?: GatewayContext } = {};
    const gateway = express();
    gateway.use(
      '/api',
      (req: Request, _res: Response, next: NextFunction) => {
        seen.gateway = gatewayContext(req);
        next();
      },
      requireToken({ policy }),
      introspect({ policy }),
      forwardTokenHeaders(options),
      createProxyMiddleware({
        target: backend.url,
        on: {
          proxyReq: (proxyReq, req) => {
            const body = req.gateway?.rawBody;
            if (body !== undefined) proxyReq.end(body);
          },
        },
      }),
    );
    gateway.use(problemJsonErrorHandler());
    return { gateway, seen };
  }

  it('headers: the values of the introspected token', async () => {
    const { gateway, seen } = app({ mode: 'headers', dateFormat: 'epoch' });
    const echo = (
      await supertest(gateway).get('/api/pet/7').set('Authorization', `Bearer ${token}`).set('Gateway-Token-Subject', 'admin').expect(200)
    ).body as Echo;
    const claims = seen.gateway?.token?.introspection as { exp: number; iat: number };
    expect(echo.headers).to.include({
      'gateway-token-subject': 'client2',
      'gateway-token-clientid': 'client2',
      'gateway-token-issuer': as.issuer,
      'gateway-token-audience': 'petstore-api',
      'gateway-token-scopes': 'read,write',
      'gateway-token-expire': String(claims.exp),
      'gateway-token-issuedat': String(claims.iat),
      'gateway-transaction-id': seen.gateway?.transactionId,
    });
    expect(Number.isNaN(Number(echo.headers['gateway-token-processtime'])), 'Gateway-Token-ProcessTime is a number').to.equal(false);
    expect(echo.headers).not.to.have.property('authorization');
    expect(JSON.stringify(echo)).not.to.include(token);
    expect(JSON.stringify(seen.gateway)).not.to.include(token);
  });

  it('json: Gateway-Token decodes to the token information with the transaction id', async () => {
    const { gateway, seen } = app({ mode: 'json' });
    const echo = (await supertest(gateway).get(`/api/pet?access_token=${token}`).expect(200)).body as Echo;
    expect(echo.url).to.equal('/pet');
    const document = JSON.parse(Buffer.from(String(echo.headers['gateway-token']), 'base64').toString('utf8')) as Record<string, unknown>;
    expect(document).to.include({ id: seen.gateway?.transactionId, subject: 'client2', clientId: 'client2', issuer: as.issuer });
    expect(document.scopes).to.deep.equal(['read', 'write']);
    expect(echo.headers).not.to.have.property('gateway-token-subject');
  });

  it('jws: Gateway-JWT verifies with the public key and carries the token information', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const { gateway, seen } = app({ mode: 'jws', jws: { key: privateKey, alg: 'RS256' } });
    const echo = (await supertest(gateway).get('/api/pet').set('Authorization', `Bearer ${token}`).expect(200)).body as Echo;
    const { payload } = await jwtVerify(String(echo.headers['gateway-jwt']), publicKey);
    expect(payload).to.include({ id: seen.gateway?.transactionId, subject: 'client2', clientId: 'client2' });
    expect(payload.audience).to.deep.equal(['petstore-api']);
  });

  it('a form-body token is taken out of the body relayed by http-proxy-middleware', async () => {
    const { gateway } = app({});
    const echo = (await supertest(gateway).post('/api/pet').type('form').send(`name=rex&access_token=${token}&status=sold`).expect(200))
      .body as Echo;
    expect(echo.body).to.equal('name=rex&status=sold');
    expect(echo.headers['content-length']).to.equal(String('name=rex&status=sold'.length));
    expect(echo.headers['gateway-token-subject']).to.equal('client2');
  });

  it('asReceived puts a form-body token back in the body, and nowhere else', async () => {
    const { gateway } = app({ originalToken: 'asReceived' });
    const echo = (await supertest(gateway).post('/api/pet').type('form').send(`name=rex&access_token=${token}`).expect(200)).body as Echo;
    expect(echo.body).to.equal(`name=rex&access_token=${token}`);
    expect(echo.headers).not.to.have.property('authorization');
  });
});
