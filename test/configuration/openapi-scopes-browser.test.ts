/**
 * The OpenAPI import's preview of scope rules in the configuration console, in a real headless
 * Chromium (Debian's /usr/bin/chromium driven by playwright-core), on the example gateway: calls
 * recorded with tokens of various scopes, then an admin previews the import of a document whose
 * security lists alternatives and sees which recorded calls its scope rules would refuse, by
 * operation, with the scopes each would need and a sample; nothing is saved. Fails, never skips,
 * when Chromium is missing.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const OPENAPI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore-scopes-3.0.yaml');

describe('configuration console in headless Chromium: scope rules of an OpenAPI import', function () {
  this.timeout(90_000);
  let pet: PetstoreGateway;
  let browser: Browser;
  const problems: string[] = [];
  const ids: Record<string, string> = {};

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium not found at ${CHROMIUM}: install it with \`apt-get install -y --no-install-recommends chromium\` or set CHROMIUM_PATH.`,
      );
    }
    pet = await startPetstore();
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
    });
    // Recorded calls: the imported rules let the first two through and refuse the last two.
    const calls: Array<[string, string, string, 'client1' | 'client2', string | undefined]> = [
      ['reader', 'GET', '/pet/10', 'client1', 'read'],
      ['writer', 'GET', '/pet/10', 'client1', 'write'],
      ['bare', 'GET', '/pet/10', 'client2', undefined],
      ['deleter', 'DELETE', '/pet/424242', 'client1', 'read'],
    ];
    for (const [name, method, resource, client, scope] of calls) {
      const token = await pet.as.issueToken(client, `${client}-secret`, scope === undefined ? {} : { scope });
      const res = await fetch(`${pet.api}${resource}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      });
      await res.arrayBuffer();
      ids[name] = res.headers.get('gateway-transaction-id')!;
    }
    await waitFor(async () => (await pet.server.gateway.store.query({ limit: 50 })).items.length === calls.length, 'the calls recorded');
  });
  after(async () => {
    await browser?.close();
    await pet?.stop();
  });

  async function waitFor(probe: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 100; i++) {
      if (await probe()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never: ${what}`);
  }

  async function open(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-GB' });
    const page = await context.newPage();
    page.on('response', (res) => {
      if (res.status() >= 400 && res.status() !== 401) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    return page;
  }

  it('an admin previews the import and sees the recorded calls its scope rules would refuse, by operation; nothing is saved', async () => {
    const page = await open();
    await page.goto(`${pet.server.adminUrl}/gateway/configuration/`);
    await page.fill('#si-user', 'ada');
    await page.fill('#si-pass', PASSWORDS.ada);
    await page.click('#sign-in button[type=submit]');
    await page.locator('#api-list button[data-api="Ente/PetStore/v1"]').waitFor();
    const before = await pet.onDisk();
    await page.setInputFiles('#openapi-file', OPENAPI);
    await page.selectOption('#openapi-minutes', '15');
    await page.click('#openapi-preview');
    await page.locator('#openapi-refusals').waitFor({ state: 'visible' });
    expect(await page.locator('#openapi-refusals-summary').innerText()).to.equal(
      'Of the 4 calls of this API recorded in the last 15 minutes (4 checked), the imported scope rules would refuse 2 (2 of them accepted today). Nothing is saved.',
    );
    const rows = page.locator('#openapi-refusals-rows tr');
    expect(await rows.count()).to.equal(2);
    const get = page.locator('#openapi-refusals-rows tr[data-operation="getPetById"]');
    expect(await get.locator('td').nth(0).innerText()).to.equal('getPetById');
    expect(await get.locator('td').nth(1).locator('li').allInnerTexts()).to.deep.equal(['read', 'write']);
    expect(await get.locator('td.num').allInnerTexts()).to.deep.equal(['3', '1', '1']);
    const sample = get.locator(`li[data-transaction="${ids['bare']}"]`);
    expect(await sample.innerText()).to.equal(`${ids['bare']!.slice(0, 8)} GET /pet/10 — client2 — scopes: no scope — then 200`);
    expect(await sample.locator('a').getAttribute('href')).to.equal(`../console/#/transactions/${ids['bare']}`);
    const del = page.locator('#openapi-refusals-rows tr[data-operation="deletePet"]');
    expect(await del.locator('td').nth(1).locator('li').allInnerTexts()).to.deep.equal(['write', 'admin']);
    expect(await del.locator(`li[data-transaction="${ids['deleter']}"]`).innerText()).to.include(
      'DELETE /pet/424242 — client1 — scopes: read',
    );
    // The reader and the writer pass: they are not listed.
    expect(await page.locator(`#openapi-refusals-rows li[data-transaction="${ids['reader']}"]`).count()).to.equal(0);
    expect(await page.locator(`#openapi-refusals-rows li[data-transaction="${ids['writer']}"]`).count()).to.equal(0);
    expect(await page.locator('#openapi-result li').first().innerText()).to.equal('Preview: nothing is saved.');
    await page.locator('#openapi-import').screenshot({ path: path.join(ARTIFACTS, 'configuration-openapi-scopes.png') });
    expect(await pet.onDisk()).to.deep.equal(before);
    // The import itself shows no preview of refusals.
    await page.click('#openapi-save');
    await waitFor(async () => (await page.locator('#openapi-errors li.ok').count()) === 1, 'the saved message');
    expect(await page.locator('#openapi-refusals').isHidden()).to.equal(true);
    expect((await pet.onDisk()).apis[0]!.operations!.find((o) => o.name === 'getPetById')).to.deep.include({
      scopeAlternatives: [['read'], ['write']],
    });
    expect(problems).to.deep.equal([]);
  });
});
