/**
 * Traffic control in the configuration console, in a real headless Chromium (Debian's
 * /usr/bin/chromium driven by playwright-core), on the example gateway: an operator's bad policy
 * refused with the message next to its field and nothing saved, the what-if of the draft over the
 * recorded traffic (30 requests of client1 at 10 a minute: 20 refused), the policy saved and put
 * in force, its usage after traffic, and a viewer who sees it all and can change nothing. Fails,
 * never skips, when Chromium is missing.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');

describe('configuration console in headless Chromium: traffic control', function () {
  this.timeout(90_000);
  let pet: PetstoreGateway;
  let browser: Browser;
  const problems: string[] = [];
  let pageUrl: string;
  let otto: Page;

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium not found at ${CHROMIUM}: install it with \`apt-get install -y --no-install-recommends chromium\` or set CHROMIUM_PATH.`,
      );
    }
    pet = await startPetstore();
    pageUrl = `${pet.server.adminUrl}/gateway/configuration/`;
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
    });
    // Recorded traffic before any policy: 30 requests of client1 and 2 of client2 within a minute.
    for (let i = 0; i < 30; i++) expect((await pet.putPetAs('client1')).status).to.equal(200);
    for (let i = 0; i < 2; i++) expect((await pet.putPetAs('client2')).status).to.equal(200);
    await waitFor(async () => (await pet.server.gateway.store.query({ limit: 500 })).items.length === 32, 'the transactions recorded');
  });
  after(async () => {
    await browser?.close();
    await pet?.stop();
  });

  async function open(expected: number[] = []): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-GB' });
    const page = await context.newPage();
    page.on('response', (res) => {
      if (res.status() >= 400 && !expected.includes(res.status())) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/status of (401|403|422)/.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    // Removing a policy asks first.
    page.on('dialog', (dialog) => void dialog.accept());
    return page;
  }

  async function signIn(page: Page, username: string, password: string): Promise<void> {
    await page.goto(pageUrl);
    await page.locator('#sign-in-panel').waitFor({ state: 'visible' });
    await page.fill('#si-user', username);
    await page.fill('#si-pass', password);
    await page.click('#sign-in button[type=submit]');
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('#nodes tr').first().waitFor();
  }

  async function waitFor(probe: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 100; i++) {
      if (await probe()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never: ${what}`);
  }
  const versions = async () => (await readdir(`${pet.copy.configFile}.versions`)).length;

  it('an operator sees traffic control with no policy; a bad policy, and store "redis" without Redis, are refused next to their field, saving nothing', async () => {
    otto = await open([422]);
    await signIn(otto, 'otto', PASSWORDS.otto);
    expect(await otto.locator('#who').innerText()).to.equal('otto (operator)');
    await otto.locator('#tp-none').waitFor({ state: 'visible' });
    await waitFor(async () => (await otto.locator('#usage-note').innerText()) === 'No traffic policy is in force.', 'the usage note');
    const before = await versions();
    expect(await otto.inputValue('#tp-scope')).to.equal('');
    await otto.fill('#tp-name', 'per-client');
    await otto.fill('#tp-limit', '0');
    await otto.fill('#tp-window-seconds', '60');
    await otto.fill('#tp-group-by', 'clientId');
    await otto.click('#tp-save');
    const error = otto.locator('#tp-limit-error');
    await waitFor(async () => (await error.innerText()).includes('trafficControl.policies[0].limit'), 'the error next to the limit');
    expect(await otto.locator('#tp-limit').getAttribute('aria-invalid')).to.equal('true');
    expect(await otto.locator('#tp-errors li').first().innerText()).to.include('trafficControl.policies[0].limit');
    expect(await versions()).to.equal(before);
    expect((await pet.onDisk()).trafficControl).to.equal(undefined);
    // A store this gateway cannot have (it has no Redis): refused at the save, next to its field.
    await otto.selectOption('#ts-store', 'redis');
    await otto.click('#ts-save');
    const storeError = otto.locator('#ts-store-error');
    await waitFor(
      async () => (await storeError.innerText()).includes('is redis, and the gateway has no Redis'),
      'the error next to the store',
    );
    expect(await otto.locator('#ts-store').getAttribute('aria-invalid')).to.equal('true');
    expect(await otto.locator('#ts-errors li').first().innerText()).to.include('trafficControl.store');
    expect(await versions()).to.equal(before);
    expect((await pet.onDisk()).trafficControl).to.equal(undefined);
    await otto.selectOption('#ts-store', '');
  });

  it('runs the what-if of the draft over the recorded traffic: 20 of client1 refused', async () => {
    await otto.fill('#tp-limit', '10');
    await otto.selectOption('#tw-minutes', '15');
    await otto.click('#tw-run');
    const row = otto.locator('#tw-groups tr[data-group="clientId=client1"]');
    await row.waitFor();
    expect(await row.locator('td').allInnerTexts()).to.deep.equal(['clientId=client1', '10', '20']);
    expect(await otto.locator('#tw-groups tr').count()).to.equal(1);
    expect(await otto.locator('#tw-summary').innerText()).to.equal(
      'Over the 32 transactions of every API recorded in the last 15 minutes, per-client would have refused 20 of the 32 requests it covers. Nothing is saved.',
    );
    expect(await otto.locator('#tw-notes').innerText()).to.include('Groups seen: 2.');
    expect(await otto.locator('#tp-limit-error').innerText()).to.equal('');
    expect((await pet.onDisk()).trafficControl).to.equal(undefined);
    await otto
      .locator('section[aria-labelledby=traffic-heading]')
      .screenshot({ path: path.join(ARTIFACTS, 'configuration-traffic-what-if.png') });
  });

  it('saves the policy as a new version, puts it in force, and shows its usage after traffic', async () => {
    const before = await versions();
    await otto.fill('#tp-comment', '10 a minute per client');
    await otto.click('#tp-save');
    await otto.locator('#tp-list tr[data-traffic-policy="|per-client"]').waitFor();
    expect(await otto.locator('#tp-list tr[data-traffic-policy="|per-client"]').locator('td').allInnerTexts()).to.deep.equal([
      'every API',
      'per-client',
      '10 per 60 s',
      'clientId',
      'all',
      'enforce',
      'Edit Remove',
    ]);
    expect(await versions()).to.equal(before + 1);
    expect((await pet.onDisk()).trafficControl).to.deep.equal({
      policies: [{ name: 'per-client', metric: 'requests', limit: 10, windowSeconds: 60, groupBy: ['clientId'] }],
    });
    await waitFor(async () => (await otto.locator('#versions tr').first().innerText()).includes('10 a minute per client'), 'the version');
    await otto.click('#reset');
    await waitFor(async () => (await otto.locator('#nodes [data-state]').first().getAttribute('data-state')) === 'in force', 'in force');
    for (let i = 0; i < 4; i++) expect((await pet.putPetAs('client1')).status).to.equal(200);
    expect((await pet.putPetAs('client2')).status).to.equal(200);
    await otto.click('#usage-refresh');
    const usage = otto.locator('#usage [data-usage="|per-client"]');
    await usage.locator('tr[data-group="clientId=client1"]').waitFor();
    expect(await usage.locator('h4').innerText()).to.equal('per-client — every API — 10 per 60 s (sliding)');
    expect(await usage.locator('tbody tr').count()).to.equal(2);
    const first = usage.locator('tbody tr').first();
    expect(await first.locator('td').nth(1).innerText()).to.equal('4 / 10');
    expect(await first.locator('meter').getAttribute('value')).to.equal('4');
    expect(await first.locator('meter').getAttribute('max')).to.equal('10');
    expect(await usage.locator('tr[data-group="clientId=client2"] td').nth(1).innerText()).to.equal('1 / 10');
    expect(await otto.locator('#usage-note').innerText()).to.equal("This instance's counts.");
    await otto.locator('section.usage').screenshot({ path: path.join(ARTIFACTS, 'configuration-traffic-usage.png') });
  });

  it('edits the policy in place from its row, and the audit log names who changed what', async () => {
    await otto.click('#tp-list tr[data-traffic-policy="|per-client"] button:has-text("Edit")');
    expect(await otto.locator('#tp-title').innerText()).to.equal('Policy per-client');
    expect(await otto.inputValue('#tp-limit')).to.equal('10');
    await otto.fill('#tp-limit', '20');
    await otto.click('#tp-save');
    await waitFor(async () => (await pet.onDisk()).trafficControl?.policies?.[0]?.limit === 20, 'the change saved');
    await otto.click('#audit-refresh');
    await waitFor(
      async () => (await otto.locator('#audit tr[data-action="traffic.policy.save"]').count()) >= 2,
      'the audit entries of the saves',
    );
    const rows = await otto.locator('#audit tr[data-action="traffic.policy.save"]').allInnerTexts();
    expect(rows.some((r) => r.includes('otto (operator)') && r.includes('traffic policy per-client changed (limit 10 → 20)'))).to.equal(
      true,
    );
    expect(rows.some((r) => r.includes('otto (operator)') && r.includes('refused 422'))).to.equal(true);
  });

  it('a viewer sees the policies and their usage, and no control to change them', async () => {
    const viewer = await open();
    await signIn(viewer, 'vera', PASSWORDS.vera);
    await viewer.locator('#tp-list tr[data-traffic-policy="|per-client"]').waitFor();
    expect(await viewer.locator('#tp-list button').count()).to.equal(0);
    for (const selector of ['#tp-save', '#tp-new', '#tw-run', '#ts-save'])
      expect(await viewer.locator(selector).isVisible(), selector).to.equal(false);
    expect(await viewer.locator('#tp-name').getAttribute('readonly')).to.not.equal(null);
    expect(await viewer.locator('#ts-store').isDisabled()).to.equal(true);
    await viewer.locator('#usage [data-usage="|per-client"] tr[data-group="clientId=client1"]').waitFor();
    expect(problems).to.deep.equal([]);
  });
});
