/**
 * What-if over recorded transactions: the same windows as a live decision, on the transactions'
 * own clock, refusals by group, the policy's scope and operations, in-flight counts from durations.
 */
import { expect } from 'chai';
import { TrafficControlError } from '../../src/traffic/errors.js';
import { simulateTrafficPolicy, type SimulatedTransaction } from '../../src/traffic/simulate.js';

const T0 = 1_700_000_000_000;

function tx(at: number, clientId: string, more: Partial<SimulatedTransaction> = {}): SimulatedTransaction {
  return { startedAt: T0 + at, api: 'Ente/PetStore/v1', operation: 'getPet', clientId, ...more };
}

describe('simulateTrafficPolicy', () => {
  it('refuses as a sliding window would, by group, refused requests not counted', () => {
    const transactions = [
      ...[0, 100, 200, 300].map((at) => tx(at, 'a')),
      tx(500, 'b'),
      // 10 s after the first two of `a`: two places free again.
      ...[10_000, 10_050, 10_100].map((at) => tx(at, 'a')),
    ];
    const result = simulateTrafficPolicy(
      { name: 'p', metric: 'requests', limit: 2, windowSeconds: 10, groupBy: ['clientId'], mode: 'warningOnly' },
      transactions,
    );
    expect(result).to.deep.equal({ covered: 8, refused: 3, groupCount: 2, groups: [{ group: 'clientId=a', allowed: 4, refused: 3 }] });
  });

  it('lets a fixed window pass twice the limit across its edge, and sorts transactions out of order', () => {
    const transactions = [tx(10_050, 'a'), tx(9_990, 'a'), tx(9_995, 'a'), tx(10_000, 'a'), tx(10_010, 'a')];
    const fixed = simulateTrafficPolicy({ name: 'p', metric: 'requests', limit: 2, windowSeconds: 10, window: 'fixed' }, transactions);
    expect([fixed.covered, fixed.refused]).to.deep.equal([5, 1]);
    const sliding = simulateTrafficPolicy({ name: 'p', metric: 'requests', limit: 2, windowSeconds: 10 }, transactions);
    expect(sliding.refused).to.equal(3);
  });

  it("covers only its API's transactions and its operations", () => {
    const transactions = [
      tx(0, 'a', { operation: 'updatePet' }),
      tx(1, 'a', { operation: 'updatePet' }),
      tx(2, 'a', { operation: 'getPet' }),
      tx(3, 'a', { operation: 'updatePet', api: 'Ente/Other/v1' }),
    ];
    const result = simulateTrafficPolicy(
      { name: 'writes', metric: 'requests', limit: 1, windowSeconds: 60, operations: ['updatePet'] },
      transactions,
      { api: 'Ente/PetStore/v1' },
    );
    expect([result.covered, result.refused]).to.deep.equal([2, 1]);
    expect(simulateTrafficPolicy({ name: 'all', metric: 'requests', limit: 1, windowSeconds: 60 }, transactions).refused).to.equal(3);
  });

  it('groups by headers and claims as recorded', () => {
    const transactions = [
      tx(0, 'a', { headers: { 'X-Tenant': 't1' } }),
      tx(1, 'b', { headers: { 'x-tenant': 't1' } }),
      tx(2, 'c', { claims: { org: { id: 'o1' } } }),
      tx(3, 'd', { claims: { org: { id: 'o1' } } }),
    ];
    const byTenant = simulateTrafficPolicy(
      { name: 't', metric: 'requests', limit: 1, windowSeconds: 60, groupBy: ['header:X-Tenant'] },
      transactions,
    );
    expect(byTenant.groups).to.deep.equal([
      { group: 'header:X-Tenant=-', allowed: 1, refused: 1 },
      { group: 'header:X-Tenant=t1', allowed: 1, refused: 1 },
    ]);
    const byOrg = simulateTrafficPolicy(
      { name: 'o', metric: 'requests', limit: 1, windowSeconds: 60, groupBy: ['claim:org.id'] },
      transactions,
    );
    expect(byOrg.groups.map((g) => g.group)).to.deep.equal(['claim:org.id=-', 'claim:org.id=o1']);
  });

  it('counts requests in flight from their durations', () => {
    const transactions = [tx(0, 'a', { durationMs: 100 }), tx(50, 'a', { durationMs: 10 }), tx(60, 'a'), tx(100, 'a'), tx(101, 'a')];
    const result = simulateTrafficPolicy({ name: 'c', metric: 'concurrentRequests', limit: 1 }, transactions);
    // At 50 and 60 the first is still in flight; at 100 it has ended.
    expect([result.covered, result.refused]).to.deep.equal([5, 2]);
  });

  it('refuses a policy that would not load', () => {
    expect(() => simulateTrafficPolicy({ name: 'p', metric: 'requests', limit: 1 }, [])).to.throw(
      TrafficControlError,
      'policy[0].windowSeconds: is required',
    );
  });
});
