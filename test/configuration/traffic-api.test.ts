/**
 * Traffic control in the configuration API, over real HTTP on the example gateway: operators and
 * admins edit the top-level settings and the policies (at the top and in an API), viewers are
 * refused; every edit is checked with the whole configuration (issues with their path, nothing
 * saved), saved as a version and audited with what changed.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { GatewayConfig } from '../../src/index.js';
import type { AuditEntry } from '../../src/operators/audit.js';
import { CLUSTER_SECRET, cleanPrefix, REDIS_URL, testPrefix } from '../cluster/helpers.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const API = '/gateway/configuration/api';
const TOP = `${API}/traffic/policies`;
const PETSTORE = `${API}/apis/Ente/PetStore/1/traffic/policies`;

interface Issue {
  path: string;
  message: string;
}

describe('configuration API: traffic control', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let otto: OperatorClient;
  let vera: OperatorClient;

  before(async () => {
    pet = await startPetstore();
    ada = new OperatorClient(pet.server.adminUrl!);
    otto = new OperatorClient(pet.server.adminUrl!);
    vera = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
    await otto.signIn('otto', PASSWORDS.otto);
    await vera.signIn('vera', PASSWORDS.vera);
  });
  after(() => pet?.stop());

  const config = async (client = ada) =>
    (await (await client.fetch(`${API}/config`)).json()) as {
      version: { version: number };
      document: GatewayConfig;
      canEdit: boolean;
      canEditTraffic: boolean;
    };
  const audit = async () => ((await (await ada.fetch('/gateway/operators/audit?limit=200')).json()) as { items: AuditEntry[] }).items;
  const perClient = { name: 'per-client', metric: 'requests', limit: 100, windowSeconds: 60, groupBy: ['clientId'] };

  it('tells each role whether it may edit traffic control: operators and admins may, viewers not', async () => {
    expect(await config(ada)).to.include({ canEdit: true, canEditTraffic: true });
    expect(await config(otto)).to.include({ canEdit: false, canEditTraffic: true });
    expect(await config(vera)).to.include({ canEdit: false, canEditTraffic: false });
  });

  it('refuses a viewer every edit (403, audited as forbidden) and saves nothing', async () => {
    const before = await readFile(pet.copy.configFile, 'utf8');
    expect((await vera.json(`${TOP}/per-client`, 'PUT', { policy: perClient })).status).to.equal(403);
    expect((await vera.json(`${PETSTORE}/per-client`, 'PUT', { policy: perClient })).status).to.equal(403);
    expect((await vera.json(`${API}/traffic/settings`, 'PUT', { settings: { headers: 'none' } })).status).to.equal(403);
    expect((await vera.json(`${TOP}/per-client`, 'DELETE', {})).status).to.equal(403);
    expect(await readFile(pet.copy.configFile, 'utf8')).to.equal(before);
    expect((await config()).version.version).to.equal(1);
    const refused = (await audit()).filter((e) => e.actor === 'vera' && e.action === 'forbidden').map((e) => e.target);
    expect(refused).to.include.members([
      'PUT /gateway/configuration/api/traffic/policies/per-client',
      'PUT /gateway/configuration/api/apis/Ente/PetStore/1/traffic/policies/per-client',
      'PUT /gateway/configuration/api/traffic/settings',
      'DELETE /gateway/configuration/api/traffic/policies/per-client',
    ]);
  });

  it('an operator adds a top-level policy: saved as a new version, on disk, audited with who and what', async () => {
    const res = await otto.json(`${TOP}/per-client`, 'PUT', { policy: perClient, baseVersion: 1 });
    expect(res.status).to.equal(200);
    const saved = (await res.json()) as { version: { version: number; author: string; comment: string }; added: boolean };
    expect(saved.version).to.include({ version: 2, author: 'otto', comment: 'traffic policy per-client added' });
    expect(saved.added).to.equal(true);
    expect((await pet.onDisk()).trafficControl).to.deep.equal({ policies: [perClient] });
    const entry = (await audit()).find((e) => e.action === 'traffic.policy.save' && e.result === 'ok');
    expect(entry).to.include({ actor: 'otto', role: 'operator', target: 'traffic policy per-client', status: 200 });
    expect(entry!.detail).to.equal('version 2: traffic policy per-client added');
    // An operator's role reaches traffic control only: the rest of the configuration stays the admins'.
    const api = (await config(otto)).document.apis[0]!;
    expect((await otto.json(`${API}/apis/Ente/PetStore/1`, 'PUT', { api })).status).to.equal(403);
  });

  it('an admin changes it: the audit entry names each changed field with its old and new value', async () => {
    const res = await ada.json(`${TOP}/per-client`, 'PUT', { policy: { ...perClient, limit: 10, window: 'fixed' } });
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { added: boolean }).added).to.equal(false);
    expect((await pet.onDisk()).trafficControl!.policies).to.deep.equal([{ ...perClient, limit: 10, window: 'fixed' }]);
    const entry = (await audit()).find((e) => e.action === 'traffic.policy.save' && e.actor === 'ada');
    expect(entry!.detail).to.equal('version 3: traffic policy per-client changed (limit 100 → 10, window (none) → "fixed")');
  });

  it('refuses a bad policy with 422, each issue with its path, saves nothing, and audits the refusal', async () => {
    const before = await readFile(pet.copy.configFile, 'utf8');
    const version = (await config()).version.version;
    const res = await otto.json(`${TOP}/burst`, 'PUT', { policy: { metric: 'requests', limit: 0, groupBy: ['header:authorization'] } });
    expect(res.status).to.equal(422);
    const { issues } = (await res.json()) as { issues: Issue[] };
    expect(issues.map((i) => i.path)).to.include.members(['trafficControl.policies[1].limit']);
    const rules = await otto.json(`${TOP}/burst`, 'PUT', { policy: { metric: 'requests', limit: 5, groupBy: ['header:authorization'] } });
    expect(rules.status).to.equal(422);
    expect(((await rules.json()) as { issues: Issue[] }).issues).to.have.deep.members([
      { path: 'trafficControl.policies[1].windowSeconds', message: 'is required for a requests policy' },
      { path: 'trafficControl.policies[1].groupBy[0]', message: 'may not name authorization: its values are credentials' },
    ]);
    expect(await readFile(pet.copy.configFile, 'utf8')).to.equal(before);
    expect((await config()).version.version).to.equal(version);
    const refused = (await audit()).find((e) => e.action === 'traffic.policy.save' && e.result === 'refused');
    expect(refused).to.include({ actor: 'otto', target: 'traffic policy burst', status: 422 });
    expect(refused!.detail)
      .to.match(/^2 problem\(s\): /)
      .and.include('trafficControl.policies[1].windowSeconds: is required for a requests policy');
  });

  it("edits an API's own policies: operations checked against the API's, names unique with the top-level ones", async () => {
    const perOp = { name: 'updates', metric: 'requests', limit: 5, windowSeconds: 60, operations: ['updatePet'] };
    expect((await otto.json(`${PETSTORE}/updates`, 'PUT', { policy: perOp })).status).to.equal(200);
    expect((await pet.onDisk()).apis[0]!.trafficControl).to.deep.equal({ policies: [perOp] });
    const badOp = await otto.json(`${PETSTORE}/updates`, 'PUT', { policy: { ...perOp, operations: ['findPets'] } });
    expect(badOp.status).to.equal(422);
    expect(((await badOp.json()) as { issues: Issue[] }).issues.map((i) => i.path)).to.deep.equal([
      'apis[0].trafficControl.policies[0].operations[0]',
    ]);
    const clash = await otto.json(`${PETSTORE}/per-client`, 'PUT', { policy: { ...perClient, name: 'per-client' } });
    expect(clash.status).to.equal(422);
    expect(((await clash.json()) as { issues: Issue[] }).issues.map((i) => i.path)).to.deep.equal([
      'apis[0].trafficControl.policies[1].name',
    ]);
    const missing = await otto.json(`${API}/apis/Ente/Nope/1/traffic/policies/x`, 'PUT', { policy: perOp });
    expect(missing.status).to.equal(404);
    const audited = (await audit()).find(
      (e) => e.action === 'traffic.policy.save' && e.result === 'ok' && e.target === 'Ente/PetStore/v1 traffic policy updates',
    );
    expect(audited!.detail).to.match(/^version \d+: API Ente\/PetStore\/v1 traffic policy updates added$/);
  });

  it('changes the top-level settings, keeping the policies; a bad value is refused with its path', async () => {
    const res = await otto.json(`${API}/traffic/settings`, 'PUT', {
      settings: { maxConcurrentRequests: 50, store: 'local', headers: 'ietf' },
      comment: 'cap the instance',
    });
    expect(res.status).to.equal(200);
    expect((await pet.onDisk()).trafficControl).to.deep.equal({
      maxConcurrentRequests: 50,
      store: 'local',
      headers: 'ietf',
      policies: [{ ...perClient, limit: 10, window: 'fixed' }],
    });
    const entry = (await audit()).find((e) => e.action === 'traffic.settings');
    expect(entry!.detail).to.match(
      /: traffic control settings changed \(maxConcurrentRequests \(none\) → 50, store \(none\) → "local", headers \(none\) → "ietf"\) \(cap the instance\)$/,
    );
    const bad = await otto.json(`${API}/traffic/settings`, 'PUT', { settings: { headers: 'all', onStoreUnavailable: 'retry' } });
    expect(bad.status).to.equal(422);
    expect(((await bad.json()) as { issues: Issue[] }).issues.map((i) => i.path).sort()).to.deep.equal([
      'trafficControl.headers',
      'trafficControl.onStoreUnavailable',
    ]);
    expect((await otto.json(`${API}/traffic/settings`, 'PUT', { settings: { policies: [] } })).status).to.equal(400);
    // null (or absent) removes a setting: its default applies.
    expect((await otto.json(`${API}/traffic/settings`, 'PUT', { settings: { store: 'local' } })).status).to.equal(200);
    expect((await pet.onDisk()).trafficControl).to.deep.equal({ store: 'local', policies: [{ ...perClient, limit: 10, window: 'fixed' }] });
  });

  it('refuses store "redis" at the save in a gateway without Redis (422 at trafficControl.store, nothing saved, audited); one with Redis saves it', async () => {
    const before = await pet.onDisk();
    const noRedis = 'is redis, and the gateway has no Redis (give serve REDIS_URL, or createGateway its redis option)';
    for (const dryRun of [true, false]) {
      const res = await otto.json(`${API}/traffic/settings`, 'PUT', { settings: { store: 'redis' }, dryRun });
      expect(res.status).to.equal(422);
      const body = (await res.json()) as { detail: string; issues: Issue[] };
      expect(body.issues).to.deep.equal([{ path: 'trafficControl.store', message: noRedis }]);
      expect(body.detail).to.equal(`1 problem(s): trafficControl.store: ${noRedis}`);
    }
    expect(await pet.onDisk()).to.deep.equal(before);
    const refused = (await audit()).find((e) => e.action === 'traffic.settings' && e.result === 'refused');
    expect(refused).to.include({ actor: 'otto', status: 422 });
    expect(refused!.detail).to.include(`trafficControl.store: ${noRedis}`);
    // A gateway with Redis: the same setting is saved.
    const prefix = testPrefix('console-store');
    const shared = await startPetstore({ redis: REDIS_URL, clusterSecret: CLUSTER_SECRET, redisKeyPrefix: prefix });
    try {
      const operator = new OperatorClient(shared.server.adminUrl!);
      await operator.signIn('otto', PASSWORDS.otto);
      expect((await operator.json(`${API}/traffic/settings`, 'PUT', { settings: { store: 'redis' } })).status).to.equal(200);
      expect((await shared.onDisk()).trafficControl).to.deep.equal({ store: 'redis' });
    } finally {
      await shared.stop();
      await cleanPrefix(prefix);
    }
  });

  it('removes policies: the section goes with its last policy; an unknown one is 404', async () => {
    expect((await ada.json(`${PETSTORE}/updates`, 'DELETE', {})).status).to.equal(200);
    expect((await pet.onDisk()).apis[0]).not.to.have.property('trafficControl');
    expect((await ada.json(`${TOP}/per-client`, 'DELETE', {})).status).to.equal(200);
    expect((await pet.onDisk()).trafficControl).to.deep.equal({ store: 'local' });
    expect((await ada.json(`${TOP}/per-client`, 'DELETE', {})).status).to.equal(404);
    const entry = (await audit()).find((e) => e.action === 'traffic.policy.remove' && e.result === 'ok');
    expect(entry!.detail).to.match(/^version \d+: traffic policy per-client removed$/);
  });
});
