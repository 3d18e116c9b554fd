/**
 * The restart policy of `serve --workers`: the delay before a slot's worker is started again, and
 * when the primary gives up.
 */
import { expect } from 'chai';
import { RESTART_POLICY, SlotRestarts } from '../../src/server/restarts.js';

describe('the restart policy of serve --workers', () => {
  it('doubles the delay for each failed start in a row, up to the cap, and gives up at the start limit within the window', () => {
    const slot = new SlotRestarts({ ...RESTART_POLICY, startLimit: 8, startLimitWindowMs: 1_000_000 });
    const delays: number[] = [];
    let now = 0;
    for (let i = 0; i < 7; i++) {
      const decision = slot.died((now += 1_000), undefined);
      expect(decision.giveUp).to.equal(false);
      if (!decision.giveUp) delays.push(decision.delayMs);
    }
    expect(delays).to.deep.equal([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(slot.died((now += 1_000), undefined)).to.deep.equal({ giveUp: true, failures: 8, withinMs: 7_000 });
  });

  it('gives up after 5 failed starts within 120 s, a worker that served less than 10 s included', () => {
    const slot = new SlotRestarts();
    expect(slot.died(0, undefined).giveUp).to.equal(false);
    expect(slot.died(2_000, 500).giveUp).to.equal(false);
    expect(slot.died(5_000, undefined).giveUp).to.equal(false);
    expect(slot.died(10_000, 9_999).giveUp).to.equal(false);
    expect(slot.died(20_000, undefined)).to.deep.equal({ giveUp: true, failures: 5, withinMs: 20_000 });
  });

  it('failed starts slower than the window never reach the limit: restarts go on, at the capped delay', () => {
    const slot = new SlotRestarts();
    let now = 0;
    for (let i = 0; i < 20; i++) {
      const decision = slot.died((now += 40_000), undefined);
      expect(decision.giveUp, `failure ${i + 1}`).to.equal(false);
    }
    expect(slot.died((now += 40_000), undefined)).to.include({ giveUp: false, delayMs: 30_000 });
  });

  it('a worker that served 10 s or more starts a new count: restarted after 1 s', () => {
    const slot = new SlotRestarts();
    for (let i = 0; i < 4; i++) slot.died(i * 1_000, undefined);
    expect(slot.died(60_000, 10_000)).to.deep.equal({ giveUp: false, delayMs: 1_000, failures: 1 });
    for (let i = 0; i < 3; i++) expect(slot.died(61_000 + i, undefined).giveUp).to.equal(false);
    expect(slot.died(62_000, undefined).giveUp).to.equal(true);
  });
});
