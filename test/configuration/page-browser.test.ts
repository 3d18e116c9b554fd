/**
 * The configuration console in a real headless Chromium (Debian's /usr/bin/chromium driven by
 * playwright-core), on the example gateway: the specification's policy change played entirely
 * through the page (sign in as admin, an invalid upload shown at its element and line and saving
 * nothing, client3 added to the policy, What if listing client3's recorded 403 turning to Permit,
 * "saved, not yet in force", ResetAllCaches with each node's
 * result, client3's call now 200), the audit log showing each step, and a viewer who sees no
 * control to change anything and whose changes the API refuses. Fails, never skips, when Chromium
 * is missing.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { seriousViolations } from '../support/axe.js';
import { PASSWORDS, startPetstore, withClient3, type PetstoreGateway } from './helpers.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');
const OPENAPI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore.yaml');

describe('configuration console in headless Chromium', function () {
  this.timeout(90_000);
  let pet: PetstoreGateway;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const outside: string[] = [];
  let original: string;
  let pageUrl: string;

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium not found at ${CHROMIUM}: install it with \`apt-get install -y --no-install-recommends chromium\` or set CHROMIUM_PATH.`,
      );
    }
    pet = await startPetstore();
    original = await readFile(pet.copy.policyFile, 'utf8');
    pageUrl = `${pet.server.adminUrl}/gateway/configuration/`;
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await pet?.stop();
  });

  async function open(expected: number[] = []): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-GB' });
    contexts.push(context);
    const page = await context.newPage();
    page.on('request', (req) => {
      if (!req.url().startsWith(pet.server.adminUrl!) && !req.url().startsWith('blob:')) outside.push(req.url());
    });
    page.on('response', (res) => {
      if (res.status() >= 400 && !expected.includes(res.status())) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/status of (401|403|422)/.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
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

  const nodeState = (page: Page) => page.locator('#nodes tr').first().locator('[data-state]').getAttribute('data-state');
  // Patient: a page on a busy machine may take seconds to settle; what it shows is the assertion.
  const waitFor = async (probe: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (await probe()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never: ${what}`);
  };

  let admin: Page;

  it("opens in the browser's language when it is Italian or English, else in the gateway's message language", async () => {
    // The example gateway keeps the default message set: Italian.
    for (const [locale, title] of [
      ['en-GB', 'Gateway configuration console'],
      ['it-IT', 'Console di configurazione del gateway'],
      ['fr-FR', 'Console di configurazione del gateway'],
    ] as const) {
      const context = await browser.newContext({ locale });
      try {
        const page = await context.newPage();
        await page.goto(pageUrl);
        await page.locator('#sign-in-panel').waitFor({ state: 'visible' });
        expect(await page.title(), locale).to.equal(title);
        expect(await page.locator('html').getAttribute('lang'), locale).to.equal(title.startsWith('Gateway') ? 'en' : 'it');
      } finally {
        await context.close();
      }
    }
  });

  it('signs in as admin and shows the PetStore API, its token management and its policy in the editor', async () => {
    admin = await open([401, 422]);
    // A wrong password first: the page says so and stays on the form.
    await admin.goto(pageUrl);
    await admin.fill('#si-user', 'ada');
    await admin.fill('#si-pass', 'not-the-password');
    await admin.click('#sign-in button[type=submit]');
    await waitFor(
      async () => (await admin.locator('#sign-in-error').innerText()).includes('wrong user name or password'),
      'the sign-in error',
    );
    await signIn(admin, 'ada', PASSWORDS.ada);
    expect(await admin.locator('#who').innerText()).to.equal('ada (admin)');
    expect(await admin.title()).to.equal('Gateway configuration console');
    await admin.locator('#api-list button[data-api="Ente/PetStore/v1"]').waitFor();
    expect(await admin.locator('#api-title').innerText()).to.equal('Ente/PetStore/v1');
    expect(await admin.inputValue('#f-tm-policy')).to.equal('DemoIdP');
    expect(await admin.isChecked('#f-tm-introspection')).to.equal(true);
    expect(await admin.inputValue('#f-az-mode')).to.equal('xacml-Policy');
    expect(await admin.locator('#ops tr').count()).to.equal(4);
    await waitFor(async () => (await admin.inputValue('#policy-text')).includes('urn:gateway:policy:petstore'), 'the policy in the editor');
    const secret = await admin.locator('#token-policies [data-policy="DemoIdP"] .secret-state').innerText();
    expect(secret).to.equal('set in the file');
    expect(await admin.content()).not.to.include('gateway-secret');
    expect(await nodeState(admin)).to.equal('in force');
    await admin.screenshot({ path: path.join(ARTIFACTS, 'configuration-console.png'), fullPage: false });
    await admin.locator('section[aria-labelledby=apis-heading]').screenshot({ path: path.join(ARTIFACTS, 'configuration-api.png') });
  });

  it('an invalid policy upload shows the element path at its line and changes nothing', async () => {
    const versionsBefore = (await readdir(`${pet.copy.configFile}.versions`)).length;
    const broken = original.replace(
      'function:string-at-least-one-member-of">\n          <SubjectAttributeDesignator',
      'function:string-no-such-function">\n          <SubjectAttributeDesignator',
    );
    await admin.fill('#policy-text', broken);
    await admin.click('#policy-save');
    const error = admin.locator('#policy-errors li').first();
    await error.waitFor();
    const text = await error.innerText();
    const line = broken.split('\n').findIndex((l) => l.includes('string-no-such-function')) + 1;
    expect(text).to.include('string-no-such-function');
    expect(text).to.include('/Policy[@PolicyId="urn:gateway:policy:petstore"]/Rule[@RuleId="ok"]/Condition/Apply[1]/Apply[2]');
    expect(text).to.include(`line ${line}`);
    expect(await admin.locator('#gutter span.bad').innerText()).to.equal(String(line));
    await admin
      .locator('section[aria-labelledby=policy-heading]')
      .screenshot({ path: path.join(ARTIFACTS, 'configuration-policy-error.png') });
    await admin.click(`#policy-errors button:has-text("Go to line ${line}")`);
    expect(await admin.locator('#policy-text:focus').count(), 'the editor has the focus').to.equal(1);
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect((await readdir(`${pet.copy.configFile}.versions`)).length).to.equal(versionsBefore);
    expect(await nodeState(admin)).to.equal('in force');
  });

  it("adds client3 in the editor; What if lists client3's recorded 403 turning to Permit, linked to the monitoring console", async () => {
    expect((await pet.putPetAs('client1')).status).to.equal(200);
    const denied = await pet.putPetAs('client3');
    expect(denied.status).to.equal(403);
    const id = denied.headers.get('gateway-transaction-id')!;
    await waitFor(async () => (await pet.server.gateway.store.get(id)) !== undefined, 'the 403 recorded');
    await admin.fill('#policy-text', withClient3(original));
    await admin.click('#policy-check');
    await waitFor(async () => (await admin.locator('#policy-errors').innerText()).includes('The policy is valid.'), 'the check');
    await admin.click('#policy-whatif');
    const row = admin.locator(`#whatif-changes tr[data-transaction="${id}"]`);
    await row.waitFor();
    expect(await admin.locator('#whatif-changes tr').count()).to.equal(1);
    const cells = await row.locator('td').allInnerTexts();
    expect(cells[0]).to.equal(id);
    expect(cells[2]).to.equal('client3');
    expect(cells[3]).to.equal('PUT updatePet');
    expect(cells[4]).to.equal('Deny — rule ko (403)');
    expect(cells[5]).to.equal('Permit');
    expect(cells[6]).to.equal('rule ok (urn:gateway:policy:petstore)');
    expect(await admin.locator('#whatif-summary').innerText()).to.equal(
      'Against the last 2 transactions of Ente/PetStore/v1 (1 evaluated), decisions that would change: 1. Nothing is saved.',
    );
    expect(await admin.locator('#whatif-notes li[data-skipped=permit]').innerText()).to.equal(
      '1 not evaluated because permitted: the record of a Permit keeps no XACML request, so a Permit the draft would deny cannot be shown.',
    );
    expect(await admin.locator('#whatif-stale').isVisible()).to.equal(false);
    await admin.locator('section[aria-labelledby=policy-heading]').screenshot({ path: path.join(ARTIFACTS, 'configuration-what-if.png') });
    // The transaction opens in the monitoring console, in a tab of its own (the draft stays in the editor).
    const link = row.locator('a');
    expect(await link.getAttribute('href')).to.equal(`../console/#/transactions/${id}`);
    const [console] = await Promise.all([admin.context().waitForEvent('page'), link.click()]);
    const detail = console.locator('dialog#detail');
    await detail.waitFor({ state: 'visible' });
    expect(await detail.innerText())
      .to.include(id)
      .and.include('client3');
    await console.close();
    expect(await admin.inputValue('#policy-text')).to.equal(withClient3(original));
    // Nothing was saved, nothing is in force.
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect(await nodeState(admin)).to.equal('in force');
    // An edit after the run: the list says it is out of date.
    await admin.locator('#policy-text').press('End');
    await admin.locator('#policy-text').type(' ');
    expect(await admin.locator('#whatif-stale').isVisible()).to.equal(true);
    await admin.fill('#policy-text', withClient3(original));
    await admin.dispatchEvent('#policy-text', 'input');
    expect(await admin.locator('#whatif-stale').isVisible()).to.equal(false);
  });

  it('saves the draft: "saved, not yet in force", and client3 is still refused', async () => {
    await admin.fill('#policy-comment', 'let client3 in');
    await admin.click('#policy-save');
    await waitFor(async () => (await admin.locator('#status').innerText()).includes('not yet in force'), 'the saved message');
    await waitFor(async () => (await nodeState(admin)) === 'saved, not yet in force', 'the node state');
    expect(await admin.locator('#nodes tr').first().innerText()).to.include('saved, not yet in force');
    expect(await admin.locator('#policy-errors').innerText()).to.include('not yet in force');
    // The what-if described the draft against the policy saved before: gone with the save.
    expect(await admin.locator('#whatif').isVisible()).to.equal(false);
    expect(await admin.locator('#whatif-changes tr').count()).to.equal(0);
    expect(await admin.locator('#versions tr').first().innerText())
      .to.include('let client3 in')
      .and.include('ada');
    await admin
      .locator('section[aria-labelledby=runtime-heading]')
      .screenshot({ path: path.join(ARTIFACTS, 'configuration-not-in-force.png') });
    expect((await pet.putPetAs('client3')).status).to.equal(403);
  });

  it('ResetAllCaches from the page reports each node; the change is in force and client3 gets 200', async () => {
    await admin.click('#reset');
    const result = admin.locator('#reset-result li').first();
    await result.waitFor();
    expect(await result.innerText()).to.match(
      new RegExp(`^${pet.server.gateway.nodeId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: applied, \\d+ token results forgotten$`),
    );
    await waitFor(async () => (await nodeState(admin)) === 'in force', 'in force after the reset');
    // The editor's note agrees with the node list: no "not yet in force" left on the page.
    expect(await admin.locator('#policy-errors').innerText()).to.match(/^Saved version \d+: in force on every instance\.$/);
    expect(await admin.locator('main').innerText()).to.not.include('not yet in force');
    expect((await pet.putPetAs('client3')).status).to.equal(200);
    await admin.locator('section[aria-labelledby=runtime-heading]').screenshot({ path: path.join(ARTIFACTS, 'configuration-reset.png') });
  });

  it('shows the change as a difference between the two versions', async () => {
    await admin.click('#compare button[type=submit]');
    const added = admin.locator('#diff tr.add');
    await added.first().waitFor();
    expect(await added.count()).to.equal(1);
    expect(await added.innerText()).to.include('client3');
    expect(await admin.locator('#diff h3').innerText()).to.equal('policies/petstore.xml');
  });

  it("imports operations from the petstore's OpenAPI document: a preview saves nothing, the import is a version", async () => {
    const versionsBefore = (await readdir(`${pet.copy.configFile}.versions`)).length;
    await admin.click('#openapi-save');
    await waitFor(
      async () => (await admin.locator('#openapi-errors').innerText()).includes('Choose an OpenAPI document.'),
      'the missing file',
    );
    await admin.setInputFiles('#openapi-file', OPENAPI);
    await admin.click('#openapi-preview');
    await waitFor(async () => (await admin.locator('#openapi-result li').count()) > 0, 'the preview');
    expect(await admin.locator('#openapi-result li').allInnerTexts()).to.deep.equal([
      'Preview: nothing is saved.',
      'Added (1): findPetsByStatus',
      'Unchanged: 4',
    ]);
    expect((await readdir(`${pet.copy.configFile}.versions`)).length).to.equal(versionsBefore);
    expect(await admin.locator('#ops tr').count()).to.equal(4);
    await admin.click('#openapi-save');
    await waitFor(async () => (await admin.locator('#ops tr').count()) === 5, 'the imported operation in the table');
    await waitFor(async () => (await admin.locator('#openapi-errors li.ok').count()) === 1, 'the saved message');
    expect(await admin.locator('#ops tr[data-operation="findPetsByStatus"]').innerText()).to.match(
      /findPetsByStatus\s+GET\s+\/pet\/findByStatus/,
    );
    expect(await admin.locator('#openapi-result li').allInnerTexts()).to.deep.equal(['Added (1): findPetsByStatus', 'Unchanged: 4']);
    expect(await admin.locator('#versions tr').first().innerText()).to.include('operations imported from OpenAPI PetStore 1.0.0: 1 added');
    expect((await pet.onDisk()).apis[0]!.operations!.map((o) => o.name)).to.include('findPetsByStatus');
    await waitFor(async () => (await nodeState(admin)) === 'saved, not yet in force', 'the node state');
    await admin
      .locator('#api-form fieldset')
      .last()
      .screenshot({ path: path.join(ARTIFACTS, 'configuration-openapi.png') });
    // A document pointing outside itself is refused, naming where, and saves nothing.
    const outsideRef = (await readFile(OPENAPI, 'utf8')).replace(
      "$ref: '#/components/schemas/Tag'",
      "$ref: 'https://schemas.example/tag.json'",
    );
    await admin.setInputFiles('#openapi-file', { name: 'outside.yaml', mimeType: 'application/yaml', buffer: Buffer.from(outsideRef) });
    await admin.click('#openapi-save');
    await waitFor(async () => (await admin.locator('#openapi-errors').innerText()).includes('points outside the document'), 'the refusal');
    expect(await admin.locator('#openapi-errors').innerText()).to.include('components.schemas.Pet.properties.tags.items.$ref');
    expect((await readdir(`${pet.copy.configFile}.versions`)).length).to.equal(versionsBefore + 1);
    await admin.click('#reset');
    await waitFor(async () => (await nodeState(admin)) === 'in force', 'in force after the reset');
  });

  it('sets message recording as docs/console.md has it (headers each way, bodies up to a size): a bad size names its field and saves nothing', async () => {
    const versionsBefore = (await readdir(`${pet.copy.configFile}.versions`)).length;
    await admin.check('#f-rec-incoming');
    await admin.check('#f-rec-request-body');
    await admin.fill('#f-rec-max-body', '0');
    await admin.fill('#api-comment', 'record the requests');
    await admin.click('#api-form button[type=submit]');
    await waitFor(
      async () => (await admin.locator('#api-errors').innerText()).includes('apis[0].recording.maxBodyBytes'),
      'the refusal naming the field',
    );
    expect((await readdir(`${pet.copy.configFile}.versions`)).length).to.equal(versionsBefore);
    await admin.fill('#f-rec-max-body', '1024');
    await admin.click('#api-form button[type=submit]');
    await waitFor(async () => (await pet.onDisk()).apis[0]!.recording?.maxBodyBytes === 1024, 'the saved recording');
    expect((await pet.onDisk()).apis[0]!.recording).to.deep.include({
      incomingHeaders: true,
      requestBody: true,
      responseBody: false,
      maxBodyBytes: 1024,
      xacmlRequests: 'denied',
    });
    await waitFor(
      async () => (await admin.locator('#versions tr').first().innerText()).includes('record the requests'),
      'the new version listed',
    );
    await admin.click('#reset');
    await waitFor(async () => (await nodeState(admin)) === 'in force', 'in force after the reset');
  });

  it("shows a token policy's signed introspection (RFC 9701) and saves it, then its removal", async () => {
    const box = '#tp-DemoIdP-signedIntrospection';
    const form = '#token-policies [data-policy="DemoIdP"]';
    const signed = async () => (await pet.onDisk()).tokenPolicies!['DemoIdP']!.signedIntrospection;
    expect(await admin.isChecked(box)).to.equal(false);
    await admin.check(box);
    await admin.click(`${form} button[type=submit]`);
    await waitFor(async () => (await signed()) === true, 'signedIntrospection saved');
    await waitFor(async () => admin.isChecked(box), 'the box checked after the save');
    expect((await pet.onDisk()).tokenPolicies!['DemoIdP']).to.include({ clientSecret: 'gateway-secret' });
    await admin.uncheck(box);
    await admin.click(`${form} button[type=submit]`);
    await waitFor(async () => (await signed()) === undefined, 'signedIntrospection removed');
    await admin.click('#reset');
    await waitFor(async () => (await nodeState(admin)) === 'in force', 'in force after the reset');
  });

  it('the audit log shows each step: sign-ins, the refused upload, the saved one, the reset', async () => {
    await admin.click('#audit-refresh');
    await waitFor(async () => (await admin.locator('#audit tr').count()) >= 5, 'audit rows');
    const rows = (await admin.locator('#audit tr').allInnerTexts()).reverse().map((r) => r.replace(/\s+/g, ' '));
    const find = (...parts: string[]) => rows.findIndex((r) => parts.every((p) => r.includes(p)));
    const failedSignIn = find('sign-in', 'refused 401', 'ada');
    const signIn = find('ada (admin)', 'sign-in', 'ok 200');
    const refused = find('ada (admin)', 'policy.upload', 'refused 422', 'string-no-such-function');
    const whatIf = find(
      'ada (admin)',
      'policy.what-if',
      'ok 200',
      'Ente/PetStore/v1 policies/petstore.xml',
      '1 would change (1 Deny→Permit)',
    );
    const saved = find('ada (admin)', 'policy.upload', 'ok 200', 'let client3 in');
    const reset = find('ada (admin)', 'reset-caches', 'ok 200');
    expect(
      [failedSignIn, signIn, refused, whatIf, saved, reset].every((i) => i >= 0),
      rows.join('\n'),
    ).to.equal(true);
    expect(failedSignIn < signIn && signIn < refused && refused < whatIf && whatIf < saved && saved < reset).to.equal(true);
    await admin.locator('section[aria-labelledby=audit-heading]').screenshot({ path: path.join(ARTIFACTS, 'configuration-audit.png') });
  });

  it("a viewer sees nothing to change but may check a draft, and the API refuses the viewer's changes with 403", async () => {
    const viewer = await open([403]);
    await signIn(viewer, 'vera', PASSWORDS.vera);
    expect(await viewer.locator('#who').innerText()).to.equal('vera (viewer)');
    await viewer.locator('#api-title').waitFor();
    for (const selector of [
      '#reset',
      '#forget',
      '#add-api',
      '#policy-save',
      '#policy-comment',
      '#policy-whatif',
      '#whatif-limit',
      '#api-form button[type=submit]',
      '#api-remove',
      '#op-add',
      '#openapi-import',
      '#audit-heading',
    ]) {
      expect(await viewer.locator(selector).isVisible(), selector).to.equal(false);
    }
    // Check is a viewer's too (the API's check route is): a draft typed in the editor is checked, never saved.
    expect(await viewer.locator('#policy-file').innerText()).to.include('You may check a draft here; your role allows no change.');
    await viewer.fill('#policy-text', '<Policy');
    await viewer.click('#policy-check');
    await waitFor(async () => (await viewer.locator('#policy-errors li').count()) > 0, "the viewer's check");
    expect(await viewer.locator('#policy-errors li').first().getAttribute('class')).to.not.equal('ok');
    await viewer.fill('#policy-text', original);
    await viewer.click('#policy-check');
    await waitFor(async () => (await viewer.locator('#policy-errors').innerText()) === 'The policy is valid.', "the viewer's valid check");
    expect(await viewer.locator('#f-backend-url').getAttribute('readonly')).to.not.equal(null);
    expect(await viewer.locator('#f-tm-enabled').isDisabled()).to.equal(true);
    expect(await viewer.locator('#versions button').count(), 'no rollback').to.equal(0);
    expect(await viewer.locator('#token-policies button').count()).to.equal(0);
    // The API, asked directly with the viewer's session and CSRF token, refuses.
    const request = viewer.context().request;
    const session = (await (
      await request.get(`${pet.server.adminUrl}/gateway/operators/session`, { headers: { 'x-gateway-console': '1' } })
    ).json()) as { csrfToken: string };
    const headers = {
      'x-gateway-console': '1',
      'x-csrf-token': session.csrfToken,
      'content-type': 'application/json',
      origin: pet.server.adminUrl!,
    };
    const before = await readFile(pet.copy.policyFile, 'utf8');
    const upload = await request.put(`${pet.server.adminUrl}/gateway/configuration/api/apis/Ente/PetStore/1/policy`, {
      headers,
      data: { text: original },
    });
    expect(upload.status()).to.equal(403);
    const reset = await request.post(`${pet.server.adminUrl}/gateway/admin/reset-caches`, { headers });
    expect(reset.status()).to.equal(403);
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(before);
    await viewer.screenshot({ path: path.join(ARTIFACTS, 'configuration-viewer.png') });
  });

  it("axe-core finds no serious or critical violation on an admin's and a viewer's main view, an error list shown", async () => {
    // An invalid draft checked: the error list, its line marked in the editor's line numbers.
    const saved = await admin.inputValue('#policy-text');
    await admin.fill('#policy-text', saved.replace('</Policy>', '</Polic>'));
    await admin.click('#policy-check');
    await admin.locator('#policy-errors li:not(.ok)').first().waitFor();
    await admin.locator('#gutter span.bad').waitFor();
    // The error list keeps its list semantics (no role of the live region on the list itself).
    expect(await admin.locator('#policy-errors').evaluate((ul) => ul.getAttribute('role'))).to.equal('list');
    expect(await seriousViolations(admin), 'admin').to.deep.equal([]);
    await admin.fill('#policy-text', saved);
    const viewer = await open();
    await signIn(viewer, 'vera', PASSWORDS.vera);
    await viewer.locator('#api-title').waitFor();
    expect(await seriousViolations(viewer), 'viewer').to.deep.equal([]);
    await viewer.close();
  });

  it('switches to Italian, and made no request outside its origin and had no page error', async () => {
    await admin.selectOption('#lang', 'it');
    expect(await admin.locator('#runtime-heading').innerText()).to.equal('Nodi e strumenti runtime');
    // The tables are drawn again in the new language.
    await waitFor(
      async () => (await admin.locator('#nodes tr').first().locator('[data-state]').innerText()) === 'in vigore',
      'the node state in Italian',
    );
    // The what-if list is drawn in Italian too: the saved policy now decides client3's 403 as Permit.
    expect(await admin.locator('#policy-whatif').innerText()).to.equal('E se');
    await admin.click('#policy-whatif');
    await waitFor(async () => (await admin.locator('#whatif-summary').innerText()).startsWith('Sulle ultime'), 'the Italian what-if');
    expect(await admin.locator('#whatif-changes tr').first().locator('td').nth(4).innerText()).to.equal('Deny — regola ko (403)');
    expect(await admin.locator('#whatif-notes li[data-skipped=permit]').innerText()).to.match(/^\d+ non valutate perché permesse/);
    expect(await admin.locator('#whatif-heading').innerText()).to.equal('E se questa bozza fosse in vigore');
    await admin.selectOption('#lang', 'en');
    expect(await admin.locator('#runtime-heading').innerText()).to.equal('Nodes and runtime tools');
    expect(await admin.locator('#whatif-summary').innerText()).to.match(/^Against the last \d+ transactions/);
    expect(outside).to.deep.equal([]);
    expect(problems).to.deep.equal([]);
  });
});
