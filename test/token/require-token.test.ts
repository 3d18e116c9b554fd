import { createConnection } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { express4 } from '../support/express4.js';
import { requireToken } from '../../src/token/require-token.js';
import { startTestApp, type TestApp } from './helpers.js';

const MISSING_CHALLENGE =
  'Bearer realm="PetStore IdP", error="invalid_request", error_description="The request is missing a required token parameter"';

/** Sends raw HTTP (for requests supertest cannot make, such as two Authorization headers). */
function rawRequest(url: string, lines: string[]): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) });
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('utf8')));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

for (const [label, factory] of [
  ['Express 5', express],
  ['Express 4', express4],
] as const) {
  describe(`requireToken (RFC 6750 extraction) on ${label}`, () => {
    let app: TestApp;
    before(async () => {
      app = await startTestApp({ express: factory, realm: 'PetStore IdP' });
    });
    after(() => app.close());

    it('takes the token from the Authorization header, scheme in any case', async () => {
      const res = await request(app.url).get('/pets').set('Authorization', 'bEaReR abc.DEF-123_~+/==');
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ method: 'header', policy: 'PetStore IdP' });
    });

    it('takes the token from a urlencoded body without a body parser, and leaves the body for later handlers', async () => {
      const res = await request(app.url).post('/pets').type('form').send('name=rex&access_token=tok-123&tag=a&tag=b');
      expect(res.status).to.equal(200);
      expect(res.body.method).to.equal('body');
      expect(res.body.body).to.deep.equal({ name: 'rex', access_token: 'tok-123', tag: ['a', 'b'] });
      expect(res.body.rawBody).to.equal('name=rex&access_token=tok-123&tag=a&tag=b');
    });

    it('takes the token from the query', async () => {
      const res = await request(app.url).get('/pets?x=1&access_token=tok-q');
      expect(res.status).to.equal(200);
      expect(res.body.method).to.equal('query');
    });

    it('answers 400 problem+json with the documented headers when there is no token', async () => {
      const res = await request(app.url).get('/pets').set('Authorization', 'Basic dXNlcjpwdw==');
      expect(res.status).to.equal(400);
      expect(res.headers['content-type']).to.equal('application/problem+json');
      expect(res.headers['www-authenticate']).to.equal(MISSING_CHALLENGE);
      expect(res.headers['gateway-transaction-id']).to.match(/^[0-9a-f-]{36}$/);
      expect(res.headers['server']).to.equal('Gateway');
      expect(JSON.parse(res.text)).to.deep.equal({
        type: 'https://httpstatuses.com/400',
        title: 'Bad Request',
        status: 400,
        detail: 'Token non presente',
        gateway_status: 'protocol:GATEWAY-1366',
      });
      const context = app.contexts.at(-1)!;
      expect(context.error).to.deep.equal({
        code: 'ERR_TOKEN_MISSING',
        status: 400,
        gatewayStatus: 'protocol:GATEWAY-1366',
        outcome: 'TOKEN_FAILED',
        detail: 'Token non presente',
      });
      expect(res.headers['gateway-transaction-id']).to.equal(context.transactionId);
    });

    it('answers 400 invalid_request when the token comes by two methods', async () => {
      const res = await request(app.url).post('/pets?access_token=q').set('Authorization', 'Bearer h').type('form').send('access_token=b');
      expect(res.status).to.equal(400);
      expect(res.headers['www-authenticate']).to.equal(
        'Bearer realm="PetStore IdP", error="invalid_request", error_description="The request uses more than one method to send the token"',
      );
      expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1366');
      expect(res.body.detail).to.equal('Token non presente: il token è stato inviato con più di un metodo');
      const header = await request(app.url).get('/pets?access_token=q').set('Authorization', 'Bearer h');
      expect(header.status).to.equal(400);
      expect(header.headers['www-authenticate']).to.contain('more than one method');
    });

    for (const [what, value] of [
      ['Bearer without a token', 'Bearer'],
      ['Bearer and spaces only', 'Bearer    '],
      ['a token with a space inside', 'Bearer abc def'],
      ['a token with bad characters', 'Bearer abc$def'],
      ['two credentials in one value', 'Bearer abc, Bearer def'],
    ]) {
      it(`answers 400 invalid_request for ${what}`, async () => {
        const res = await request(app.url).get('/pets').set('Authorization', value!);
        expect(res.status).to.equal(400);
        expect(res.headers['www-authenticate']).to.equal(
          'Bearer realm="PetStore IdP", error="invalid_request", error_description="The request has a malformed token parameter"',
        );
        expect(res.body.gateway_status).to.equal('protocol:GATEWAY-1366');
      });
    }

    it('answers 400 for two Authorization headers', async () => {
      const response = await rawRequest(app.url, [
        'GET /pets HTTP/1.1',
        'Host: 127.0.0.1',
        'Authorization: Bearer one',
        'Authorization: Bearer two',
        'Connection: close',
      ]);
      expect(response).to.match(/^HTTP\/1\.1 400 /);
      expect(response).to.contain('error="invalid_request"');
      expect(response).to.contain('malformed token parameter');
    });

    it('answers 400 for a repeated or empty access_token parameter', async () => {
      expect((await request(app.url).get('/pets?access_token=a&access_token=b')).status).to.equal(400);
      expect((await request(app.url).get('/pets?access_token=')).status).to.equal(400);
    });

    it('does not read the token from the body of a GET, nor from a JSON body', async () => {
      const json = await request(app.url).post('/pets').send({ access_token: 'x' });
      expect(json.status).to.equal(400);
      expect(json.body.detail).to.equal('Token non presente');
      const get = await request(app.url).get('/pets').type('form').send('access_token=x');
      expect(get.status).to.equal(400);
      expect(get.body.detail).to.equal('Token non presente');
    });

    it('refuses a form body larger than the bound with 413, not 500', async () => {
      const big = `access_token=x&pad=${'a'.repeat(1024 * 1024)}`;
      const res = await request(app.url).post('/pets').type('form').send(big);
      expect(res.status).to.equal(413);
      expect(res.headers['content-type']).to.equal('application/problem+json');
      expect(res.body.gateway_status).to.equal('protocol:GATEWAY-413');
    });
  });
}

describe('requireToken with a body parser that already ran', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ realm: 'r', before: [express.urlencoded({ extended: false })] });
  });
  after(() => app.close());

  it('reads req.body.access_token', async () => {
    const res = await request(app.url).post('/pets').type('form').send('access_token=abc&x=1');
    expect(res.status).to.equal(200);
    expect(res.body.method).to.equal('body');
    expect(res.body.body).to.deep.equal({ access_token: 'abc', x: '1' });
  });
});

describe('requireToken after it, a body parser still works', () => {
  it('express.urlencoded() after requireToken sees the fields and does not hang', async () => {
    const app = express();
    app.post('/echo', requireToken({ policy: 'r' }), express.urlencoded({ extended: false }), (req, res) => {
      res.json(req.body);
    });
    const res = await request(app).post('/echo').type('form').send('access_token=abc&x=1');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ access_token: 'abc', x: '1' });
  });
});

describe('requireToken options', () => {
  it('rejects bad options at factory time, naming them', () => {
    expect(() => requireToken({ methods: [] })).to.throw(TypeError, /methods/);
    expect(() => requireToken({ methods: ['cookie' as 'header'] })).to.throw(TypeError, /methods/);
    expect(() => requireToken({ maxBodySize: -1 })).to.throw(TypeError, /maxBodySize/);
    expect(() => requireToken({ maxBodyFields: 0 })).to.throw(TypeError, /maxBodyFields/);
    expect(() => requireToken({ maxTokenLength: 1.5 })).to.throw(TypeError, /maxTokenLength/);
    expect(() => requireToken({ policy: 42 as unknown as string })).to.throw(TypeError, /policy/);
  });

  it('honours maxBodyFields and maxTokenLength, for every method, keeping repeated fields as arrays', async () => {
    const app = await startTestApp({ realm: 'r', extraction: { maxBodyFields: 4, maxTokenLength: 8 } });
    try {
      const ok = await request(app.url).post('/pets').type('form').send('tag=a&&tag=b&tag=c&access_token=12345678&');
      expect(ok.status).to.equal(200);
      expect(ok.body.body).to.deep.equal({ tag: ['a', 'b', 'c'], access_token: '12345678' });
      const fields = await request(app.url).post('/pets').type('form').send('a=1&b=2&c=3&d=4&access_token=1');
      expect(fields.status).to.equal(413);
      for (const long of [
        request(app.url).post('/pets').type('form').send('access_token=123456789'),
        request(app.url).get('/pets?access_token=123456789'),
        request(app.url).get('/pets').set('Authorization', 'Bearer 123456789'),
      ]) {
        const res = await long;
        expect(res.status).to.equal(400);
        expect(res.headers['www-authenticate']).to.equal(
          'Bearer realm="r", error="invalid_request", error_description="The request has a malformed token parameter"',
        );
      }
    } finally {
      await app.close();
    }
  });

  it('honours methods: a query token is not accepted when only the header is', async () => {
    const app = await startTestApp({ realm: 'r', extraction: { methods: ['header'] } });
    try {
      const res = await request(app.url).get('/pets?access_token=abc');
      expect(res.status).to.equal(400);
      expect(res.body.detail).to.equal('Token non presente');
    } finally {
      await app.close();
    }
  });
});
