/**
 * The configuration API over real HTTP on the example gateway: everything readable (secrets never
 * shown), changes validated as the file is (errors naming the field), APIs, operations and token
 * policies added and removed, every save a version written beside the file, diff and rollback,
 * "saved, not yet in force" until ResetAllCaches, roles and the audit log.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import type { ApiConfig, GatewayConfig } from '../../src/index.js';
import type { AuditEntry } from '../../src/operators/audit.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const API = '/gateway/configuration/api';
const PETSTORE = `${API}/apis/Ente/PetStore/1`;

interface Saved {
  version: { version: number; author: string; comment: string };
  inForce: boolean;
  message: string;
}

describe('configuration API', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let vera: OperatorClient;

  before(async () => {
    pet = await startPetstore();
    ada = new OperatorClient(pet.server.adminUrl!);
    vera = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
    await vera.signIn('vera', PASSWORDS.vera);
  });
  after(() => pet?.stop());

  const config = async (client = ada) =>
    (await (await client.fetch(`${API}/config`)).json()) as {
      version: { version: number };
      document: GatewayConfig;
      secrets: Record<string, { set: boolean; from: string; variable?: string }>;
      policies: Record<string, string>;
      canEdit: boolean;
    };
  const state = async () =>
    (await (await ada.fetch(`${API}/state`)).json()) as {
      saved: { version: number };
      nodes: Array<{ nodeId: string; state: string; version?: number }>;
    };

  it('shows every API, token policy and policy, never a secret: only whether it is set and where from', async () => {
    const res = await ada.fetch(`${API}/config`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-security-policy')).to.include("default-src 'none'");
    const text = await res.clone().text();
    expect(text).not.to.include('gateway-secret');
    const body = await config();
    expect(body.version.version).to.equal(1);
    expect(body.canEdit).to.equal(true);
    expect(body.document.apis[0]).to.include({ provider: 'Ente', name: 'PetStore', version: 1 });
    expect(body.document.apis[0]!.operations!.map((o) => o.name)).to.deep.equal(['addPet', 'updatePet', 'getPetById', 'deletePet']);
    expect(body.document.tokenPolicies!['DemoIdP']).to.include({ clientId: 'gateway' }).and.not.to.have.property('clientSecret');
    expect(body.secrets).to.deep.equal({ DemoIdP: { set: true, from: 'file' } });
    expect(body.policies['policies/petstore.xml']).to.include('urn:gateway:policy:petstore');
    expect((await config(vera)).canEdit).to.equal(false);
  });

  it('refuses an invalid change with 422, naming each bad field, and saves nothing', async () => {
    const before = await readFile(pet.copy.configFile, 'utf8');
    const api = (await config()).document.apis[0]!;
    const bad = { ...api, backend: { url: 'ftp://nope' }, recording: { outgoingHeaders: 'yes' } } as unknown as ApiConfig;
    const res = await ada.json(PETSTORE, 'PUT', { api: bad, comment: 'broken' });
    expect(res.status).to.equal(422);
    const body = (await res.json()) as { issues: Array<{ path: string; message: string }> };
    expect(body.issues).to.deep.include({ path: 'apis[0].backend.url', message: 'must be an http(s) URL' });
    expect(body.issues).to.deep.include({ path: 'apis[0].recording.outgoingHeaders', message: 'must be a boolean' });
    expect(await readFile(pet.copy.configFile, 'utf8')).to.equal(before);
    const unknownPolicy = await ada.json(PETSTORE, 'PUT', {
      api: { ...api, tokenManagement: { ...api.tokenManagement!, policy: 'Nope' } },
    });
    expect(((await unknownPolicy.json()) as { issues: Array<{ path: string }> }).issues[0]!.path).to.equal(
      'apis[0].tokenManagement.policy',
    );
    expect((await config()).version.version).to.equal(1);
  });

  it('saves a change as a new version, written atomically beside the file, "saved, not yet in force" until ResetAllCaches', async () => {
    const api = (await config()).document.apis[0]!;
    const res = await ada.json(PETSTORE, 'PUT', {
      api: { ...api, recording: { outgoingHeaders: false } },
      comment: 'stop recording headers',
      baseVersion: 1,
    });
    expect(res.status).to.equal(200);
    const saved = (await res.json()) as Saved;
    expect(saved.version).to.include({ version: 2, author: 'ada', comment: 'stop recording headers' });
    expect(saved.message).to.match(/^saved, not yet in force/);
    expect((await pet.onDisk()).apis[0]!.recording).to.deep.equal({ outgoingHeaders: false });
    // The secret the form never saw is still in the file.
    expect((await pet.onDisk()).tokenPolicies!['DemoIdP']!.clientSecret).to.equal('gateway-secret');
    const versions = await readdir(`${pet.copy.configFile}.versions`);
    expect(versions.sort()).to.deep.equal(['v000001.json', 'v000002.json']);
    expect((await stat(path.join(`${pet.copy.configFile}.versions`, 'v000002.json'))).mode & 0o777).to.equal(0o600);
    expect((await readdir(path.dirname(pet.copy.configFile))).filter((f) => f.endsWith('.tmp'))).to.deep.equal([]);
    let now = await state();
    expect(now.saved.version).to.equal(2);
    expect(now.nodes).to.have.length(1);
    expect(now.nodes[0]).to.include({ nodeId: pet.server.gateway.nodeId, state: 'saved, not yet in force', version: 1 });
    const reset = await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' });
    expect(reset.status).to.equal(200);
    now = await state();
    expect(now.nodes[0]).to.include({ state: 'in force', version: 2 });
  });

  it('refuses a change made on a version that is no longer the latest (409)', async () => {
    const api = (await config()).document.apis[0]!;
    const res = await ada.json(PETSTORE, 'PUT', { api, baseVersion: 1 });
    expect(res.status).to.equal(409);
    expect(await res.json()).to.include({ latest: 2 });
  });

  it('adds and removes operations and APIs, and changes a token policy without showing or losing its secret', async () => {
    const op = await ada.json(`${PETSTORE}/operations`, 'POST', {
      operation: { name: 'findPets', method: 'GET', path: '/pet/findByStatus' },
      comment: 'new operation',
    });
    expect(op.status).to.equal(201);
    expect((await pet.onDisk()).apis[0]!.operations!.map((o) => o.name)).to.include('findPets');
    const badOp = await ada.json(`${PETSTORE}/operations`, 'POST', { operation: { name: 'x', method: 'FETCH', path: 'nope' } });
    expect(badOp.status).to.equal(422);
    const paths = ((await badOp.json()) as { issues: Array<{ path: string }> }).issues.map((i) => i.path);
    expect(paths).to.deep.equal(['apis[0].operations[5].method', 'apis[0].operations[5].path']);
    expect((await ada.json(`${PETSTORE}/operations/findPets`, 'DELETE', {})).status).to.equal(200);
    expect((await pet.onDisk()).apis[0]!.operations!.map((o) => o.name)).not.to.include('findPets');

    const echo = { provider: 'Ente', name: 'Echo', version: 2, backend: { url: pet.backend.url } };
    expect((await ada.json(`${API}/apis`, 'POST', { api: echo, comment: 'add Echo' })).status).to.equal(201);
    const dup = await ada.json(`${API}/apis`, 'POST', { api: echo });
    expect(dup.status).to.equal(422);
    expect(((await dup.json()) as { issues: Array<{ message: string }> }).issues[0]!.message).to.equal(
      'duplicates apis[0] (Ente/Echo/v2)'.replace('apis[0]', 'apis[1]'),
    );
    expect((await ada.json(`${API}/apis/Ente/Echo/2`, 'DELETE', { comment: 'remove Echo' })).status).to.equal(200);
    expect((await pet.onDisk()).apis.map((a) => a.name)).to.deep.equal(['PetStore']);

    const policy = (await config()).document.tokenPolicies!['DemoIdP']!;
    const tp = await ada.json(`${API}/token-policies/DemoIdP`, 'PUT', { policy: { ...policy, cacheTtlSeconds: 120 } });
    expect(tp.status).to.equal(200);
    const disk = (await pet.onDisk()).tokenPolicies!['DemoIdP']!;
    expect(disk).to.include({ cacheTtlSeconds: 120, clientSecret: 'gateway-secret' });
    const env = await ada.json(`${API}/token-policies/DemoIdP`, 'PUT', {
      policy: { ...policy, clientSecretEnv: 'GATEWAY_SECRET_EAG_TEST_UNSET' },
    });
    expect(env.status).to.equal(422);
    expect(((await env.json()) as { issues: Array<{ path: string; message: string }> }).issues).to.deep.equal([
      { path: 'tokenPolicies.DemoIdP.clientSecretEnv', message: 'environment variable GATEWAY_SECRET_EAG_TEST_UNSET is not set' },
    ]);
    const signed = await ada.json(`${API}/token-policies/DemoIdP`, 'PUT', {
      policy: { ...policy, signedIntrospection: { algorithms: ['HS256'] } },
    });
    expect(signed.status).to.equal(422);
    expect(((await signed.json()) as { issues: Array<{ path: string; message: string }> }).issues).to.deep.equal([
      { path: 'tokenPolicies.DemoIdP.signedIntrospection.algorithms', message: 'must be a non-empty array of asymmetric JWS algorithms' },
    ]);
  });

  it('lists versions, shows the diff between two (secrets masked), and rolls back as a new version', async () => {
    const list = (await (await ada.fetch(`${API}/versions`)).json()) as {
      items: Array<{ version: number; author: string; comment: string }>;
    };
    expect(list.items[0]!.version).to.be.greaterThan(5);
    expect(list.items.at(-1)).to.include({ version: 1, author: '(outside the console)', comment: 'the configuration file as found' });
    const diff = (await (await ada.fetch(`${API}/diff?from=1&to=2`)).json()) as {
      files: Array<{ file: string; lines: Array<{ op: string; text: string }> }>;
    };
    expect(diff.files.map((f) => f.file)).to.deep.equal(['gateway.config.json']);
    const changed = diff.files[0]!.lines.filter((l) => l.op !== ' ').map((l) => `${l.op}${l.text.trim()}`);
    expect(changed).to.deep.equal(['-"outgoingHeaders": true', '+"outgoingHeaders": false']);
    expect(JSON.stringify(diff)).not.to.include('gateway-secret');
    const latest = list.items[0]!.version;
    const back = await ada.json(`${API}/versions/1/rollback`, 'POST', {});
    expect(back.status).to.equal(200);
    const saved = (await back.json()) as Saved;
    expect(saved.version).to.include({ version: latest + 1, author: 'ada', comment: 'rollback to version 1' });
    expect((await pet.onDisk()).apis[0]!.recording).to.deep.equal({ outgoingHeaders: true });
    expect((await pet.onDisk()).tokenPolicies!['DemoIdP']).not.to.have.property('cacheTtlSeconds');
    expect((await ada.json(`${API}/versions/999/rollback`, 'POST', {})).status).to.equal(404);
  });

  it('records a change made to the file outside the console as a version of its own', async () => {
    const { editJson } = await import('../gateway/helpers.js');
    await editJson<GatewayConfig>(pet.copy.configFile, (c) => {
      c.apis[0]!.backend.timeoutMs = 9000;
    });
    const list = (await (await ada.fetch(`${API}/versions`)).json()) as { items: Array<{ author: string; comment: string }> };
    expect(list.items[0]).to.include({ author: '(outside the console)', comment: 'changed outside the console' });
  });

  it('a viewer reads but changes nothing: 403 on every change, with or without the CSRF token; an admin session needs its token', async () => {
    const api = (await config(vera)).document.apis[0]!;
    const before = await readFile(pet.copy.configFile, 'utf8');
    expect((await vera.json(PETSTORE, 'PUT', { api })).status).to.equal(403);
    expect((await vera.json(`${API}/apis`, 'POST', { api: { ...api, name: 'X' } })).status).to.equal(403);
    expect((await vera.json(`${API}/versions/1/rollback`, 'POST', {})).status).to.equal(403);
    expect((await vera.json(`${PETSTORE}/policy`, 'PUT', { text: '<x/>' })).status).to.equal(403);
    expect((await ada.json(PETSTORE, 'PUT', { api }, false)).status, 'no CSRF token').to.equal(403);
    expect(await readFile(pet.copy.configFile, 'utf8')).to.equal(before);
    const anonymous = await fetch(`${pet.server.adminUrl}${API}/config`, { headers: { 'x-gateway-console': '1' } });
    expect(anonymous.status).to.equal(401);
  });

  it('serves the page, its script and style without credentials (they hold no data), under the strict CSP, with no inline code and no external URL', async () => {
    const base = pet.server.adminUrl!;
    const page = await fetch(`${base}/gateway/configuration/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.equal(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers.get('x-frame-options')).to.equal('DENY');
    const html = await page.text();
    expect(html).to.match(/<script src="configuration.js" defer><\/script>/);
    expect(html).not.to.match(/<script>|<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.to.match(/https?:\/\//);
    for (const asset of ['configuration.js', 'configuration.css', 'favicon.svg']) {
      const res = await fetch(`${base}/gateway/configuration/${asset}`);
      expect(res.status, asset).to.equal(200);
      expect(await res.text(), asset).not.to.match(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
    const redirect = await fetch(`${base}/gateway/configuration`, { redirect: 'manual' });
    expect(redirect.status).to.equal(301);
    expect(redirect.headers.get('location')).to.equal('configuration/');
  });

  it('logs every change, refused or saved, in the audit log with its version and what changed', async () => {
    const { items } = (await (await ada.fetch('/gateway/operators/audit?limit=200')).json()) as { items: AuditEntry[] };
    const lines = items.map((e) => `${e.actor ?? '-'} ${e.action} ${e.result} ${e.target ?? ''} | ${e.detail ?? ''}`);
    expect(
      lines.some((l) =>
        l.startsWith('ada api.change ok Ente/PetStore/v1 | version 2: API Ente/PetStore/v1 changed (stop recording headers)'),
      ),
    ).to.equal(true);
    expect(
      lines.some((l) =>
        l.startsWith('ada api.change refused Ente/PetStore/v1 | 2 problem(s): apis[0].backend.url: must be an http(s) URL'),
      ),
    ).to.equal(true);
    expect(lines.some((l) => l.startsWith('ada api.add ok Ente/Echo/v2'))).to.equal(true);
    expect(lines.some((l) => l.startsWith('ada rollback ok version 1'))).to.equal(true);
    expect(lines.some((l) => l.startsWith('ada reset-caches ok admin/reset-caches'))).to.equal(true);
    // Refused by role before the route: logged with what was tried.
    expect(
      lines.some((l) =>
        l.startsWith('vera forbidden refused PUT /gateway/configuration/api/apis/Ente/PetStore/1 | your role does not allow this'),
      ),
    ).to.equal(true);
    expect(
      lines.some((l) => l.startsWith('ada token-policy.save ok token policy DemoIdP') && l.includes('(secret changed)') === false),
    ).to.equal(true);
    expect(JSON.stringify(items)).not.to.include('gateway-secret');
  });
});
