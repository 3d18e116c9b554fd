/**
 * `POST <admin>/forget` over real HTTP, against the admin router in front of a fake AdminTarget
 * that counts what it was asked to forget: the route, its body rules, and the refusals it shares
 * with `reset-caches` (credentials, the CSRF defence).
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { adminRouter, type AdminTarget, type AdminForgetSelector } from '../../src/gateway/admin.js';
import { parseForgetSelector } from '../../src/gateway/admin.js';
import { close, listen } from '../record/helpers.js';

const USER = { username: 'admin', password: 's3cret!' };
const AUTH = `Basic ${Buffer.from(`${USER.username}:${USER.password}`).toString('base64')}`;

describe('adminRouter: POST /forget', () => {
  let server: Server;
  let base: string;
  let asked: AdminForgetSelector[];

  before(async () => {
    asked = [];
    const target: AdminTarget = {
      resetAllCaches: () => Promise.reject(new Error('not in this test')),
      configState: { loadedAt: 0, apis: [] } as unknown as AdminTarget['configState'],
      forget(selector) {
        asked.push(selector);
        return selector.subject === 'client1' ? 3 : 0;
      },
    };
    const app = express();
    // A throttle wide enough for the refusals below not to lock the test's own address out.
    app.use('/gateway/admin', adminRouter(target, { basicAuth: USER, loginThrottle: { maxFailures: 1000 } }));
    server = createServer(app);
    base = await listen(server);
  });

  after(() => close(server));
  beforeEach(() => {
    asked.length = 0;
  });

  function forget(body: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${base}/gateway/admin/forget`, {
      method: 'POST',
      headers: { authorization: AUTH, 'x-gateway-console': '1', 'content-type': 'application/json', ...headers },
      body,
    });
  }

  it('forgets one subject or one client id and says how many results went', async () => {
    const bySubject = await forget(JSON.stringify({ subject: 'client1' }));
    expect(bySubject.status).to.equal(200);
    expect(bySubject.headers.get('cache-control')).to.equal('no-store');
    expect(await bySubject.json()).to.deep.equal({ forgotten: 3 });
    const byClient = await forget(JSON.stringify({ clientId: 'client2' }), { 'content-type': 'application/json; charset=utf-8' });
    expect(byClient.status).to.equal(200);
    expect(await byClient.json()).to.deep.equal({ forgotten: 0 });
    expect(asked).to.deep.equal([{ subject: 'client1' }, { clientId: 'client2' }]);
  });

  it('answers 400 problem+json to any other body, without forgetting anything', async () => {
    const bad: Array<[string, Record<string, string>?]> = [
      ['not json'],
      ['[]'],
      ['"client1"'],
      ['{}'],
      [JSON.stringify({ subject: 'a', clientId: 'b' })],
      [JSON.stringify({ subject: '' })],
      [JSON.stringify({ subject: 42 })],
      [JSON.stringify({ sub: 'client1' })],
      [JSON.stringify({ subject: 'x'.repeat(2000) })],
      [JSON.stringify({ subject: 'client1' }), { 'content-type': 'text/plain' }],
      [JSON.stringify({ subject: 'client1' }), { 'content-type': 'application/x-www-form-urlencoded' }],
      [JSON.stringify({ subject: 'y'.repeat(10_000) })],
    ];
    for (const [body, headers] of bad) {
      const res = await forget(body, headers);
      expect(res.status, body.slice(0, 40)).to.equal(400);
      expect(res.headers.get('content-type'), body.slice(0, 40)).to.match(/^application\/problem\+json/);
      expect((await res.json()) as { status: number }).to.include({ status: 400 });
    }
    expect(asked).to.deep.equal([]);
  });

  it('refuses without credentials or with wrong ones (401, Basic challenge)', async () => {
    for (const authorization of [undefined, `Basic ${Buffer.from('admin:wrong').toString('base64')}`]) {
      const res = await fetch(`${base}/gateway/admin/forget`, {
        method: 'POST',
        headers: {
          'x-gateway-console': '1',
          'content-type': 'application/json',
          ...(authorization === undefined ? {} : { authorization }),
        },
        body: JSON.stringify({ subject: 'client1' }),
      });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(/^Basic realm="Gateway admin"/);
    }
    expect(asked).to.deep.equal([]);
  });

  it('refuses what a page of another origin or site could send (403 ERR_ADMIN_ORIGIN_REFUSED)', async () => {
    const refusals: Array<Record<string, string>> = [
      // A form cannot add the custom header.
      { 'x-gateway-console': '' },
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of refusals) {
      const sent: Record<string, string> = {
        authorization: AUTH,
        'x-gateway-console': '1',
        'content-type': 'application/json',
        ...headers,
      };
      if (headers['x-gateway-console'] === '') delete sent['x-gateway-console'];
      const res = await fetch(`${base}/gateway/admin/forget`, {
        method: 'POST',
        headers: sent,
        body: JSON.stringify({ subject: 'client1' }),
      });
      expect(res.status, JSON.stringify(headers)).to.equal(403);
      expect(await res.json(), JSON.stringify(headers)).to.include({ status: 403 });
    }
    expect(asked).to.deep.equal([]);
    // The same request from the router's own origin goes through.
    expect((await forget(JSON.stringify({ subject: 'client1' }), { origin: base, 'sec-fetch-site': 'same-origin' })).status).to.equal(200);
  });

  it('is not served when the target cannot forget', async () => {
    const app = express();
    app.use(
      '/admin',
      adminRouter(
        { resetAllCaches: () => Promise.reject(new Error('no')), configState: {} as AdminTarget['configState'] },
        { basicAuth: USER },
      ),
    );
    const other = createServer(app);
    const url = await listen(other);
    try {
      const res = await fetch(`${url}/admin/forget`, {
        method: 'POST',
        headers: { authorization: AUTH, 'x-gateway-console': '1', 'content-type': 'application/json' },
        body: '{"subject":"client1"}',
      });
      expect(res.status).to.equal(404);
    } finally {
      await close(other);
    }
  });

  it('parseForgetSelector: exactly one of subject or clientId, a short non-empty string', () => {
    expect(parseForgetSelector('{"subject":"s"}')).to.deep.equal({ subject: 's' });
    expect(parseForgetSelector('{"clientId":"c"}')).to.deep.equal({ clientId: 'c' });
    expect(parseForgetSelector('{"subject":"s","extra":1}')).to.be.a('string');
    expect(parseForgetSelector('{"__proto__":{"subject":"s"}}')).to.be.a('string');
  });
});
