import { expect } from 'chai';
import type { AuditInput } from '../../src/operators/audit.js';
import { RefusalAggregator } from '../../src/operators/refusals.js';

const refusal = (address: string, action = 'sign-in'): AuditInput => ({ actor: null, address, action, result: 'refused', status: 401 });

describe('RefusalAggregator: refusals of nobody, one entry per address and window', () => {
  it('logs the first refusal of an address, counts the others, and writes one summary when the window closes', () => {
    const written: AuditInput[] = [];
    const refusals = new RefusalAggregator({ windowMs: 1000, maxAddresses: 10 }, (e) => written.push(e));
    refusals.add(refusal('10.0.0.1'), 0);
    for (let t = 1; t <= 500; t++) refusals.add(refusal('10.0.0.1', t % 2 === 0 ? 'sign-in' : 'forbidden'), t);
    expect(written).to.have.length(1);
    expect(refusals.aggregated).to.equal(500);
    refusals.sweep(999);
    expect(written).to.have.length(1);
    refusals.sweep(1000);
    expect(written).to.have.length(2);
    expect(written[1]).to.include({ actor: null, address: '10.0.0.1', action: 'refused-requests', result: 'refused' });
    expect(written[1]!.detail).to.equal(
      '501 refused requests from 10.0.0.1 between 1970-01-01T00:00:00.000Z and 1970-01-01T00:00:00.500Z (the first logged on its own): sign-in 251, forbidden 250',
    );
    // A new window: its first refusal logged again.
    refusals.add(refusal('10.0.0.1'), 2000);
    expect(written).to.have.length(3);
    refusals.close();
  });

  it('writes no summary for a window of one refusal', () => {
    const written: AuditInput[] = [];
    const refusals = new RefusalAggregator({ windowMs: 1000, maxAddresses: 10 }, (e) => written.push(e));
    refusals.add(refusal('10.0.0.1'), 0);
    refusals.sweep(5000);
    expect(written).to.have.length(1);
  });

  it('counts at most maxAddresses apart; the others share one count', () => {
    const written: AuditInput[] = [];
    const refusals = new RefusalAggregator({ windowMs: 1000, maxAddresses: 2 }, (e) => written.push(e));
    for (let i = 0; i < 1000; i++) refusals.add(refusal(`10.0.${i >> 8}.${i & 255}`), 10);
    expect(written.map((e) => e.address)).to.deep.equal(['10.0.0.0', '10.0.0.1', '10.0.0.2']);
    refusals.close();
    expect(written).to.have.length(4);
    expect(written[3]!.detail).to.match(/^998 refused requests from addresses past the ones counted one by one between /);
  });
});
