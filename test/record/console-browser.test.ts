/**
 * The console page in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core) after the spec scenario. Fails, never skips, when Chromium is missing: CI
 * installs it (`.ci/run`).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { makeRecord } from './helpers.js';
import { CONSOLE_USER, runFourOutcomes, startScenario, type Scenario } from './scenario.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const DECISION = 'result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok';

describe('monitoring console in headless Chromium', function () {
  this.timeout(60_000);
  let scenario: Scenario | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  const requested: string[] = [];
  const problems: string[] = [];
  let ids: Record<string, string>;

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
    // Records are saved just after each response: wait until the four are in.
    for (let i = 0; i < 200 && scenario.store.size < 4; i++) await new Promise((r) => setTimeout(r, 10));
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, httpCredentials: CONSOLE_USER, locale: 'en-GB' });
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

  const rows = () => page.locator('#rows tr');
  // Polled from here: the page's CSP forbids evaluating strings, and the test has no DOM types.
  const waitForRows = async (n: number) => {
    for (let i = 0; i < 100; i++) {
      if ((await rows().count()) === n) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the table never showed ${n} rows (it has ${await rows().count()})`);
  };

  it('lists the four transactions with their outcomes, and draws the outcome chart', async () => {
    await page.goto(scenario!.consoleUrl);
    await expect(await page.title()).to.equal('Gateway monitoring console');
    await waitForRows(4);
    const text = await rows().allInnerTexts();
    expect(text[0]).to.include('Ok').and.include('200').and.include('client1').and.include('Ente/PetStore/v1').and.include('updatePet');
    expect(text[1]).to.include('Autorizzazione Negata').and.include('403').and.include('client3');
    expect(text[2]).to.include('Gestione Token Fallita').and.include('401');
    expect(text[3]).to.include('Gestione Token Fallita').and.include('400');
    expect(text.join('\n')).not.to.include('access_token');
    expect(await page.locator('#chart svg rect').count()).to.be.at.least(1);
    expect(await page.locator('#chart svg').getAttribute('aria-label')).to.include('4 transactions');
    expect(await page.locator('#legend').innerText()).to.include('Gestione Token Fallita: 2');
    await page.screenshot({ path: path.join(ARTIFACTS, 'console.png') });
  });

  it('filters by outcome', async () => {
    await page.selectOption('#f-outcome', 'AUTHORIZATION_DENIED');
    await page.click('#filters button[type=submit]');
    await waitForRows(1);
    expect(await rows().first().getAttribute('data-id')).to.equal(ids['403']);
    expect(page.url()).to.include('outcome=AUTHORIZATION_DENIED');
    await page.selectOption('#f-outcome', 'TOKEN_FAILED');
    await page.click('#filters button[type=submit]');
    await waitForRows(2);
    await page.click('#filters button[type=reset]');
    await waitForRows(4);
  });

  it('opens the 403 from the keyboard and shows the decision text; Escape closes it', async () => {
    const row = page.locator(`#rows tr[data-id="${ids['403']}"]`);
    await row.focus();
    await page.keyboard.press('Enter');
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    const detail = await dialog.innerText();
    expect(detail).to.include('Autorizzazione Negata');
    expect(detail).to.include(DECISION);
    expect(detail).to.include('protocol:GATEWAY-1352');
    // Sender and the claims table of spec 2.4.
    expect(await dialog.locator('section[aria-labelledby=d-sender]').innerText()).to.include('client3');
    const scope = dialog.locator('section[aria-labelledby=d-token] tr', { has: page.locator('th', { hasText: /^scope$/ }) });
    expect(await scope.innerText()).to.include('read write');
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-403.png') });
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.locator('#rows tr:focus').getAttribute('data-id')).to.equal(ids['403']);
  });

  it('opens the 200 and shows the headers forwarded to the backend', async () => {
    await page.locator(`#rows tr[data-id="${ids['200']}"]`).click();
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible' });
    const outgoing = await dialog.locator('section[aria-labelledby=d-outgoing]').innerText();
    expect(outgoing).to.include('Gateway-Token-Subject').and.include('Gateway-Token-Scopes').and.include('client1');
    await dialog.locator('section[aria-labelledby=d-outgoing]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-200.png') });
    await page.click('#close');
    await dialog.waitFor({ state: 'hidden' });
  });

  it('shows recorded values as text, never as markup', async () => {
    const hostile = makeRecord({
      startedAt: Date.now(),
      url: '/x?q=<img src=x onerror="window.__pwned=1">',
      sender: { subject: '<b>bold</b>', clientId: '"><script>window.__pwned=2</script>' },
    });
    scenario!.store.save(hostile);
    await page.click('#refresh');
    await waitForRows(5);
    const first = rows().first();
    expect(await first.innerText()).to.include('<b>bold</b>');
    expect(await first.locator('b, img, script').count()).to.equal(0);
    expect(await page.evaluate(() => '__pwned' in globalThis)).to.equal(false);
  });

  it('opens the detail of a record whatever its claims hold (exp: 1e20, huge numbers, deep objects, long strings)', async () => {
    let nested: Record<string, unknown> = { bottom: 'here' };
    for (let i = 0; i < 40; i++) nested = { next: nested };
    const odd = makeRecord({
      startedAt: Date.now(),
      url: '/odd-claims',
      sender: { subject: 'odd-claims' },
      tokenInfo: {
        method: 'header',
        policy: 'demo-idp',
        introspection: { active: true, exp: 1e20, iat: -1e300, nbf: 8.64e15 + 1, auth_time: 1e308, big: 123456789012345678901234567890, nested, note: 'z'.repeat(20_000) },
        jwt: { exp: 'not-a-number', updated_at: null },
      },
    });
    scenario!.store.save(odd);
    await page.click('#refresh');
    await waitForRows(6);
    await page.locator(`#rows tr[data-id="${odd.id}"]`).click();
    const dialog = page.locator('dialog#detail');
    await dialog.waitFor({ state: 'visible', timeout: 5_000 });
    const claims = await dialog.locator('section[aria-labelledby=d-token]').innerText();
    expect(claims).to.include('100000000000000000000').and.include('bottom').and.include('not-a-number');
    await page.click('#close');
    await dialog.waitFor({ state: 'hidden' });
  });

  it('made no request outside the console and logged no error (CSP included)', () => {
    const origin = new URL(scenario!.consoleUrl).origin;
    const foreign = requested.filter((url) => new URL(url).origin !== origin);
    expect(foreign).to.deep.equal([]);
    expect(requested.some((url) => url.endsWith('/console.js'))).to.equal(true);
    expect(problems).to.deep.equal([]);
  });
});
