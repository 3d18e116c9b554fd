/**
 * The what-if of a draft traffic policy, over real HTTP on the example gateway: real requests are
 * recorded, then a draft is simulated over the window's transactions (in the operators' worker):
 * how many it would have refused, by group, with the count of transactions read and the bound.
 */
import { expect } from 'chai';
import type { AuditEntry } from '../../src/operators/audit.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const API = '/gateway/configuration/api';

interface WhatIf {
  scope: string | null;
  policy: string;
  at: string;
  window: { minutes: number; from: number; to: number };
  limit: number;
  requestedLimit?: number;
  read: number;
  truncated: boolean;
  beforeTrafficControl: number;
  oldest?: number;
  newest?: number;
  covered: number;
  refused: number;
  groupCount: number;
  groups: Array<{ group: string; allowed: number; refused: number }>;
  saved: false;
}

describe('configuration API: what-if of a draft traffic policy', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let otto: OperatorClient;
  let vera: OperatorClient;
  const perClient = { name: 'per-client', metric: 'requests', limit: 10, windowSeconds: 60, groupBy: ['clientId'] };

  before(async () => {
    pet = await startPetstore();
    otto = new OperatorClient(pet.server.adminUrl!);
    vera = new OperatorClient(pet.server.adminUrl!);
    await otto.signIn('otto', PASSWORDS.otto);
    await vera.signIn('vera', PASSWORDS.vera);
    // 30 requests of client1 and 5 of client2 within a minute, and 2 refused at the token.
    for (let i = 0; i < 30; i++) expect((await pet.putPetAs('client1')).status).to.equal(200);
    for (let i = 0; i < 5; i++) expect((await pet.putPetAs('client2')).status).to.equal(200);
    for (let i = 0; i < 2; i++) expect((await fetch(`${pet.api}/pet?access_token=nope`, { method: 'PUT' })).status).to.equal(401);
    // Records are saved once each exchange has ended.
    for (let tries = 0; (await pet.server.gateway.store.query({ limit: 500 })).items.length < 37; tries++) {
      if (tries > 100) throw new Error('the transactions were not recorded');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  after(() => pet?.stop());

  const whatIf = async (path: string, body: unknown, client = otto) => {
    const res = await client.json(`${API}${path}`, 'POST', body);
    return { status: res.status, body: (await res.json()) as WhatIf & { issues?: Array<{ path: string; message: string }> } };
  };

  it('counts what a draft would have refused over the recorded window, by group: 30 of client1 at 10 a minute → 20 refused', async () => {
    const { status, body } = await whatIf('/traffic/what-if', { policy: perClient, minutes: 15 });
    expect(status).to.equal(200);
    expect(body).to.include({
      scope: null,
      policy: 'per-client',
      at: 'trafficControl.policies[0]',
      limit: 5000,
      read: 37,
      truncated: false,
      beforeTrafficControl: 2,
      covered: 35,
      refused: 20,
      groupCount: 2,
      saved: false,
    });
    expect(body.groups).to.deep.equal([{ group: 'clientId=client1', allowed: 10, refused: 20 }]);
    expect(body.window.minutes).to.equal(15);
    expect(body.window.to - body.window.from).to.equal(15 * 60_000);
    expect(body.newest! - body.oldest!).to.be.below(60_000);
    // Nothing saved: the configuration has no traffic control.
    expect((await pet.onDisk()).trafficControl).to.equal(undefined);
  });

  it("simulates an API's draft over its operations only", async () => {
    const updates = { ...perClient, name: 'updates', operations: ['updatePet'] };
    const covered = await whatIf('/apis/Ente/PetStore/1/traffic/what-if', { policy: updates });
    expect(covered.status).to.equal(200);
    expect(covered.body).to.include({ scope: 'Ente/PetStore/v1', at: 'apis[0].trafficControl.policies[0]', covered: 35, refused: 20 });
    const reads = await whatIf('/apis/Ente/PetStore/1/traffic/what-if', { policy: { ...updates, operations: ['getPetById'] } });
    expect(reads.body).to.include({ covered: 0, refused: 0, groupCount: 0 });
    // One counter for everything: 35 requests at 30 a minute.
    const one = await whatIf('/traffic/what-if', { policy: { name: 'all', metric: 'requests', limit: 30, windowSeconds: 60 } });
    expect(one.body.refused).to.equal(5);
    expect(one.body.groups).to.deep.equal([{ group: '*', allowed: 30, refused: 5 }]);
  });

  it('reads at most limit transactions, the newest, and says the window holds more', async () => {
    const { body } = await whatIf('/traffic/what-if', { policy: perClient, limit: 12 });
    expect(body).to.include({ limit: 12, read: 12, truncated: true });
    const capped = await whatIf('/traffic/what-if', { policy: perClient, limit: 1_000_000 });
    expect(capped.body).to.include({ limit: 20_000, requestedLimit: 1_000_000, truncated: false });
  });

  it('refuses a bad draft with its path (422) and bad bounds (400); a viewer may not run one (403); every run is audited', async () => {
    const bad = await whatIf('/apis/Ente/PetStore/1/traffic/what-if', {
      policy: { name: 'updates', metric: 'requests', limit: 10, operations: ['findPets'] },
    });
    expect(bad.status).to.equal(422);
    expect(bad.body.issues!.map((i) => i.path).sort()).to.deep.equal([
      'apis[0].trafficControl.policies[0].operations[0]',
      'apis[0].trafficControl.policies[0].windowSeconds',
    ]);
    expect((await whatIf('/traffic/what-if', { policy: perClient, minutes: 0 })).status).to.equal(400);
    expect((await whatIf('/traffic/what-if', { policy: perClient, limit: 'all' })).status).to.equal(400);
    expect((await whatIf('/traffic/what-if', { policy: perClient }, vera)).status).to.equal(403);
    const { items } = (await (await otto.fetch('/gateway/operators/audit?limit=200')).json()) as { items: AuditEntry[] };
    const runs = items.filter((e) => e.action === 'traffic.what-if');
    expect(runs.find((e) => e.result === 'ok')).to.include({ actor: 'otto', target: 'traffic policy per-client (draft)' });
    expect(runs.map((e) => e.detail)).to.include(
      'draft per-client over the 37 transaction(s) of the last 15 min: 20 of 35 covered would be refused, most in group clientId=client1 (20); nothing saved',
    );
    expect(runs.find((e) => e.result === 'refused' && e.status === 422)!.target).to.equal(
      'Ente/PetStore/v1 traffic policy updates (draft)',
    );
  });
});
