/**
 * forwardTokenHeaders relayed by http-proxy-middleware (and by an own handler) to a real backend,
 * with the token context set by a stand-in for the validation chain (the real chain is in
 * forward-chain.test.ts).
 */
import { request as httpRequest } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { generateKeyPair, jwtVerify } from 'jose';
import supertest from 'supertest';
import { createTokenContext, gatewayContext } from '../../../src/context.js';
import type { GatewayContext, TokenMethod } from '../../../src/context.js';
import { forwardTokenHeaders } from '../../../src/token/forward/index.js';
import type { ForwardTokenHeadersOptions } from '../../../src/token/forward/index.js';
import { startEchoBackend } from './helpers.js';
import type { Echo } from './helpers.js';

const RAW = 'opaque-TOKEN-value-42';
const EXP = 1795273445;
const IAT = 1795269845;

/** Stands in for requireToken + introspect: stores the token and its normalized info. */
function fakeValidation(method: TokenMethod) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const token = createTokenContext(RAW, method, 'demo-idp');
    token.info = {
      issuer: 'http://127.0.0.1:9000',
      subject: 'client1',
      clientId: 'client1',
      username: 'mario',
      audience: ['petstore-api', 'other-api'],
      scopes: ['read', 'write'],
      roles: ['reader'],
      expiresAt: EXP,
      issuedAt: IAT,
      notBefore: IAT,
      jti: 'jti-1',
      userInfo: { fullName: 'Mario Rossi', firstName: 'Mario', familyName: 'Rossi', eMail: 'mario@example.org' },
    };
    token.processTimeMs = 12;
    gatewayContext(req).token = token;
    next();
  };
}

describe('forwardTokenHeaders', () => {
  let backend: { url: string; close: () => Promise<void> };
  before(async () => {
    backend = await startEchoBackend();
  });
  after(async () => {
    await backend.close();
  });

  /** An app: fake validation, forwarding, capture of req.gateway, relay by http-proxy-middleware. */
  function proxied(options: ForwardTokenHeadersOptions, method: TokenMethod = 'header') {
    const seen: { gateway?: GatewayContext } = {};
    const app = express();
    app.use(
      '/api',
      fakeValidation(method),
      forwardTokenHeaders(options),
      (req: Request, _res: Response, next: NextFunction) => {
        seen.gateway = req.gateway;
        next();
      },
      createProxyMiddleware({ target: backend.url }),
    );
    return { app, seen };
  }

  it('headers mode: the backend receives every Gateway-Token-* header and no token', async () => {
    const { app, seen } = proxied({});
    const res = await supertest(app).get('/api/pet/1?x=1').set('Authorization', `Bearer ${RAW}`).expect(200);
    const echo = res.body as Echo;
    expect(echo.url).to.equal('/pet/1?x=1');
    expect(echo.headers).to.include({
      'gateway-token-subject': 'client1',
      'gateway-token-issuer': 'http://127.0.0.1:9000',
      'gateway-token-clientid': 'client1',
      'gateway-token-username': 'mario',
      'gateway-token-audience': 'petstore-api,other-api',
      'gateway-token-scopes': 'read,write',
      'gateway-token-roles': 'reader',
      'gateway-token-expire': new Date(EXP * 1000).toISOString(),
      'gateway-token-issuedat': new Date(IAT * 1000).toISOString(),
      'gateway-token-nottobeusedbefore': new Date(IAT * 1000).toISOString(),
      'gateway-token-jti': 'jti-1',
      'gateway-token-fullname': 'Mario Rossi',
      'gateway-token-firstname': 'Mario',
      'gateway-token-familyname': 'Rossi',
      'gateway-token-email': 'mario@example.org',
      'gateway-token-processtime': '12',
      'gateway-transaction-id': seen.gateway?.transactionId,
    });
    expect(echo.headers).not.to.have.property('authorization');
    expect(JSON.stringify(echo)).not.to.include(RAW);
    expect(seen.gateway?.outgoing.headers).to.include({
      'Gateway-Token-Subject': 'client1',
      'Gateway-Transaction-ID': seen.gateway?.transactionId,
    });
  });

  it('drops client-sent Gateway-* headers: a spoofed Gateway-Token-Subject never reaches the backend', async () => {
    const { app } = proxied({ mode: 'json' });
    const res = await supertest(app)
      .get('/api/pet')
      .set('Authorization', `Bearer ${RAW}`)
      .set('Gateway-Token-Subject', 'admin')
      .set('Gateway-Token-Roles', 'admin')
      .set('Gateway-Transaction-ID', 'forged')
      .set('X-Other', 'kept')
      .expect(200);
    const echo = res.body as Echo;
    expect(echo.headers).not.to.have.property('gateway-token-subject');
    expect(echo.headers).not.to.have.property('gateway-token-roles');
    expect(echo.headers['gateway-transaction-id']).not.to.equal('forged');
    expect(echo.headers['x-other']).to.equal('kept');
  });

  it('removes access_token from the relayed URL, keeping the other parameters as sent', async () => {
    const { app } = proxied({}, 'query');
    const res = await supertest(app).get(`/api/pet?a=1&access_token=${RAW}&b=x%20y`).expect(200);
    expect((res.body as Echo).url).to.equal('/pet?a=1&b=x%20y');
  });

  it('json mode: base64 JSON in Gateway-Token with id = transaction id', async () => {
    const { app, seen } = proxied({ mode: 'json', dateFormat: 'epoch' });
    const res = await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200);
    const echo = res.body as Echo;
    expect(echo.headers).not.to.have.property('gateway-token-subject');
    const document = JSON.parse(Buffer.from(String(echo.headers['gateway-token']), 'base64').toString('utf8')) as Record<string, unknown>;
    expect(document).to.deep.equal({
      id: seen.gateway?.transactionId,
      subject: 'client1',
      issuer: 'http://127.0.0.1:9000',
      clientId: 'client1',
      username: 'mario',
      audience: ['petstore-api', 'other-api'],
      scopes: ['read', 'write'],
      roles: ['reader'],
      expire: EXP,
      issuedAt: IAT,
      notToBeUsedBefore: IAT,
      jti: 'jti-1',
      fullName: 'Mario Rossi',
      firstName: 'Mario',
      familyName: 'Rossi',
      eMail: 'mario@example.org',
      processTime: 12,
    });
  });

  it('jws mode: a compact JWS in Gateway-JWT that verifies with the public key', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const { app, seen } = proxied({ mode: 'jws', jws: { key: privateKey, alg: 'ES256', kid: 'gw-1' } });
    const res = await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200);
    const jwt = String((res.body as Echo).headers['gateway-jwt']);
    const { payload, protectedHeader } = await jwtVerify(jwt, publicKey, { algorithms: ['ES256'] });
    expect(protectedHeader).to.deep.equal({ alg: 'ES256', typ: 'JWT', kid: 'gw-1' });
    expect(payload).to.include({ id: seen.gateway?.transactionId, subject: 'client1', clientId: 'client1' });
    expect(payload.audience).to.deep.equal(['petstore-api', 'other-api']);
    const other = await generateKeyPair('ES256');
    await jwtVerify(jwt, other.publicKey).then(
      () => expect.fail('verified with the wrong key'),
      (e: Error) => expect(e.name).to.equal('JWSSignatureVerificationFailed'),
    );
  });

  it('several modes at once, with the http date format', async () => {
    const { app } = proxied({ mode: ['headers', 'json'], dateFormat: 'http' });
    const echo = (await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200)).body as Echo;
    expect(echo.headers['gateway-token-expire']).to.equal(new Date(EXP * 1000).toUTCString());
    expect(echo.headers).to.have.property('gateway-token');
  });

  describe('original-token modes', () => {
    it('asReceived puts a query token back in the query', async () => {
      const { app } = proxied({ originalToken: 'asReceived' }, 'query');
      const echo = (await supertest(app).get(`/api/pet?access_token=${RAW}&a=1`).expect(200)).body as Echo;
      expect(echo.url).to.equal(`/pet?a=1&access_token=${RAW}`);
      expect(echo.headers).not.to.have.property('authorization');
    });

    it('asReceived puts a header token back in Authorization, recorded redacted', async () => {
      const { app, seen } = proxied({ originalToken: 'asReceived' });
      const echo = (await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200)).body as Echo;
      expect(echo.headers.authorization).to.equal(`Bearer ${RAW}`);
      expect(seen.gateway?.outgoing.headers.Authorization).to.equal('Bearer [redacted]');
      expect(JSON.stringify(seen.gateway)).not.to.include(RAW);
    });

    it('authorizationHeader moves a query token to Authorization: Bearer', async () => {
      const { app } = proxied({ originalToken: 'authorizationHeader' }, 'query');
      const echo = (await supertest(app).get(`/api/pet?access_token=${RAW}`).expect(200)).body as Echo;
      expect(echo.url).to.equal('/pet');
      expect(echo.headers.authorization).to.equal(`Bearer ${RAW}`);
    });

    it('query moves a header token to the access_token parameter', async () => {
      const { app } = proxied({ originalToken: 'query' });
      const echo = (await supertest(app).get('/api/pet?a=1').set('Authorization', `Bearer ${RAW}`).expect(200)).body as Echo;
      expect(echo.url).to.equal(`/pet?a=1&access_token=${RAW}`);
      expect(echo.headers).not.to.have.property('authorization');
    });

    it('a custom header carries the bare token; a client-sent copy of it is dropped first', async () => {
      const { app, seen } = proxied({ originalToken: { header: 'X-Access-Token' } });
      const echo = (await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200)).body as Echo;
      expect(echo.headers['x-access-token']).to.equal(RAW);
      expect(echo.headers).not.to.have.property('authorization');
      expect(seen.gateway?.outgoing.headers['X-Access-Token']).to.equal('[redacted]');
    });

    it("'none' (the configuration file's spelling) forwards no token, as false does", async () => {
      for (const originalToken of ['none', false] as const) {
        const { app } = proxied({ originalToken });
        const echo = (
          await supertest(app)
            .get('/api/pet?access_token=' + RAW)
            .expect(200)
        ).body as Echo;
        expect(echo.url, String(originalToken)).to.equal('/pet');
        expect(JSON.stringify(echo.headers), String(originalToken)).not.to.include(RAW);
      }
    });
  });

  it('percent-encodes a value that is not printable ASCII instead of breaking the relay', async () => {
    const app = express();
    app.use(
      '/api',
      (req: Request, _res: Response, next: NextFunction) => {
        const token = createTokenContext(RAW, 'header');
        token.info = { subject: 'Nicolò\r\nX-Injected: 1', audience: [], scopes: [], roles: [], userInfo: {} };
        gatewayContext(req).token = token;
        next();
      },
      forwardTokenHeaders(),
      createProxyMiddleware({ target: backend.url }),
    );
    const echo = (await supertest(app).get('/api/pet').set('Authorization', `Bearer ${RAW}`).expect(200)).body as Echo;
    expect(echo.headers['gateway-token-subject']).to.equal(encodeURIComponent('Nicolò\r\nX-Injected: 1'));
    expect(echo.headers).not.to.have.property('x-injected');
  });

  it('with an own relay handler copying req.headers, req.url and the buffered form body', async () => {
    const app = express();
    app.use(
      '/api',
      (req: Request, _res: Response, next: NextFunction) => {
        // What requireToken does with a form-body token: it buffers the body and keeps the bytes.
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const gateway = gatewayContext(req);
          gateway.rawBody = Buffer.concat(chunks);
          gateway.token = createTokenContext(RAW, 'body');
          gateway.token.info = { subject: 'client1', audience: [], scopes: [], roles: [], userInfo: {} };
          next();
        });
      },
      forwardTokenHeaders(),
      (req: Request, res: Response) => {
        const target = new URL(req.url, backend.url);
        const body = req.gateway?.rawBody ?? Buffer.alloc(0);
        const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
          res.status(answer.statusCode ?? 502).type(answer.headers['content-type'] ?? 'application/octet-stream');
          answer.pipe(res);
        });
        out.end(body);
      },
    );
    const res = await supertest(app).post('/api/pet?a=1').type('form').send(`name=rex&access_token=${RAW}&tag=a`).expect(200);
    const echo = res.body as Echo;
    expect(echo.body).to.equal('name=rex&tag=a');
    expect(echo.headers['content-length']).to.equal(String('name=rex&tag=a'.length));
    expect(echo.headers['gateway-token-subject']).to.equal('client1');
    expect(JSON.stringify(echo)).not.to.include(RAW);
  });

  it('validates its options at factory time', () => {
    expect(() => forwardTokenHeaders({ mode: 'xml' as never })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.mode must be one of headers, json, jws$/,
    );
    expect(() => forwardTokenHeaders({ mode: ['headers', 'xml'] as never })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.mode\[1\] must be one of/,
    );
    expect(() => forwardTokenHeaders({ mode: 'jws' })).to.throw(TypeError, /^forwardTokenHeaders: options\.jws must give a signing key/);
    expect(() => forwardTokenHeaders({ originalToken: { header: 'bad header' } })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.originalToken\.header must be a header name/,
    );
    expect(() => forwardTokenHeaders({ originalToken: 'never' as never })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.originalToken must be false, none,/,
    );
    expect(() => forwardTokenHeaders({ dateFormat: 'yyyy' as never })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.dateFormat must be iso, epoch, epochMillis, http or a function$/,
    );
    expect(() => forwardTokenHeaders({ headerNames: { subject: 'a b' } })).to.throw(
      TypeError,
      /^forwardTokenHeaders: options\.headerNames\.subject must be a header name$/,
    );
    expect(() => forwardTokenHeaders({ transactionIdHeader: '' }))
      .to.throw(TypeError)
      .with.property('code', 'ERR_INVALID_OPTION');
    expect(() => forwardTokenHeaders({ originalToken: 'none', transactionIdHeader: false })).not.to.throw();
  });
});
