/**
 * The usage of the traffic policies in force, over real HTTP on the example gateway: policies
 * saved in the console and put in force by ResetAllCaches, real requests counted by the gateway's
 * engine, then each policy's busiest groups read by any operator.
 */
import { expect } from 'chai';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const API = '/gateway/configuration/api';

interface Usage {
  store?: string;
  policies: Array<{
    scope: string | null;
    policy: string;
    metric: string;
    mode: string;
    limit: number;
    windowSeconds?: number;
    window?: string;
    groupBy: string[];
    groups: Array<{ group: string; used: number; limit: number }>;
  }>;
}

describe('configuration API: usage of the traffic policies in force', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let otto: OperatorClient;
  let vera: OperatorClient;

  before(async () => {
    pet = await startPetstore();
    otto = new OperatorClient(pet.server.adminUrl!);
    vera = new OperatorClient(pet.server.adminUrl!);
    await otto.signIn('otto', PASSWORDS.otto);
    await vera.signIn('vera', PASSWORDS.vera);
  });
  after(() => pet?.stop());

  const usage = async (query = '', client = vera): Promise<{ status: number; body: Usage }> => {
    const res = await client.fetch(`${API}/traffic/usage${query}`);
    return { status: res.status, body: (await res.json()) as Usage };
  };

  it('shows no policy before one is in force: saved is not enough', async () => {
    expect((await usage()).body).to.deep.equal({ store: 'local', policies: [] });
    const perClient = { name: 'per-client', metric: 'requests', limit: 10, windowSeconds: 60, groupBy: ['clientId'] };
    expect((await otto.json(`${API}/traffic/policies/per-client`, 'PUT', { policy: perClient })).status).to.equal(200);
    const updates = { name: 'updates', metric: 'requests', limit: 100, windowSeconds: 3600, window: 'fixed', operations: ['updatePet'] };
    expect((await otto.json(`${API}/apis/Ente/PetStore/1/traffic/policies/updates`, 'PUT', { policy: updates })).status).to.equal(200);
    expect((await usage()).body.policies).to.deep.equal([]);
  });

  it('shows each policy in force with its busiest groups after traffic, used against the limit', async () => {
    expect((await otto.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await pet.putPetAs('client1')).status);
    for (let i = 0; i < 3; i++) statuses.push((await pet.putPetAs('client2')).status);
    expect(statuses.filter((s) => s === 429)).to.have.length(2);
    const { status, body } = await usage();
    expect(status).to.equal(200);
    expect(body.store).to.equal('local');
    expect(body.policies).to.deep.equal([
      {
        scope: null,
        policy: 'per-client',
        metric: 'requests',
        mode: 'enforce',
        limit: 10,
        windowSeconds: 60,
        window: 'sliding',
        groupBy: ['clientId'],
        groups: [
          { group: 'clientId=client1', used: 10, limit: 10 },
          { group: 'clientId=client2', used: 3, limit: 10 },
        ],
      },
      {
        scope: 'Ente/PetStore/v1',
        policy: 'updates',
        metric: 'requests',
        mode: 'enforce',
        limit: 100,
        windowSeconds: 3600,
        window: 'fixed',
        groupBy: [],
        // Refused requests count against no policy.
        groups: [{ group: '*', used: 13, limit: 100 }],
      },
    ]);
  });

  it('shows the top groups asked, at most 100', async () => {
    const { body } = await usage('?top=1');
    expect(body.policies[0]!.groups).to.deep.equal([{ group: 'clientId=client1', used: 10, limit: 10 }]);
    for (const bad of ['?top=0', '?top=101', '?top=x', '?top=1&top=2']) expect((await usage(bad)).status, bad).to.equal(400);
  });
});
