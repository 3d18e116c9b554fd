/**
 * Finding 5: the console and the admin routes must not be reachable from content relayed through an
 * API, nor from a same-site page on another port, and admin logins must not be guessable at speed.
 * Played over real HTTP: the example's own server (`startGatewayServer`, APIs and admin on their own
 * listeners), a host that mounts `gateway.adminRouter` in the app that relays its APIs, and a hostile
 * backend whose HTML page runs in headless Chromium with an operator's credentials at hand.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import express from 'express';
import { chromium, type Browser } from 'playwright-core';
import { startGatewayServer, type GatewayServer } from '../../examples/petstore/gateway-server.js';
import { createGateway, type Gateway, type GatewayConfig } from '../../src/index.js';
import { close, listen } from '../gateway/helpers.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const PASSWORD = 'operator-password-1';
const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
const OPERATOR = basic('admin', PASSWORD);

/** What the page of the hostile backend does with the operator's browser. */
function hostilePage(adminUrl: string): string {
  return `<!doctype html><html><head><title>pending</title></head><body><script>
(async function () {
  var out = {};
  async function attempt(name, url, init) {
    try { var res = await fetch(url, init); out[name] = res.status; } catch (e) { out[name] = 'refused'; }
  }
  var headers = { 'X-Gateway-Console': '1', accept: 'application/json' };
  await attempt('consoleHere', '/gateway/console/api/transactions', { credentials: 'include', headers: headers });
  await attempt('resetHere', '/gateway/admin/reset-caches', { method: 'POST', credentials: 'include', headers: headers });
  await attempt('consoleThere', ${JSON.stringify(adminUrl)} + '/gateway/console/api/transactions', { credentials: 'include', headers: headers });
  await attempt('resetThere', ${JSON.stringify(adminUrl)} + '/gateway/admin/reset-caches', { method: 'POST', credentials: 'include', headers: headers });
  document.title = 'done ' + JSON.stringify(out);
})();
</script></body></html>`;
}

/** A page that posts a form to the admin origin as soon as it loads (a classic CSRF). */
function formPage(adminUrl: string): string {
  return `<!doctype html><html><head><title>form</title></head><body>
<form id="f" method="POST" action="${adminUrl}/gateway/admin/reset-caches"><input name="x" value="1"></form>
<script>document.getElementById('f').submit();</script></body></html>`;
}

/** A backend that serves attacker-controlled HTML (the admin URL is filled in once known). */
async function hostileBackend(): Promise<{ url: string; server: Server; adminUrl: string }> {
  const state = { url: '', server: undefined as unknown as Server, adminUrl: '' };
  state.server = createServer((req, res) => {
    const html = req.url === '/form.html' ? formPage(state.adminUrl) : hostilePage(state.adminUrl);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  state.url = await listen(state.server);
  return state;
}

/** One request over node:http, from a chosen local address (the throttle is per client address). */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {}, localAddress: options.localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function pagesConfig(backend: string): GatewayConfig {
  return { apis: [{ provider: 'Ente', name: 'Pages', version: 1, backend: { url: backend } }] };
}

describe('security: console and admin are out of reach of relayed content', function () {
  this.timeout(60_000);

  describe('(a) the example server: APIs and admin on their own listeners', () => {
    let backend: Awaited<ReturnType<typeof hostileBackend>>;
    let server: GatewayServer;
    let dir: string;
    let browser: Browser | undefined;

    before(async () => {
      backend = await hostileBackend();
      dir = await mkdtemp(path.join(tmpdir(), 'console-origin-'));
      const configFile = path.join(dir, 'gateway.config.json');
      await writeFile(configFile, JSON.stringify(pagesConfig(backend.url)));
      server = await startGatewayServer({ configFile, port: 0, adminPort: 0, adminPassword: PASSWORD });
      backend.adminUrl = server.adminUrl;
    });
    after(async () => {
      await browser?.close();
      await server?.stop();
      await close(backend?.server);
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('serves the relayed page on the API origin, and neither console data nor ResetAllCaches there, even with credentials', async () => {
      const page = await fetch(`${server.url}/gateway/Ente/Pages/v1/page.html`);
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      const before = server.gateway.configState.loadedAt;
      // Everything a page on the API origin can send: cached credentials, its own origin, the custom header.
      const sameOrigin = { authorization: OPERATOR, origin: server.url, 'sec-fetch-site': 'same-origin', 'x-gateway-console': '1' };
      const records = await fetch(`${server.url}/gateway/console/api/transactions`, { headers: sameOrigin });
      expect(records.status).to.equal(404);
      expect(await records.text()).not.to.include('/gateway/Ente/Pages');
      const reset = await fetch(`${server.url}/gateway/admin/reset-caches`, { method: 'POST', headers: sameOrigin });
      expect(reset.status).to.equal(404);
      expect(server.gateway.configState.loadedAt).to.equal(before);
      // On the admin listener the same credentials work, as the operator uses them.
      const own = { authorization: OPERATOR, 'x-gateway-console': '1' };
      expect((await fetch(`${server.adminUrl}/gateway/console/api/transactions`, { headers: own })).status).to.equal(200);
    });

    it('a call with neither credentials nor the console header gets the 401 challenge; one from another origin or site, 403', async () => {
      const admin = server.adminUrl;
      for (const [method, route] of [
        ['GET', '/gateway/console/api/transactions'],
        ['GET', '/gateway/operators/audit'],
        ['GET', '/gateway/admin/status'],
        ['POST', '/gateway/admin/reset-caches'],
      ] as const) {
        // As curl sends it: no Origin, no Sec-Fetch-Site, no cookie.
        const bare = await send(`${admin}${route}`, { method });
        expect(bare.status, `${method} ${route}`).to.equal(401);
        expect(bare.headers['www-authenticate'], `${method} ${route}`).to.match(/^Basic realm="[^"]+", charset="UTF-8"$/);
        expect(bare.headers['content-type']).to.match(/^application\/problem\+json/);
        // The user's own navigation (a typed address) is no other origin either.
        expect((await send(`${admin}${route}`, { method, headers: { 'sec-fetch-site': 'none' } })).status).to.equal(401);
        for (const headers of [
          { origin: 'http://attacker.example' },
          { origin: 'null' },
          { 'sec-fetch-site': 'cross-site' },
          { 'sec-fetch-site': 'same-site' },
          // Credentials (a cached Basic login, a cookie) without the header: the CSRF refusal as before.
          { authorization: OPERATOR },
          { cookie: 'theme=dark' },
        ] as Array<Record<string, string>>) {
          const refused = await send(`${admin}${route}`, { method, headers });
          expect(refused.status, `${method} ${route} ${JSON.stringify(headers)}`).to.equal(403);
          expect((JSON.parse(refused.body) as { gateway_status: string }).gateway_status).to.equal('protocol:GATEWAY-403');
        }
      }
    });

    it('(d) in headless Chromium, the relayed page can neither read records nor reset the caches, here or on the admin origin', async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (install it or set CHROMIUM_PATH)`);
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
      // The operator's browser: it answers any Basic challenge with the admin credentials.
      const context = await browser.newContext({ httpCredentials: { username: 'admin', password: PASSWORD } });
      const page = await context.newPage();
      const before = server.gateway.configState.loadedAt;
      const resets: number[] = [];
      page.on('response', (res) => {
        if (res.url().endsWith('/reset-caches')) resets.push(res.status());
      });
      await page.goto(`${server.url}/gateway/Ente/Pages/v1/page.html`);
      let title = '';
      for (let i = 0; i < 200 && !title.startsWith('done'); i++) {
        await new Promise((r) => setTimeout(r, 25));
        title = await page.title();
      }
      const out = JSON.parse(title.slice('done '.length)) as Record<string, number | string>;
      expect(out['consoleHere']).to.equal(404);
      expect(out['resetHere']).to.equal(404);
      // Cross-origin with the custom header: the preflight gets no CORS approval, so nothing is sent.
      expect(out['consoleThere']).to.equal('refused');
      expect(out['resetThere']).to.equal('refused');
      // A plain form post (no custom header possible) from the relayed page to the admin origin.
      const answer = page.waitForResponse((res) => res.url().endsWith('/gateway/admin/reset-caches'));
      await page.goto(`${server.url}/gateway/Ente/Pages/v1/form.html`);
      expect((await answer).status()).to.equal(403);
      expect(
        resets.every((s) => s !== 200),
        `reset answers ${resets.join(',')}`,
      ).to.equal(true);
      expect(server.gateway.configState.loadedAt).to.equal(before);
    });
  });

  describe('(b) a host that mounts gateway.adminRouter in the app that relays its APIs', () => {
    let backend: Awaited<ReturnType<typeof hostileBackend>>;
    let gateway: Gateway;
    let app: Server;
    let base: string;
    let other: string;

    before(async () => {
      backend = await hostileBackend();
      gateway = createGateway({ config: pagesConfig(backend.url), admin: { basicAuth: { username: 'admin', password: PASSWORD } } });
      await gateway.ready();
      const host = express();
      host.use(gateway.adminRouter);
      host.use(gateway.router);
      app = createServer(host);
      base = await listen(app);
      // Another port of the same host: same site, another origin.
      other = backend.url;
    });
    after(async () => {
      await close(app);
      await gateway?.close();
      await close(backend?.server);
    });

    it('refuses a same-site form post from another port with the operator credentials (403 problem+json)', async () => {
      const before = gateway.configState.loadedAt;
      const res = await fetch(`${base}/gateway/admin/reset-caches`, {
        method: 'POST',
        headers: {
          authorization: OPERATOR,
          origin: other,
          'sec-fetch-site': 'same-site',
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'x=1',
      });
      expect(res.status).to.equal(403);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(((await res.json()) as { gateway_status: string }).gateway_status).to.equal('protocol:GATEWAY-403');
      expect(gateway.configState.loadedAt).to.equal(before);
    });

    it('refuses a state change from another origin or site even with the custom header', async () => {
      const attempts: Array<Record<string, string>> = [
        { origin: other, 'x-gateway-console': '1' },
        { origin: 'null', 'x-gateway-console': '1' },
        { 'sec-fetch-site': 'same-site', 'x-gateway-console': '1' },
        { 'sec-fetch-site': 'cross-site', 'x-gateway-console': '1' },
        { origin: base, 'sec-fetch-site': 'none', 'x-gateway-console': '1' },
      ];
      for (const headers of attempts) {
        const res = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: { authorization: OPERATOR, ...headers } });
        expect(res.status, JSON.stringify(headers)).to.equal(403);
      }
    });

    it('refuses console JSON without the custom header, and serves it with the header', async () => {
      const without = await fetch(`${base}/gateway/console/api/transactions`, { headers: { authorization: OPERATOR } });
      expect(without.status).to.equal(403);
      expect(((await without.json()) as { gateway_status: string }).gateway_status).to.equal('protocol:GATEWAY-403');
      const status = await fetch(`${base}/gateway/admin/status`, { headers: { authorization: OPERATOR } });
      expect(status.status).to.equal(403);
      const withHeader = await fetch(`${base}/gateway/console/api/transactions`, {
        headers: { authorization: OPERATOR, 'x-gateway-console': '1', 'sec-fetch-site': 'same-origin' },
      });
      expect(withHeader.status).to.equal(200);
    });

    it('accepts a state change from its own origin with the header, and from curl (no Origin) with the header', async () => {
      const page = await fetch(`${base}/gateway/admin/reset-caches`, {
        method: 'POST',
        headers: { authorization: OPERATOR, origin: base, 'sec-fetch-site': 'same-origin', 'x-gateway-console': '1' },
      });
      expect(page.status).to.equal(200);
      const curl = await fetch(`${base}/gateway/admin/reset-caches`, {
        method: 'POST',
        headers: { authorization: OPERATOR, 'x-gateway-console': '1' },
      });
      expect(curl.status).to.equal(200);
      const noHeader = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: { authorization: OPERATOR } });
      expect(noHeader.status).to.equal(403);
    });
  });

  describe('(c) failed admin logins are throttled per client address', () => {
    let gateway: Gateway;
    let app: Server;
    let base: string;
    const windowMs = 2_000;

    before(async () => {
      gateway = createGateway({
        config: pagesConfig('http://127.0.0.1:9'),
        admin: { basicAuth: { username: 'admin', password: PASSWORD }, loginThrottle: { maxFailures: 5, windowMs } },
      } as Parameters<typeof createGateway>[0]);
      const host = express();
      host.use(gateway.adminRouter);
      app = createServer(host);
      base = await listen(app);
    });
    after(async () => {
      await close(app);
      await gateway?.close();
    });

    it('answers 429 with Retry-After after five failures, refuses even the right password, and lets it in once the window passed', async () => {
      const status = `${base}/gateway/admin/status`;
      const headers = (auth: string) => ({ authorization: auth, 'x-gateway-console': '1' });
      for (let i = 0; i < 5; i++) {
        const res = await send(status, { headers: headers(basic('admin', `guess-${i}`)), localAddress: '127.0.0.1' });
        expect(res.status, `guess ${i + 1}`).to.equal(401);
      }
      const sixth = await send(status, { headers: headers(basic('admin', 'guess-6')), localAddress: '127.0.0.1' });
      expect(sixth.status).to.equal(429);
      expect(sixth.headers['content-type']).to.match(/^application\/problem\+json/);
      const retryAfter = Number(sixth.headers['retry-after']);
      expect(retryAfter).to.be.within(1, Math.ceil(windowMs / 1000));
      expect((JSON.parse(sixth.body) as { gateway_status: string }).gateway_status).to.equal('protocol:GATEWAY-429');
      const right = await send(status, { headers: headers(OPERATOR), localAddress: '127.0.0.1' });
      expect(right.status, 'the right password is refused too while blocked').to.equal(429);
      const console = await send(`${base}/gateway/console/api/transactions`, { headers: headers(OPERATOR), localAddress: '127.0.0.1' });
      expect(console.status, 'the console shares the throttle').to.equal(429);
      // Another client address is not affected.
      const elsewhere = await send(status, { headers: headers(OPERATOR), localAddress: '127.0.0.2' });
      expect(elsewhere.status).to.equal(200);
      await new Promise((r) => setTimeout(r, windowMs + 100));
      const later = await send(status, { headers: headers(OPERATOR), localAddress: '127.0.0.1' });
      expect(later.status).to.equal(200);
    });

    it('validates the throttle options at factory time', () => {
      const make = (loginThrottle: unknown) => () =>
        createGateway({
          config: pagesConfig('http://127.0.0.1:9'),
          admin: { basicAuth: { username: 'admin', password: PASSWORD }, loginThrottle },
        } as Parameters<typeof createGateway>[0]);
      expect(make({ windowMs: 0 })).to.throw(TypeError, /loginThrottle\.windowMs/);
      expect(make({ maxFailures: 1.5 })).to.throw(TypeError, /loginThrottle\.maxFailures/);
      expect(make('fast')).to.throw(TypeError, /loginThrottle/);
    });
  });
});
