import { createServer, type Server } from 'node:http';
import vm from 'node:vm';
import { expect } from 'chai';
import express from 'express';
import { express4 } from '../support/express4.js';
import { MemoryTransactionStore, monitoringConsole, type TransactionStore } from '../../src/index.js';
import { close, listen, makeRecord, parseCsv } from '../record/helpers.js';

const AUTH = { username: 'admin', password: 'correct horse battery' };
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
const GOOD = basic(AUTH.username, AUTH.password);
/** A page of the list API, as JSON. */
type ListBody = { items: Array<{ id: string }>; next?: string };
const list = async (res: Response) => (await res.json()) as ListBody;

describe('monitoringConsole', () => {
  it('has no open default: credentials options are required at factory time', () => {
    const store = new MemoryTransactionStore();
    expect(() => monitoringConsole({ store } as never)).to.throw(TypeError, /needs authenticate or basicAuth \(there is no open default\)/);
    expect(() => monitoringConsole({ store, basicAuth: { username: 'admin', password: '' } })).to.throw(TypeError, /basicAuth/);
    expect(() => monitoringConsole({ store, authenticate: 'yes' as never })).to.throw(TypeError, /authenticate/);
    expect(() => monitoringConsole({ basicAuth: AUTH } as never)).to.throw(
      TypeError,
      /^monitoringConsole: options\.store must implement TransactionStore/,
    );
    expect(() => monitoringConsole({ store, basicAuth: AUTH, realm: 'a"b' }))
      .to.throw(TypeError)
      .with.property('code', 'ERR_INVALID_OPTION');
    expect(() => monitoringConsole({ store, basicAuth: { username: 'a:b', password: 'x' } })).to.throw(
      TypeError,
      /^monitoringConsole: options\.basicAuth must be/,
    );
    expect(() => monitoringConsole({ store, basicAuth: AUTH, realm: 'a"b' })).to.throw(TypeError, /realm/);
    expect(() => monitoringConsole({ store, basicAuth: AUTH, loginThrottle: { windowMs: -1 } })).to.throw(
      TypeError,
      /loginThrottle\.windowMs/,
    );
  });

  for (const [flavour, factory] of [
    ['Express 5', express],
    ['Express 4', express4],
  ] as const) {
    describe(`mounted in ${flavour}`, () => {
      let server: Server | undefined;
      let base: string;
      const store = new MemoryTransactionStore();
      const api = { provider: 'Ente', name: 'PetStore', version: 1 };
      const records = [
        makeRecord({ code: 'TOKEN_FAILED', status: 400, api }),
        makeRecord({ code: 'AUTHORIZATION_DENIED', status: 403, api, sender: { subject: 'client3', clientId: 'client3' } }),
        makeRecord({ code: 'OK', status: 200, api, sender: { subject: 'client1', clientId: 'client1' } }),
      ];
      before(async () => {
        for (const r of records) store.save(r);
        const app = factory();
        app.use('/gateway/console', monitoringConsole({ store, basicAuth: AUTH, realm: 'Console' }));
        server = createServer(app);
        base = `${await listen(server)}/gateway/console`;
      });
      after(() => close(server));

      // As the console page calls its API: with the console's own request header.
      const get = (path: string, auth: string | null = GOOD) =>
        fetch(`${base}${path}`, {
          headers: { 'x-gateway-console': '1', ...(auth === null ? {} : { authorization: auth }) },
          redirect: 'manual',
        });

      it('answers 401 with a Basic challenge without credentials or with wrong ones, on every route', async () => {
        for (const [path, auth] of [
          ['/', null],
          ['/api/transactions', null],
          ['/console.js', basic('admin', 'wrong')],
          ['/api/transactions', basic('root', AUTH.password)],
          ['/api/transactions', 'Bearer abc'],
        ] as const) {
          const res = await get(path, auth);
          expect(res.status, path).to.equal(401);
          expect(res.headers.get('www-authenticate')).to.equal('Basic realm="Console", charset="UTF-8"');
          expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
          expect(await res.text()).not.to.include('tx-');
        }
      });

      it('refuses API calls without the X-Gateway-Console header (403 problem+json), not the page itself', async () => {
        const bare = await fetch(`${base}/api/transactions`, { headers: { authorization: GOOD } });
        expect(bare.status).to.equal(403);
        expect(bare.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(await bare.json()).to.include({ status: 403, gateway_status: 'protocol:GATEWAY-403' });
        for (const path of ['/API/transactions', '/api/transactions/', `/api/transactions/${records[0]!.id}`]) {
          expect((await fetch(`${base}${path}`, { headers: { authorization: GOOD } })).status, path).to.equal(403);
        }
        for (const path of ['/', '/console.js', '/console.css', '/favicon.svg']) {
          expect((await fetch(`${base}${path}`, { headers: { authorization: GOOD } })).status, path).to.equal(200);
        }
      });

      it('lists records newest first with filters and cursor paging', async () => {
        const all = await list(await get('/api/transactions'));
        expect(all.items.map((r: { id: string }) => r.id)).to.deep.equal(records.map((r) => r.id).reverse());
        const denied = await list(await get('/api/transactions?outcome=AUTHORIZATION_DENIED'));
        expect(denied.items.map((r: { id: string }) => r.id)).to.deep.equal([records[1]!.id]);
        const byClient = await list(await get('/api/transactions?clientId=client1&api=Ente/PetStore/v1&status=200'));
        expect(byClient.items.map((r: { id: string }) => r.id)).to.deep.equal([records[2]!.id]);
        const from = new Date(records[1]!.startedAt).toISOString();
        const since = await list(await get(`/api/transactions?from=${encodeURIComponent(from)}`));
        expect(since.items).to.have.length(2);
        const page1 = await list(await get('/api/transactions?limit=2'));
        expect(page1.items).to.have.length(2);
        const page2 = await list(await get(`/api/transactions?limit=2&cursor=${page1.next}`));
        expect(page2.items.map((r: { id: string }) => r.id)).to.deep.equal([records[0]!.id]);
        expect(page2.next).to.equal(undefined);
      });

      it('refuses bad query parameters with 400 problem+json', async () => {
        for (const query of [
          'outcome=NOPE',
          'status=abc',
          'limit=0',
          'limit=501',
          'from=yesterday',
          'cursor=zz',
          'status=200&status=201',
        ]) {
          const res = await get(`/api/transactions?${query}`);
          expect(res.status, query).to.equal(400);
          expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
          const body = await res.json();
          expect(body).to.include({ status: 400, title: 'Bad Request', type: 'https://httpstatuses.com/400' });
        }
      });

      it('serves the statistics of a window with the filters, and refuses a bad window', async () => {
        const from = records[0]!.startedAt;
        const to = records[2]!.startedAt;
        const res = await get(`/api/stats?from=${from}&to=${to}&bucketMs=1000`);
        expect(res.status).to.equal(200);
        const stats = (await res.json()) as {
          buckets: unknown[];
          totals: { count: number; byOutcome: Record<string, number> };
          top: Record<string, unknown>;
        };
        expect(stats.totals.count).to.equal(3);
        expect(stats.totals.byOutcome).to.deep.equal({ TOKEN_FAILED: 1, AUTHORIZATION_DENIED: 1, OK: 1 });
        expect(stats.buckets).to.have.length((to - from) / 1000 + 1);
        expect(stats.top['api']).to.deep.equal([{ value: 'Ente/PetStore/v1', count: 3 }]);
        expect(stats.top['clientId']).to.deep.equal([
          { value: 'client1', count: 1 },
          { value: 'client3', count: 1 },
        ]);
        const filtered = (await (await get(`/api/stats?from=${from}&to=${to}&outcome=OK`)).json()) as { totals: { count: number } };
        expect(filtered.totals.count).to.equal(1);
        // Default window: the last hour (these records are from 2023).
        expect(((await (await get('/api/stats')).json()) as { totals: { count: number } }).totals.count).to.equal(0);
        for (const query of [`from=${to}&to=${from}`, `from=0&to=${to}&bucketMs=1`, 'bucketMs=0', 'outcome=NOPE']) {
          const bad = await get(`/api/stats?${query}`);
          expect(bad.status, query).to.equal(400);
          expect(bad.headers.get('content-type')).to.match(/^application\/problem\+json/);
        }
      });

      it('exports the filter and window as CSV (chosen columns, formulas defused) and JSON Lines, up to a row limit', async () => {
        const csv = await get('/api/export?format=csv&columns=id,status,outcome,clientId,url');
        expect(csv.status).to.equal(200);
        expect(csv.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
        expect(csv.headers.get('content-disposition')).to.match(/^attachment; filename="transactions-[0-9TZ-]+\.csv"$/);
        const rows = parseCsv(await csv.text());
        expect(rows[0]).to.deep.equal(['id', 'status', 'outcome', 'clientId', 'url']);
        expect(rows.slice(1).map((r) => r[0])).to.deep.equal(records.map((r) => r.id).reverse());
        expect(rows[1]).to.deep.equal([records[2]!.id, '200', 'OK', 'client1', '/gateway/Ente/PetStore/v1/pet/1']);
        const denied = parseCsv(await (await get('/api/export?outcome=AUTHORIZATION_DENIED&columns=id')).text());
        expect(denied).to.deep.equal([['id'], [records[1]!.id]]);
        const limited = parseCsv(await (await get('/api/export?columns=id&limit=2')).text());
        expect(limited).to.have.length(3);
        const jsonl = await get('/api/export?format=jsonl&clientId=CLIENT');
        expect(jsonl.headers.get('content-type')).to.equal('application/x-ndjson; charset=utf-8');
        const lines = (await jsonl.text())
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as { id: string });
        expect(lines.map((l) => l.id)).to.deep.equal([records[2]!.id, records[1]!.id]);
        for (const query of ['format=xls', 'columns=id,password', 'limit=0', 'limit=100001', 'status=abc']) {
          const bad = await get(`/api/export?${query}`);
          expect(bad.status, query).to.equal(400);
          expect(bad.headers.get('content-type')).to.match(/^application\/problem\+json/);
        }
      });

      it('serves one record, or 404 problem+json', async () => {
        const one = await get(`/api/transactions/${records[1]!.id}`);
        expect(one.status).to.equal(200);
        expect(((await one.json()) as { outcome: { label: string } }).outcome.label).to.equal('Autorizzazione Negata');
        const none = await get('/api/transactions/unknown-id');
        expect(none.status).to.equal(404);
        expect(none.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(await none.json()).to.deep.equal({
          type: 'https://httpstatuses.com/404',
          title: 'Not Found',
          status: 404,
          detail: 'No transaction with this id',
        });
      });

      it('serves the page, its script and style under a strict CSP, with no inline code and no external URL', async () => {
        const page = await get('/');
        expect(page.status).to.equal(200);
        expect(page.headers.get('content-type')).to.match(/^text\/html/);
        const csp = page.headers.get('content-security-policy')!;
        expect(csp).to.include("default-src 'none'").and.include("script-src 'self'").and.include("style-src 'self'");
        expect(csp).not.to.include('unsafe');
        expect(page.headers.get('x-content-type-options')).to.equal('nosniff');
        const html = await page.text();
        expect(html).to.include('<script src="console.js" defer></script>');
        expect(html).not.to.match(/<script>|<style|\sstyle=|\son[a-z]+=/i);
        expect(html).not.to.match(/https?:\/\//);
        const js = await get('/console.js');
        expect(js.headers.get('content-type')).to.match(/^text\/javascript/);
        const source = await js.text();
        expect(() => new vm.Script(source)).not.to.throw();
        expect(source).to.include('"AUTHORIZATION_DENIED":{"it":"Autorizzazione Negata"');
        expect(source).to.include("'X-Gateway-Console': '1'");
        expect(source).not.to.match(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
        const css = await get('/console.css');
        expect(css.headers.get('content-type')).to.match(/^text\/css/);
        expect(await css.text()).not.to.match(/@import|url\(/);
      });

      it('redirects the mount path without a trailing slash, relatively', async () => {
        const res = await get('?outcome=OK');
        expect(res.status).to.equal(301);
        expect(res.headers.get('location')).to.equal('console/?outcome=OK');
      });
    });
  }

  describe('with an authenticate function', () => {
    let server: Server | undefined;
    let base: string;
    const seen: Array<string | undefined> = [];
    before(async () => {
      const store: TransactionStore = {
        save: () => undefined,
        get: async () => undefined,
        query: async () => {
          throw new Error('database offline');
        },
      };
      const app = express();
      app.use(
        '/c',
        monitoringConsole({
          store,
          authenticate: async (req, credentials) => {
            seen.push(credentials?.username);
            if (req.headers['x-explode'] !== undefined) throw new Error('idp down');
            return req.headers['x-team'] === 'ops';
          },
        }),
      );
      server = createServer(app);
      base = `${await listen(server)}/c`;
    });
    after(() => close(server));

    it('lets the function decide, fails closed when it throws, hides store failures', async () => {
      const header = { 'x-gateway-console': '1' };
      expect((await fetch(`${base}/api/transactions`, { headers: { ...header, authorization: basic('u', 'p') } })).status).to.equal(401);
      expect(seen).to.deep.equal(['u']);
      const exploded = await fetch(`${base}/api/transactions`, { headers: { ...header, 'x-team': 'ops', 'x-explode': '1' } });
      expect(exploded.status).to.equal(500);
      const failed = await fetch(`${base}/api/transactions`, { headers: { ...header, 'x-team': 'ops' } });
      expect(failed.status).to.equal(500);
      expect(await failed.text()).not.to.include('database offline');
      expect((await fetch(`${base}/api/transactions/x`, { headers: { ...header, 'x-team': 'ops' } })).status).to.equal(404);
      // A store without stats(): the console says so.
      const noStats = await fetch(`${base}/api/stats`, { headers: { ...header, 'x-team': 'ops' } });
      expect(noStats.status).to.equal(501);
      expect(noStats.headers.get('content-type')).to.match(/^application\/problem\+json/);
    });
  });
});

describe('monitoringConsole export over many pages', () => {
  let server: Server | undefined;
  let base: string;
  const store = new MemoryTransactionStore();
  before(async () => {
    for (let i = 0; i < 1_200; i++)
      store.save(
        makeRecord({ code: i % 2 ? 'OK' : 'BACKEND_5XX', status: i % 2 ? 200 : 502, sender: { subject: i % 3 ? '=cmd|calc' : 'alice' } }),
      );
    const app = express();
    app.use('/c', monitoringConsole({ store, basicAuth: AUTH }));
    server = createServer(app);
    base = `${await listen(server)}/c`;
  });
  after(() => close(server));

  it('streams every page of the query up to the limit, newest first, formulas defused', async () => {
    const headers = { 'x-gateway-console': '1', authorization: GOOD };
    const all = parseCsv(await (await fetch(`${base}/api/export?columns=id,subject,status&limit=1100`, { headers })).text());
    expect(all).to.have.length(1_101);
    const expected = store
      .query({ limit: 500 })
      .items.slice(0, 3)
      .map((r) => r.id);
    expect(all.slice(1, 4).map((r) => r[0])).to.deep.equal(expected);
    expect(new Set(all.slice(1).map((r) => r[0])).size).to.equal(1_100);
    expect(all.slice(1).every((r) => r[1] === 'alice' || r[1] === "'=cmd|calc")).to.equal(true);
    const errors = parseCsv(await (await fetch(`${base}/api/export?columns=id,status&status=5xx&outcome=BACKEND_5XX`, { headers })).text());
    expect(errors).to.have.length(601);
    expect(errors.slice(1).every((r) => r[1] === '502')).to.equal(true);
  });
});
