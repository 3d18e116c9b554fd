/**
 * The console page in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) after a scripted traffic mix over the reference scenario: every outcome the scenario
 * can give (token refused, denied, Ok, backend 4xx and 5xx), two APIs, three clients, more records
 * than one page. Fails, never skips, when Chromium is missing: CI installs it (`.ci/run`).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TransactionRecord } from '../../src/index.js';
import { makeRecord, parseCsv } from '../record/helpers.js';
import { CONSOLE_USER, runFourOutcomes, startScenario, type Scenario } from '../record/scenario.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ARTIFACTS = path.join(ROOT, 'test', 'artifacts');
/** Screenshots shown in docs/console.md: written there with `UPDATE_DOCS_SCREENSHOTS=1`, else beside the other artifacts. */
const DOCS = process.env['UPDATE_DOCS_SCREENSHOTS'] === '1' ? path.join(ROOT, 'docs') : ARTIFACTS;
const DECISION = 'result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok';
const LAUNCH_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const DESKTOP = { width: 1366, height: 768 };
const PHONE = { width: 390, height: 844 };

describe('monitoring console in headless Chromium', function () {
  this.timeout(120_000);
  let scenario: Scenario | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  const requested: string[] = [];
  const problems: string[] = [];
  let ids: Record<string, string>;
  let records: TransactionRecord[];

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium not found at ${CHROMIUM}: the console's browser test needs it. Install it with ` +
          '`apt-get install -y --no-install-recommends chromium` (as .ci/run does) or set CHROMIUM_PATH.',
      );
    }
    scenario = await startScenario();
    const responses = await runFourOutcomes(scenario);
    ids = Object.fromEntries(Object.entries(responses).map(([status, res]) => [status, res.headers.get('gateway-transaction-id')!]));
    const as = scenario.as;
    const client1 = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    const client2 = await as.issueToken('client2', 'client2-secret', { scope: 'read' });
    const mix: Array<Promise<Response>> = [];
    // More than one page (100 rows): Ok through two APIs and two clients, backend 4xx and 5xx.
    for (let i = 0; i < 60; i++) mix.push(scenario.putPet(i % 2 ? client1 : client2, true, undefined, i % 3 === 0 ? 'Orders' : undefined));
    for (let i = 0; i < 25; i++) mix.push(scenario.putPet(client1, true, 404));
    for (let i = 0; i < 15; i++) mix.push(scenario.putPet(client2, true, 502, 'Orders'));
    for (let i = 0; i < 10; i++) mix.push(scenario.putPet('bm90LWEtcmVhbC10b2tlbi0xMjM0NTY3ODkw', true));
    const answered = await Promise.all(mix);
    ids['404'] = answered[60]!.headers.get('gateway-transaction-id')!;
    ids['502'] = answered[85]!.headers.get('gateway-transaction-id')!;
    const expected = 4 + mix.length;
    for (let i = 0; i < 500 && scenario.store.size < expected; i++) await new Promise((r) => setTimeout(r, 10));
    records = scenario.store.query({ limit: 500 }).items;
    expect(records).to.have.length(expected);
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
    context = await browser.newContext({ viewport: DESKTOP, httpCredentials: CONSOLE_USER, locale: 'it-IT', acceptDownloads: true });
    page = await context.newPage();
    page.on('request', (req) => requested.push(req.url()));
    page.on('response', (res) => {
      if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
  });

  after(async () => {
    await browser?.close();
    await scenario?.stop();
  });

  const rows = (p: Page = page) => p.locator('#rows tr');
  const rowIds = async (p: Page = page) => (await rows(p).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-id')))) as string[];
  /** Waits for the page's next completed load (list and statistics) after `action`. */
  // Waits for a load that began after the action, and for the newest load to have ended: an
  // auto-refresh that was in flight when the action came must not pass for the action's load.
  const loaded = async (action: () => Promise<unknown>, p: Page = page) => {
    const body = p.locator('body');
    const seq = async (name: string) => Number((await body.getAttribute(name)) ?? 0);
    const before = await seq('data-load-started');
    await action();
    for (let i = 0; i < 200; i++) {
      const started = await seq('data-load-started');
      if (started > before && (await seq('data-loaded')) === started) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the page did not load');
  };
  /** Opens the page (a new document) and waits for its first load. */
  const open = async (url: string, p: Page = page) => {
    await p.goto(url);
    await p.locator('body[data-loaded]').waitFor({ state: 'attached' });
  };
  const apply = () => loaded(() => page.click('#filters button[type=submit]'));
  const clear = async () => {
    await loaded(() => page.click('#filters button[type=reset]'));
  };
  const showMoreFilters = async () => {
    if ((await page.locator('#more-filters').getAttribute('open')) === null) await page.click('#more-filters summary');
  };
  const newest = (match: (r: TransactionRecord) => boolean) =>
    records
      .filter(match)
      .map((r) => r.id)
      .slice(0, 100);

  it('lists the newest page and draws the chart and totals of the whole window from the store', async () => {
    await open(scenario!.consoleUrl);
    expect(await page.title()).to.equal('Console di monitoraggio del gateway');
    expect(await rows().count()).to.equal(100);
    expect(await page.locator('#more').isVisible()).to.equal(true);
    expect(await rowIds()).to.deep.equal(records.slice(0, 100).map((r) => r.id));
    // The legend counts every record of the window, not the 100 rows shown, and equals the store's stats.
    const now = Date.now();
    const stats = scenario!.store.stats({ from: now - 24 * 3600_000, to: now });
    expect(stats.totals.count).to.equal(records.length);
    const legend: Record<string, number> = {};
    for (const item of await page.locator('#legend li').all()) {
      legend[(await item.getAttribute('data-outcome'))!] = Number((await item.innerText()).split(': ').pop());
    }
    expect(legend).to.deep.equal(stats.totals.byOutcome);
    expect(legend).to.include({ BACKEND_4XX: 25, BACKEND_5XX: 15, AUTHORIZATION_DENIED: 1 });
    expect(await page.locator('#totals').innerText()).to.include(`${records.length} transazioni`);
    const bars = await page.locator('#chart svg rect title').allTextContents();
    const charted = bars.reduce((n, text) => n + Number(text.split(': ').pop()), 0);
    expect(charted).to.equal(records.length);
    const text = (await rows().allInnerTexts()).join('\n');
    expect(text).to.include('Risposta HTTP 4xx').and.include('Risposta HTTP 5xx').and.include('Ente/Orders/v2');
    expect(text).not.to.include('access_token');
    await page.screenshot({ path: path.join(ARTIFACTS, 'console.png') });
    await loaded(() => page.click('#more'));
    expect(await rows().count()).to.equal(records.length);
  });

  it('search by transaction id opens the detail at its own address; a deep link opens it in a fresh page', async () => {
    await page.fill('#q', ids['502']!);
    await page.click('#search button');
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    expect(page.url()).to.match(new RegExp(`#/transactions/${ids['502']}$`));
    expect(await dialog.innerText())
      .to.include(ids['502'])
      .and.include('Risposta HTTP 5xx')
      .and.include('502');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(page.url()).not.to.include('#/transactions/');
    // By message id too (a success has one).
    const ok = records.find((r) => r.outcome.code === 'OK')!;
    await page.fill('#q', ok.messageId);
    await page.click('#search button');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.locator('h2').innerText()).to.include(ok.id);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    const fresh = await context.newPage();
    await fresh.goto(`${scenario!.consoleUrl}#/transactions/${encodeURIComponent(ids['403']!)}`);
    const other = fresh.locator('dialog#detail');
    await other.waitFor({ state: 'visible' });
    expect(await other.innerText())
      .to.include(ids['403'])
      .and.include('Autorizzazione Negata')
      .and.include(DECISION);
    await fresh.close();
  });

  it('each filter narrows to the right rows, kept in the URL', async () => {
    await open(scenario!.consoleUrl);
    const cases: Array<[string, () => Promise<unknown>, (r: TransactionRecord) => boolean, string]> = [
      [
        'outcome group backend',
        () => page.check('#g-backend'),
        (r) => ['BACKEND_4XX', 'BACKEND_5XX', 'CONNECTION_ERROR'].includes(r.outcome.code),
        'outcomeGroup=backend',
      ],
      [
        'two outcomes',
        async () => {
          await page.click('#outcome-details summary');
          await page.check('#o-AUTHORIZATION_DENIED');
          await page.check('#o-BACKEND_5XX');
        },
        (r) => ['AUTHORIZATION_DENIED', 'BACKEND_5XX'].includes(r.outcome.code),
        'outcome=AUTHORIZATION_DENIED%2CBACKEND_5XX',
      ],
      ['API prefix, any case', () => page.fill('#f-api', 'ente/orders'), (r) => r.api?.name === 'Orders', 'api=ente%2Forders'],
      ['operation', () => page.fill('#f-operation', 'createorder'), (r) => r.operation === 'createOrder', 'operation='],
      ['method', () => page.selectOption('#f-method', 'PUT'), () => true, 'method=PUT'],
      ['status', () => page.fill('#f-status', '404'), (r) => r.status === 404, 'status=404'],
      ['status class', () => page.fill('#f-status', '4xx'), (r) => r.status !== null && r.status >= 400 && r.status < 500, 'status=4xx'],
      [
        'gateway_status',
        () => page.fill('#f-gateway-status', 'protocol:GATEWAY-1367'),
        (r) => r.gatewayStatus === 'protocol:GATEWAY-1367',
        'gatewayStatus=',
      ],
      ['subject prefix', () => page.fill('#f-subject', 'CLIENT2'), (r) => r.sender.subject === 'client2', 'subject='],
      ['client id', () => page.fill('#f-client', 'client3'), (r) => r.sender.clientId === 'client3', 'clientId='],
      ['issuer', () => page.fill('#f-issuer', scenario!.as.issuer), (r) => r.sender.issuer === scenario!.as.issuer, 'issuer='],
      ['claim', () => page.fill('#f-claim', 'scope=read w'), (r) => r.tokenInfo?.introspection?.['scope'] === 'read write', 'claim=scope'],
      ['client address', () => page.fill('#f-address', '127.0.0'), (r) => (r.clientAddress ?? '').includes('127.0.0'), 'clientAddress='],
      ['no such node', () => page.fill('#f-node', 'gw-nowhere'), () => false, 'nodeId=gw-nowhere'],
      ['minimum duration', () => page.fill('#f-duration', '0'), () => true, 'minDurationMs=0'],
    ];
    for (const [name, set, match, inUrl] of cases) {
      await showMoreFilters();
      await set();
      await apply();
      const expected = newest(match);
      expect(await rowIds(), name).to.deep.equal(expected);
      expect(expected.length > 0 || name === 'no such node', `${name} selects something`).to.equal(true);
      expect(page.url(), name).to.include(inUrl);
      await clear();
      expect(await rows().count(), `${name} cleared`).to.equal(100);
    }
    // Filters and window survive a reload (they are in the URL), and the chart follows them.
    await showMoreFilters();
    await page.fill('#f-status', '5xx');
    await page.selectOption('#f-window', '1h');
    await apply();
    await open(page.url());
    expect(await page.locator('#f-status').inputValue()).to.equal('5xx');
    expect(await page.locator('#f-window').inputValue()).to.equal('1h');
    expect(await rowIds()).to.deep.equal(newest((r) => (r.status ?? 0) >= 500));
    expect(await page.locator('#legend').innerText()).to.equal('Risposta HTTP 5xx: 15');
    await clear();
  });

  it('a custom range in ISO times (UTC switch) narrows list and chart alike; auto-refresh keeps the window', async () => {
    await open(scenario!.consoleUrl);
    await loaded(() => page.selectOption('#zone', 'utc').then(() => page.click('#refresh')));
    expect(await rows().first().locator('td.time').innerText()).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} UTC$/);
    const sorted = [...records].sort((a, b) => a.startedAt - b.startedAt);
    const from = sorted[0]!.startedAt - 1000;
    const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19);
    await page.selectOption('#f-window', 'custom');
    await page.fill('#f-from', iso(from));
    await page.fill('#f-to', iso(from + 2000));
    await apply();
    const inRange = records.filter(
      (r) => r.startedAt >= Math.floor(from / 1000) * 1000 && r.startedAt <= Math.floor(from / 1000) * 1000 + 2000,
    );
    expect(await rowIds()).to.deep.equal(inRange.map((r) => r.id).slice(0, 100));
    expect(page.url()).to.include('window=custom');
    const total = Number((await page.locator('#r-count').textContent()) ?? -1);
    expect(total).to.equal(inRange.length);
    // A refresh (as auto-refresh does) keeps the custom window.
    await loaded(() => page.click('#refresh'));
    expect(await page.locator('#f-window').inputValue()).to.equal('custom');
    expect(await rowIds()).to.deep.equal(inRange.map((r) => r.id).slice(0, 100));
    await loaded(() => page.selectOption('#zone', 'local').then(() => page.click('#refresh')));
    await clear();
  });

  it('exports the filtered window as CSV that parses and matches the filter', async () => {
    await showMoreFilters();
    await page.fill('#f-status', '404');
    await apply();
    await page.click('#export summary');
    await page.uncheck('#x-col-url');
    await page.check('#x-col-messageId');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-form button[type=submit]')]);
    expect(download.suggestedFilename()).to.match(/^transactions-.*\.csv$/);
    const csv = parseCsv(await readFile((await download.path())!, 'utf8'));
    expect(csv[0]).to.include('id').and.include('messageId').and.include('status').and.not.include('url');
    const idColumn = csv[0]!.indexOf('id');
    const statusColumn = csv[0]!.indexOf('status');
    expect(csv.slice(1).map((row) => row[idColumn])).to.deep.equal(newest((r) => r.status === 404));
    expect(csv.slice(1).every((row) => row[statusColumn] === '404')).to.equal(true);
    await clear();
  });

  it('shows the report of the window: totals, top APIs, clients, outcomes, statuses, gateway_status, durations', async () => {
    await open(`${scenario!.consoleUrl}#/report`);
    const report = page.locator('#view-report');
    await report.waitFor({ state: 'visible' });
    expect(await page.locator('#view-list').isVisible()).to.equal(false);
    expect(Number(await page.locator('#r-count').textContent())).to.equal(records.length);
    expect(await page.locator('#r-p95').innerText()).to.match(/\d ms|\d s/);
    expect(await page.locator('section[aria-labelledby=r-apis]').innerText())
      .to.include('Ente/PetStore/v1')
      .and.include('Ente/Orders/v2');
    expect(await page.locator('section[aria-labelledby=r-clients]').innerText())
      .to.include('client1')
      .and.include('client2')
      .and.include('client3');
    expect(await page.locator('section[aria-labelledby=r-status] tr', { hasText: '404' }).innerText()).to.match(/404\s+25/);
    expect(await page.locator('section[aria-labelledby=r-gateway-status]').innerText()).to.include('protocol:GATEWAY-1367');
    expect(await page.locator('section[aria-labelledby=r-outcomes]').innerText()).to.include('Risposta HTTP 4xx');
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-report.png'), fullPage: true });
    await page.click('#tab-list');
    await page.locator('#view-list').waitFor({ state: 'visible' });
  });

  it('opens the 403 from the keyboard and shows the decision; Escape closes it and focus returns', async () => {
    await open(`${scenario!.consoleUrl}?outcomeGroup=denied,token`);
    expect(await rowIds()).to.deep.equal(newest((r) => ['AUTHORIZATION_DENIED', 'TOKEN_FAILED'].includes(r.outcome.code)));
    const row = page.locator(`#rows tr[data-id="${ids['403']}"]`);
    await row.focus();
    await page.keyboard.press('Enter');
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    const detail = await dialog.innerText();
    expect(detail).to.include('Autorizzazione Negata').and.include(DECISION).and.include('protocol:GATEWAY-1352');
    expect(await dialog.locator('section[aria-labelledby=d-sender]').innerText()).to.include('client3');
    // Why: the rule that decided, the condition of rule "ok" that was false, the request's attributes, the detail sent.
    expect(await dialog.locator('#d-decided-by').innerText()).to.equal('regola "ko" della policy "urn:gateway:policy:petstore"');
    const ok = dialog.locator('#d-steps tr', { has: page.locator('th', { hasText: 'Rule ok' }) });
    expect(await ok.innerText())
      .to.include('NotApplicable')
      .and.include('condizione falsa')
      .and.include('org:gateway:subject:token:clientId')
      .and.include('"client2"');
    const clientId = dialog.locator('#d-attributes tr', { has: page.locator('th', { hasText: /^org:gateway:subject:token:clientId$/ }) });
    expect(await clientId.innerText()).to.include('client3');
    const record403 = records.find((r) => r.id === ids['403'])!;
    expect(record403.problemDetail).to.match(/^Il mittente non è autorizzato/);
    expect(await dialog.locator('#d-problem-detail').innerText()).to.equal(record403.problemDetail);
    const scope = dialog.locator('section[aria-labelledby=d-token] tr', { has: page.locator('th', { hasText: /^scope$/ }) });
    expect(await scope.innerText()).to.include('read write');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.locator('#rows tr:focus').getAttribute('data-id')).to.equal(ids['403']);
  });

  it("shows the recorded contents of an Ok: incoming and outgoing headers, the bodies' first bytes", async () => {
    // Its own page: the next tests go on from this one's list.
    const p = await context.newPage();
    await open(`${scenario!.consoleUrl}#/transactions/${ids['200']}`, p);
    const dialog = p.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    const incoming = await dialog.locator('section[aria-labelledby=d-incoming]').innerText();
    expect(incoming).to.include('Header ricevuti dal client').and.include('content-type').and.include('application/json');
    const outgoing = await dialog.locator('section[aria-labelledby=d-outgoing]').innerText();
    expect(outgoing).to.include('Gateway-Token-Subject').and.include('x-forwarded-for').and.include('host');
    const record = records.find((r) => r.id === ids['200'])!;
    expect(record.requestBody!.kept).to.equal(64);
    expect(await dialog.locator('#d-requestBody').innerText())
      .to.equal(record.requestBody!.content)
      .and.include('"doggie"');
    expect(await dialog.locator('section[aria-labelledby=d-outgoing]').innerText())
      .to.include(`${record.requestBody!.size} byte`)
      .and.include('conservati solo i primi 64 byte');
    expect(await dialog.locator('#d-responseBody').innerText()).to.equal(record.responseBody!.content);
    for (const token of scenario!.tokens) expect(await dialog.innerText()).to.not.include(token);
    await p.close();
  });

  it('switches the page to English and back', async () => {
    await loaded(() => page.selectOption('#lang', 'en').then(() => page.click('#refresh')));
    expect(await page.title()).to.equal('Gateway monitoring console');
    expect(await page.locator('html').getAttribute('lang')).to.equal('en');
    expect(await page.locator(`#rows tr[data-id="${ids['403']}"]`).innerText()).to.include('Authorization denied');
    // The node that handled it, in a column of its own (several instances on one store).
    const denied = records.find((r) => r.id === ids['403'])!;
    expect(await page.locator(`#rows tr[data-id="${ids['403']}"] td.node`).innerText()).to.equal(denied.nodeId ?? '—');
    expect(await page.locator('#legend').innerText())
      .to.include('Authorization denied: 1')
      .and.include('Token handling failed: 12');
    await loaded(() => page.selectOption('#lang', 'it').then(() => page.click('#refresh')));
    expect(await page.locator('#filters-heading').innerText()).to.equal('Intervallo e filtri');
  });

  it('shows recorded values as text, never as markup, and any claim a record holds', async () => {
    const hostile = makeRecord({
      startedAt: Date.now(),
      url: '/x?q=<img src=x onerror="window.__pwned=1">',
      sender: { subject: '<b>bold</b>', clientId: '"><script>window.__pwned=2</script>' },
      tokenInfo: {
        method: 'header',
        policy: 'demo-idp',
        introspection: { active: true, exp: 1e20, iat: -1e300, big: 1.2345678901234568e29, note: 'z'.repeat(20_000) },
      },
      binding: {
        kind: 'x5t#S256',
        thumbprint: '<i>bound</i>',
        result: 'refused',
        reason: 'mismatch',
        presented: 'qDUZHhMABFkGUuYkWdUv9RIC3kbqoC-9ZCBqVlgSkXU',
      },
    });
    scenario!.store.save(hostile);
    await open(scenario!.consoleUrl);
    const first = rows().first();
    expect(await first.innerText()).to.include('<b>bold</b>');
    expect(await first.locator('b, img, script').count()).to.equal(0);
    expect(await page.evaluate(() => '__pwned' in globalThis)).to.equal(false);
    await first.click();
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    const token = await dialog.locator('section[aria-labelledby=d-token]').innerText();
    expect(token).to.include('100000000000000000000');
    // The token's sender binding, as the gateway checked it.
    expect(token).to.match(/x5t#S256: refused \(mismatch\)/);
    expect(token).to.include('<i>bound</i>');
    expect(token).to.include('qDUZHhMABFkGUuYkWdUv9RIC3kbqoC-9ZCBqVlgSkXU');
    expect(await dialog.locator('section[aria-labelledby=d-token] i').count()).to.equal(0);
    await page.click('#close');
    await dialog.waitFor({ state: 'hidden' });
    records.unshift(hostile);
  });

  it('limited requests: the outcome group, the traffic policy filter, the chart, and the policy and group in the detail', async () => {
    const limited = (clientId: string, startedAt: number): TransactionRecord =>
      makeRecord({
        code: 'RATE_LIMITED',
        startedAt,
        status: 429,
        errorCode: 'ERR_RATE_LIMITED',
        gatewayStatus: 'protocol:GATEWAY-1371',
        api: { provider: 'Ente', name: 'PetStore', version: 1 },
        operation: 'updatePet',
        sender: { subject: clientId, clientId },
        traffic: {
          result: 'limited',
          policy: 'per-client',
          group: `clientId=${clientId}`,
          warnings: ['tenant-watch'],
          policies: [
            {
              policy: 'per-client',
              mode: 'enforce',
              metric: 'requests',
              group: `clientId=${clientId}`,
              limit: 100,
              windowSeconds: 60,
              remaining: 0,
              exceeded: true,
            },
            {
              policy: 'tenant-watch',
              mode: 'warningOnly',
              metric: 'concurrentRequests',
              group: '*',
              limit: 5,
              remaining: 0,
              exceeded: true,
            },
          ],
        },
      });
    const saved = [limited('client1', Date.now() - 2000), limited('client2', Date.now() - 1000)];
    for (const record of saved) scenario!.store.save(record);
    records.unshift(...saved.reverse());
    ids['429'] = saved[0]!.id;
    await open(`${scenario!.consoleUrl}?outcomeGroup=limited`);
    expect(await page.locator('#g-limited').isChecked()).to.equal(true);
    expect(await rowIds()).to.deep.equal(saved.map((r) => r.id));
    expect(await page.locator('#legend').innerText()).to.equal('Limite di Traffico Superato: 2');
    await clear();
    await showMoreFilters();
    await page.fill('#f-traffic-policy', 'PER-cl');
    await apply();
    expect(page.url()).to.include('trafficPolicy=PER-cl');
    expect(await rowIds()).to.deep.equal(saved.map((r) => r.id));
    await page.fill('#f-traffic-policy', 'nobody');
    await apply();
    expect(await rows().count()).to.equal(0);
    await clear();
    await open(`${scenario!.consoleUrl}#/transactions/${encodeURIComponent(ids['429'])}`);
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    expect(await dialog.locator('#d-traffic-policy').innerText()).to.equal('per-client');
    expect(await dialog.locator('#d-traffic-warnings').innerText()).to.equal('tenant-watch');
    const traffic = await dialog.locator('section[aria-labelledby=d-traffic]').innerText();
    expect(traffic).to.include('clientId=client2').and.include('100 / 60 s').and.include('5 in corso');
    expect(await dialog.innerText())
      .to.include('Limite di Traffico Superato')
      .and.include('protocol:GATEWAY-1371');
    await page.click('#close');
    await dialog.waitFor({ state: 'hidden' });
  });

  it("opens in the browser's language when it is Italian or English, else in the gateway's (Italian here)", async () => {
    for (const [locale, title] of [
      ['en-GB', 'Gateway monitoring console'],
      ['it-IT', 'Console di monitoraggio del gateway'],
      ['fr-FR', 'Console di monitoraggio del gateway'],
    ] as const) {
      const other = await browser!.newContext({ viewport: DESKTOP, httpCredentials: CONSOLE_USER, locale });
      try {
        const p = await other.newPage();
        await open(scenario!.consoleUrl, p);
        expect(await p.title(), locale).to.equal(title);
        // The choice on the switch wins over the browser's language, and is the configuration console's too.
        await p.selectOption('#lang', locale === 'en-GB' ? 'it' : 'en');
        expect(
          await p.evaluate(() =>
            (globalThis as unknown as { localStorage: { getItem: (k: string) => string | null } }).localStorage.getItem(
              'gateway-console-lang',
            ),
          ),
        ).to.equal(locale === 'en-GB' ? 'it' : 'en');
        await open(scenario!.consoleUrl, p);
        expect(await p.locator('html').getAttribute('lang'), locale).to.equal(locale === 'en-GB' ? 'it' : 'en');
      } finally {
        await other.close();
      }
    }
  });

  it('at 1366x768 the list fits its box (Node column not clipped) and each report table is one light box with its header', async () => {
    const ctx = await browser!.newContext({ viewport: DESKTOP, httpCredentials: CONSOLE_USER, locale: 'it-IT' });
    const p = await ctx.newPage();
    try {
      await open(scenario!.consoleUrl, p);
      const fit = await p.locator('#transactions').evaluate((table) => {
        const wrap = table.parentElement!;
        const right = wrap.getBoundingClientRect().right;
        const cells = [...table.querySelectorAll('td.node, thead th')];
        return {
          wrap: { scrollWidth: wrap.scrollWidth, clientWidth: wrap.clientWidth },
          clipped: cells
            .filter((c) => c.scrollWidth > c.clientWidth || c.getBoundingClientRect().right > right + 0.5)
            .map((c) => `${c.tagName} ${c.textContent}`),
          nodes: table.querySelectorAll('td.node').length,
        };
      });
      expect(fit.nodes).to.be.greaterThan(0);
      expect(fit.clipped, 'cells clipped or out of the box').to.deep.equal([]);
      expect(fit.wrap.scrollWidth, 'no horizontal scroll of the list').to.be.at.most(fit.wrap.clientWidth);
      await p.click('#tab-report');
      await p.locator('#view-report table').first().waitFor();
      const tables = await p.locator('#view-report table').evaluateAll((all) =>
        all.map((table) => {
          const box = table.getBoundingClientRect();
          const head = table.querySelector('thead')!.getBoundingClientRect();
          const rows = table.querySelector('tbody')!.getBoundingClientRect();
          const style = (
            globalThis as unknown as { getComputedStyle: (e: unknown) => { display: string; backgroundColor: string } }
          ).getComputedStyle(table);
          return {
            display: style.display,
            background: style.backgroundColor,
            headInside: head.left >= box.left - 0.5 && head.right <= box.right + 0.5 && head.top >= box.top - 0.5,
            headAboveRows: head.bottom <= rows.top + 0.5 && Math.abs(head.width - rows.width) < 1,
          };
        }),
      );
      expect(tables.length).to.be.greaterThan(3);
      for (const table of tables) {
        expect(table).to.deep.equal({ display: 'table', background: 'rgba(0, 0, 0, 0)', headInside: true, headAboveRows: true });
      }
    } finally {
      await ctx.close();
    }
  });

  it('at 390x844 rows become cards with status and outcome in view', async () => {
    const phone = await browser!.newContext({
      viewport: PHONE,
      httpCredentials: CONSOLE_USER,
      locale: 'it-IT',
      isMobile: true,
      hasTouch: true,
    });
    const small = await phone.newPage();
    try {
      await open(scenario!.consoleUrl, small);
      const card = small.locator(`#rows tr[data-id="${ids['404']}"]`);
      await card.scrollIntoViewIfNeeded();
      for (const cell of ['td.status', 'td.outcome', 'td.time', 'td.api']) {
        const box = (await card.locator(cell).boundingBox())!;
        expect(box, cell).to.not.equal(null);
        expect(box.x, cell).to.be.at.least(0);
        expect(box.x + box.width, cell).to.be.at.most(PHONE.width);
      }
      expect(await card.locator('td.outcome').innerText()).to.include('Risposta HTTP 4xx');
      expect(await card.locator('td.status').innerText()).to.include('404');
      const width = await small.locator('html').evaluate((node) => node.scrollWidth);
      expect(width).to.be.at.most(PHONE.width);
    } finally {
      await phone.close();
    }
  });

  it('axe-core finds no serious or critical violation on the list, the report and a detail', async () => {
    const require = createRequire(import.meta.url);
    const axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    const check = async (p: Page, what: string) => {
      // Evaluated through the DevTools protocol, which the page's CSP does not govern.
      await p.evaluate(axeSource);
      const result = (await p.evaluate(() =>
        (globalThis as unknown as { axe: { run: (o: unknown) => Promise<unknown> } }).axe.run({ resultTypes: ['violations'] }),
      )) as {
        violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
      };
      const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      expect(
        bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
        what,
      ).to.deep.equal([]);
    };
    for (const viewport of [DESKTOP, PHONE]) {
      const ctx = await browser!.newContext({ viewport, httpCredentials: CONSOLE_USER });
      const p = await ctx.newPage();
      try {
        await open(scenario!.consoleUrl, p);
        await check(p, `list ${viewport.width}`);
        await p.click('#tab-report');
        await p.locator('#view-report').waitFor({ state: 'visible' });
        await check(p, `report ${viewport.width}`);
        await p.goto(`${scenario!.consoleUrl}#/transactions/${ids['403']}`);
        await p.locator('dialog#detail').waitFor({ state: 'visible' });
        await check(p, `detail ${viewport.width}`);
        await p.goto(`${scenario!.consoleUrl}#/transactions/${ids['429']}`);
        await p.locator('#d-traffic-policies').waitFor({ state: 'visible' });
        await check(p, `limited detail ${viewport.width}`);
      } finally {
        await ctx.close();
      }
    }
  });

  it('screenshots of the list, the report and the 403 detail at 1366x768 and 390x844 (docs/console.md)', async () => {
    for (const [name, viewport] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ] as const) {
      const ctx = await browser!.newContext({ viewport, httpCredentials: CONSOLE_USER, locale: 'it-IT', timezoneId: 'Europe/Rome' });
      const p = await ctx.newPage();
      try {
        await open(scenario!.consoleUrl, p);
        // The chart and the first rows (the filters are above).
        await p.locator(viewport.width < 500 ? '#results-heading' : '#chart-heading').evaluate((node) => node.scrollIntoView());
        await p.screenshot({ path: path.join(DOCS, `console-list-${name}.png`) });
        await p.click('#tab-report');
        await p.locator('#report-heading').evaluate((node) => node.scrollIntoView());
        await p.screenshot({ path: path.join(DOCS, `console-report-${name}.png`) });
        await p.goto(`${scenario!.consoleUrl}#/transactions/${ids['403']}`);
        await p.locator('dialog#detail').waitFor({ state: 'visible' });
        await p.screenshot({ path: path.join(DOCS, `console-403-${name}.png`) });
        expect(await p.locator('dialog#detail').innerText()).to.include('Autorizzazione Negata');
      } finally {
        await ctx.close();
      }
    }
  });

  it('made no request outside the console and logged no error (CSP included)', () => {
    const origin = new URL(scenario!.consoleUrl).origin;
    const foreign = requested.filter((url) => !url.startsWith('blob:') && new URL(url).origin !== origin);
    expect(foreign).to.deep.equal([]);
    expect(requested.some((url) => url.endsWith('/console.js'))).to.equal(true);
    expect(problems).to.deep.equal([]);
  });
});
