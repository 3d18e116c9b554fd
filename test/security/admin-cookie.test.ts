/**
 * Issue 25, findings 1 and 10: the operators' session cookie must never reach a backend, and the
 * admin listener must not be exposed with the APIs. Played against the real `serve` command
 * (dist/server/cli.js) over real HTTP, with a real backend that keeps every header it receives:
 *
 * - an operator signs in on the admin port in headless Chromium; the same browser then opens a
 *   page of the backend through the API port. Browsers scope cookies by host, not port: the
 *   backend's owner must get no gateway cookie to replay against the admin port (before: the
 *   cookie, `Path=/gateway`, came with every API request, and its replay saved a configuration
 *   that turned token management off, in the operator's name);
 * - behind a trusted TLS proxy the cookie is `__Host-eag_session` (`Path=/`, `Secure`), which the
 *   browser sends to the API port too: the relay strips it, whatever its spelling, and keeps the
 *   client's other cookies as they came;
 * - `X-Forwarded-Proto: https` makes the cookie `Secure` only from a `--trust-proxy` address;
 * - `--host 0.0.0.0` exposes the APIs only; `--admin-host-name` answers under that name only.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { close, listen } from '../gateway/helpers.js';
import { serve, stop, type Served } from '../server/support.js';
import { serveOnFreePorts } from './support/serve-ports.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ADMIN_PASSWORD = 'operator-password-25';
const CONSOLE = { 'x-gateway-console': '1' };
const GATEWAY_COOKIE = /eag_session/i;

/** A backend that answers every request and keeps the headers each one arrived with. */
async function recordingBackend(): Promise<{ url: string; server: Server; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/page.html') {
      // The backend's own page, opened by the operator's browser through the API port.
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>pending</title><script>
fetch('data.json', { credentials: 'include' }).then(function (r) { document.title = 'done ' + r.status; });
</script>`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  return { url: await listen(server), server, seen };
}

/** Pages: the backend's pages, open; Payments: protected by a token. */
function configOf(backend: string, provider = 'Ente'): object {
  return {
    tokenPolicies: { IdP: { issuer: 'http://127.0.0.1:9', clientId: 'gateway', clientSecret: 'gateway-secret' } },
    apis: [
      { provider, name: 'Pages', version: 1, backend: { url: backend }, recording: { outgoingHeaders: true } },
      {
        provider: 'Ente',
        name: 'Payments',
        version: 1,
        backend: { url: backend },
        tokenManagement: { enabled: true, policy: 'IdP', jwtValidation: false, introspection: true, userInfo: false, tokenForward: true },
      },
    ],
  };
}

interface Gateway {
  served: Served;
  configFile: string;
  api: string;
  admin: string;
  apiPort: number;
  adminPort: number;
}

async function startServe(dir: string, config: object, flags: string[] = []): Promise<Gateway> {
  const configFile = path.join(dir, `gateway-${Math.random().toString(36).slice(2)}.config.json`);
  await writeFile(configFile, JSON.stringify(config, null, 2));
  const { served, api, adminPort } = await serveOnFreePorts(['serve', '--config', configFile, ...flags], { ADMIN_PASSWORD });
  const apiPort = Number(new URL(api).port);
  return { served, configFile, api: `http://127.0.0.1:${apiPort}`, admin: `http://127.0.0.1:${adminPort}`, apiPort, adminPort };
}

/** One request over node:http: its own connection, a chosen local address, any Host. */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
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

function signIn(admin: string, headers: Record<string, string> = {}, localAddress?: string) {
  return send(`${admin}/gateway/operators/session`, {
    method: 'POST',
    headers: { ...CONSOLE, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    ...(localAddress === undefined ? {} : { localAddress }),
  });
}

/**
 * What the backend's owner does with the `Cookie` header the backend received: asks the admin
 * port who it is and for its CSRF token, then saves a configuration without token management.
 */
async function replay(admin: string, cookie: string, config: object): Promise<{ session: unknown; save: number; reset: number }> {
  const session = await send(`${admin}/gateway/operators/session`, { headers: { ...CONSOLE, cookie } });
  const answer = JSON.parse(session.body) as { csrfToken?: string };
  const open = structuredClone(config) as { apis: Array<{ tokenManagement?: { enabled: boolean } }> };
  for (const api of open.apis) if (api.tokenManagement !== undefined) api.tokenManagement.enabled = false;
  const save = await send(`${admin}/gateway/configuration/api/config`, {
    method: 'PUT',
    headers: {
      ...CONSOLE,
      cookie,
      'content-type': 'application/json',
      ...(answer.csrfToken === undefined ? {} : { 'x-csrf-token': answer.csrfToken }),
    },
    body: JSON.stringify({ document: open, comment: 'maintenance' }),
  });
  const reset = await send(`${admin}/gateway/admin/reset-caches`, {
    method: 'POST',
    headers: { ...CONSOLE, cookie, ...(answer.csrfToken === undefined ? {} : { 'x-csrf-token': answer.csrfToken }) },
  });
  return { session: JSON.parse(session.body), save: save.status, reset: reset.status };
}

async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM} (install it or set CHROMIUM_PATH)`);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
}

/** Signs in with the configuration console's own form, as an operator does. */
async function signInWithThePage(context: BrowserContext, admin: string): Promise<void> {
  const page = await context.newPage();
  await page.goto(`${admin}/gateway/configuration/`);
  await page.locator('#sign-in-panel').waitFor({ state: 'visible' });
  await page.fill('#si-user', 'admin');
  await page.fill('#si-pass', ADMIN_PASSWORD);
  await page.click('#sign-in button[type=submit]');
  await page.locator('#app').waitFor({ state: 'visible' });
  await page.close();
}

/** Opens the backend's page through the API port and waits for its own request to come back. */
async function openBackendPage(context: BrowserContext, api: string): Promise<void> {
  const page = await context.newPage();
  await page.goto(`${api}/gateway/Ente/Pages/v1/page.html`);
  await page.waitForFunction("document.title.startsWith('done')", undefined, { timeout: 10_000 });
  expect(await page.title()).to.equal('done 200');
  await page.close();
}

describe('security: the operators\u2019 session cookie never reaches a backend; the admin listener stays private', function () {
  this.timeout(120_000);
  let dir: string;
  let backend: Awaited<ReturnType<typeof recordingBackend>>;
  let browser: Browser | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'admin-cookie-'));
    backend = await recordingBackend();
  });
  after(async () => {
    await browser?.close();
    await close(backend?.server);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  describe('plain HTTP: an operator signed in on the admin port browses an API of the same host', () => {
    let gateway: Gateway;
    let config: object;

    before(async () => {
      config = configOf(backend.url);
      gateway = await startServe(dir, config);
      browser ??= await launch();
    });
    after(() => stop(gateway?.served));

    it('the backend receives none of the gateway\u2019s cookies (the client\u2019s own arrive), and nothing it received opens the admin port', async () => {
      const context = await browser!.newContext();
      try {
        await context.addCookies([
          { name: 'theme', value: 'dark', domain: '127.0.0.1', path: '/' },
          { name: 'lang', value: 'it-IT', domain: '127.0.0.1', path: '/gateway' },
        ]);
        await signInWithThePage(context, gateway.admin);
        // The browser holds a working session: the test is about where it goes, not whether it exists.
        const jar = (await context.cookies()).filter((c) => c.name === 'eag_session' && c.value !== '');
        expect(jar.length, 'session cookies in the browser').to.be.greaterThan(0);
        const own = `eag_session=${jar[0]!.value}`;
        expect(
          JSON.parse((await send(`${gateway.admin}/gateway/operators/session`, { headers: { ...CONSOLE, cookie: own } })).body),
        ).to.include({ signedIn: true });

        backend.seen.length = 0;
        await openBackendPage(context, gateway.api);
        const received = backend.seen.map((headers) => headers.cookie ?? '');
        // The backend's owner replays all it got, then puts the saved version in force.
        const versions = await readdir(`${gateway.configFile}.versions`).catch(() => []);
        const stolen = await replay(gateway.admin, received[0] ?? '', config);
        const saved = (await readdir(`${gateway.configFile}.versions`).catch(() => [])).length - versions.length;
        expect({
          requestsRelayed: received.length,
          withGatewayCookie: received.filter((cookie) => GATEWAY_COOKIE.test(cookie)).length,
          clientCookies: received.map((cookie) => cookie.split('; ').sort().join('; ')),
          replayedSession: stolen.session,
          replayedSave: stolen.save,
          replayedReset: stolen.reset,
          versionsSaved: saved,
          paymentsWithoutToken: (await send(`${gateway.api}/gateway/Ente/Payments/v1/x`)).status,
        }).to.deep.equal({
          requestsRelayed: 2,
          withGatewayCookie: 0,
          clientCookies: ['lang=it-IT; theme=dark', 'lang=it-IT; theme=dark'],
          replayedSession: { signedIn: false },
          replayedSave: 401,
          replayedReset: 401,
          versionsSaved: 0,
          paymentsWithoutToken: 400,
        });
        for (const cookie of jar)
          expect(cookie.path, 'no API path').to.match(/^\/gateway\/(admin|operators|configuration|console|metrics)$/);
      } finally {
        await context.close();
      }
    });

    it('refuses at start an API whose provider is an admin area (its path would get the cookie)', async () => {
      for (const provider of ['operators', 'configuration', 'metrics', 'health']) {
        const configFile = path.join(dir, `reserved-${provider}.json`);
        await writeFile(configFile, JSON.stringify(configOf(backend.url, provider)));
        const child = serve(['serve', '--config', configFile, '--port', '0', '--admin-port', '0']);
        const started = child.waitFor(/serving APIs at/).then(
          () => 'served',
          () => 'not served',
        );
        const outcome = await Promise.race([child.exited(), started]);
        await stop(child);
        expect(outcome, provider).to.equal(2);
        expect(child.output()).to.include(`apis[0].provider: "${provider}" is reserved for the gateway's own routes`);
      }
    });
  });

  describe('behind a TLS proxy the gateway trusts', () => {
    let gateway: Gateway;

    before(async () => {
      // 127.0.0.2 plays the TLS-terminating proxy; 127.0.0.1 is anyone else on the network.
      gateway = await startServe(dir, configOf(backend.url), ['--trust-proxy', '127.0.0.2']);
    });
    after(() => stop(gateway?.served));

    it('sets __Host-eag_session (Secure, Path=/) for X-Forwarded-Proto: https from the proxy only', async () => {
      const viaProxy = await signIn(gateway.admin, { 'x-forwarded-proto': 'https' }, '127.0.0.2');
      expect(viaProxy.status).to.equal(200);
      const secure = viaProxy.headers['set-cookie']!;
      expect(secure[0]).to.match(/^__Host-eag_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure$/);
      expect(secure.slice(1)).to.deep.equal(['eag_session=; Path=/gateway; Max-Age=0; HttpOnly; SameSite=Strict; Secure']);
      const cookie = secure[0]!.split(';')[0]!;
      const who = (headers: Record<string, string>, localAddress: string) =>
        send(`${gateway.admin}/gateway/operators/session`, { headers: { ...CONSOLE, cookie, ...headers }, localAddress }).then(
          (r) => JSON.parse(r.body) as { signedIn: boolean },
        );
      expect(await who({ 'x-forwarded-proto': 'https' }, '127.0.0.2')).to.include({ signedIn: true });
      // Over plain HTTP the Secure cookie is not the session's: it never travelled there.
      expect(await who({}, '127.0.0.2')).to.include({ signedIn: false });

      // The same header from an address the gateway does not trust changes nothing.
      const spoofed = await signIn(gateway.admin, { 'x-forwarded-proto': 'https' }, '127.0.0.1');
      expect(spoofed.status).to.equal(200);
      const plain = spoofed.headers['set-cookie']!;
      expect(plain.join('\n')).not.to.match(/Secure|__Host-/);
      expect(plain.map((c) => /Path=([^;]*)/.exec(c)![1])).to.deep.equal([
        '/gateway/admin',
        '/gateway/operators',
        '/gateway/configuration',
        '/gateway/console',
        '/gateway/metrics',
        '/gateway',
      ]);
      expect(await who({ 'x-forwarded-proto': 'https' }, '127.0.0.1')).to.include({ signedIn: false });
    });

    it('in Chromium, the __Host- cookie the browser sends to the API port is stripped before the backend', async () => {
      browser ??= await launch();
      // The proxy's header on every request of this browser (it reaches the gateway from 127.0.0.2's stand-in below).
      const context = await browser.newContext({ extraHTTPHeaders: { 'X-Forwarded-Proto': 'https' } });
      try {
        await context.addCookies([{ name: 'theme', value: 'dark', domain: '127.0.0.1', path: '/' }]);
        // Chromium connects from 127.0.0.1, which this gateway does not trust: a second gateway trusts loopback.
        const trusting = await startServe(dir, configOf(backend.url), ['--trust-proxy', 'loopback']);
        try {
          await signInWithThePage(context, trusting.admin);
          const jar = await context.cookies();
          const session = jar.find((c) => c.name === '__Host-eag_session');
          expect(session, `cookies in the browser: ${jar.map((c) => `${c.name} ${c.path} secure=${c.secure}`).join(', ')}`).not.to.equal(
            undefined,
          );
          expect(session).to.include({ path: '/', secure: true, httpOnly: true });
          backend.seen.length = 0;
          await openBackendPage(context, trusting.api);
          expect(backend.seen.length).to.equal(2);
          for (const headers of backend.seen) expect(headers.cookie).to.equal('theme=dark');
        } finally {
          await stop(trusting.served);
        }
      } finally {
        await context.close();
      }
    });
  });

  describe('the relay strips every spelling of the gateway\u2019s cookies', () => {
    let gateway: Gateway;

    before(async () => {
      gateway = await startServe(dir, configOf(backend.url));
    });
    after(() => stop(gateway?.served));

    it('keeps the client\u2019s other cookies byte for byte, sends no Cookie header when none is left, and records exactly what it sent', async () => {
      backend.seen.length = 0;
      const ours = 'eag_session=AAAA; __Host-eag_session=BBBB; __Secure-eag_session=CCCC; EAG_SESSION=DDDD; __HOST-Eag_Session=EEEE';
      const mixed = await send(`${gateway.api}/gateway/Ente/Pages/v1/mixed`, {
        headers: {
          cookie: `theme=dark; eag_session=AAAA; pref="a b"; __Host-eag_session=BBBB;xeag_session=kept; eag_session_theme=kept;  lang=it-IT`,
        },
      });
      const only = await send(`${gateway.api}/gateway/Ente/Pages/v1/only`, { headers: { cookie: ours } });
      const none = await send(`${gateway.api}/gateway/Ente/Pages/v1/none`);
      expect([mixed.status, only.status, none.status]).to.deep.equal([200, 200, 200]);
      expect(backend.seen[0]!.cookie).to.equal('theme=dark; pref="a b"; xeag_session=kept; eag_session_theme=kept; lang=it-IT');
      expect(backend.seen[1], 'only gateway cookies: no Cookie header at all').not.to.have.property('cookie');
      expect(backend.seen[2]).not.to.have.property('cookie');
      // The record lists the headers the backend received: a Cookie header (redacted) only where one was sent.
      const records = await send(`${gateway.admin}/gateway/console/api/transactions?limit=3`, {
        headers: { ...CONSOLE, authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}` },
      });
      expect(records.status).to.equal(200);
      const items = (JSON.parse(records.body) as { items: Array<{ id: string; url?: string; request?: { path?: string } }> }).items;
      for (const [i, suffix] of ['mixed', 'only', 'none'].entries()) {
        const item = items.find((r) => JSON.stringify(r).includes(`/v1/${suffix}`));
        expect(item, suffix).not.to.equal(undefined);
        const detail = await send(`${gateway.admin}/gateway/console/api/transactions/${encodeURIComponent(item!.id)}`, {
          headers: { ...CONSOLE, authorization: `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}` },
        });
        const recorded = (JSON.parse(detail.body) as { outgoing?: { headers?: Record<string, string> } }).outgoing?.headers ?? {};
        const names = Object.keys(recorded).map((n) => n.toLowerCase());
        // undici adds its own Connection header on the wire.
        expect(names.sort(), suffix).to.deep.equal(
          Object.keys(backend.seen[i]!)
            .filter((n) => n !== 'connection')
            .sort(),
        );
        expect(JSON.stringify(recorded)).not.to.match(/AAAA|BBBB|CCCC|DDDD|EEEE/);
      }
    });
  });

  describe('the listeners: --host, --admin-host, --admin-host-name', () => {
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

    /** Whether a TCP connection to `address:port` is accepted. */
    const reachable = (address: string, port: number): Promise<boolean> =>
      new Promise((resolve) => {
        const socket = connect({ host: address, port });
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });

    it('--host 0.0.0.0 exposes the APIs only: the admin port refuses connections on the machine\u2019s other address', async function () {
      if (outside === undefined) this.skip();
      const gateway = await startServe(dir, configOf(backend.url), ['--host', '0.0.0.0']);
      try {
        expect((await send(`http://${outside}:${gateway.apiPort}/gateway/Ente/Pages/v1/x`)).status, 'the API port answers there').to.equal(
          200,
        );
        expect(await reachable(outside!, gateway.adminPort), `admin port on ${outside}`).to.equal(false);
        expect((await send(`${gateway.admin}/gateway/health/live`)).status, 'and on loopback').to.equal(200);
      } finally {
        await stop(gateway.served);
      }
      // Exposed only when asked.
      const exposed = await startServe(dir, configOf(backend.url), ['--host', '0.0.0.0', '--admin-host', '0.0.0.0']);
      try {
        expect((await send(`http://${outside}:${exposed.adminPort}/gateway/health/live`)).status).to.equal(200);
      } finally {
        await stop(exposed.served);
      }
    });

    it('--admin-host-name: the operators\u2019 routes answer 421 under any other host name; health answers under any', async () => {
      const gateway = await startServe(dir, configOf(backend.url), ['--admin-host-name', 'admin.gateway.test']);
      try {
        const named = { host: `admin.gateway.test:${gateway.adminPort}` };
        const wrong = await signIn(gateway.admin);
        expect(wrong.status).to.equal(421);
        expect(wrong.headers['set-cookie']).to.equal(undefined);
        expect(wrong.headers['content-type']).to.match(/^application\/problem\+json/);
        for (const route of ['/gateway/configuration/', '/gateway/console/', '/gateway/admin/status']) {
          expect((await send(`${gateway.admin}${route}`)).status, route).to.equal(421);
          expect(
            (await send(`${gateway.admin}${route}`, { headers: { host: `${gateway.api.slice(7)}` } })).status,
            `${route} under the API's name`,
          ).to.equal(421);
        }
        const right = await signIn(gateway.admin, named);
        expect(right.status).to.equal(200);
        expect(right.headers['set-cookie']![0]).to.match(/^eag_session=[A-Za-z0-9_-]{43}; Path=\/gateway\/admin;/);
        // Answered, not 421: 503, since the token policy's server (port 9) is down.
        expect((await send(`${gateway.admin}/gateway/health/ready`)).status).to.equal(503);
        expect((await send(`${gateway.admin}/gateway/health/live`)).status).to.equal(200);
      } finally {
        await stop(gateway.served);
      }
    });
  });
});
