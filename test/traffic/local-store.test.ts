/**
 * The local store's windows at their edges, on a clock the test moves: a fixed window lets a burst
 * at the end of one window and the start of the next through twice, a sliding one never lets more
 * than the limit through in any window; refused requests do not count; warning-only policies count
 * and say when they are past; in-flight slots come back on release; idle groups are forgotten.
 */
import { expect } from 'chai';
import { compileTrafficPolicies, type CompiledTrafficPolicy } from '../../src/traffic/compile.js';
import { LocalTrafficStore } from '../../src/traffic/local-store.js';
import type { TrafficPolicy } from '../../src/traffic/schema.js';
import type { StoreCheck } from '../../src/traffic/store.js';
import { facts } from './helpers.js';

function compile(...policies: TrafficPolicy[]): readonly CompiledTrafficPolicy[] {
  return compileTrafficPolicies(policies).all;
}

function checks(policies: readonly CompiledTrafficPolicy[], clientId = 'c1'): StoreCheck[] {
  return policies.map((policy) => {
    const { label, hash } = policy.group(facts({ clientId }));
    return { policy, hash, group: label, limit: policy.limit };
  });
}

describe('LocalTrafficStore', () => {
  let now: number;
  let store: LocalTrafficStore;
  beforeEach(() => {
    // A window boundary of 10 s windows, far from the epoch.
    now = 1_700_000_000_000;
    store = new LocalTrafficStore({ now: () => now, sweepMs: 0 });
  });
  afterEach(() => store.close());

  function burst(policies: readonly CompiledTrafficPolicy[], n: number, clientId?: string): number {
    let allowed = 0;
    for (let i = 0; i < n; i++) if (store.take(checks(policies, clientId)).allowed) allowed++;
    return allowed;
  }

  it('fixed: a burst at the end of a window and at the start of the next passes twice the limit', () => {
    const fixed = compile({ name: 'f', metric: 'requests', limit: 5, windowSeconds: 10, window: 'fixed', groupBy: ['clientId'] });
    now += 9_999;
    expect(burst(fixed, 8)).to.equal(5);
    now += 1;
    expect(burst(fixed, 8)).to.equal(5);
  });

  it('sliding: never more than the limit in any interval of the window', () => {
    const sliding = compile({ name: 's', metric: 'requests', limit: 5, windowSeconds: 10, groupBy: ['clientId'] });
    now += 9_999;
    expect(burst(sliding, 8)).to.equal(5);
    now += 1;
    expect(burst(sliding, 8)).to.equal(0);
    now += 9_998;
    expect(burst(sliding, 8)).to.equal(0);
    // Exactly a window after the first five: they leave it.
    now += 1;
    expect(burst(sliding, 8)).to.equal(5);
  });

  it('tells remaining and the time until more quota', () => {
    const [sliding, fixed] = compile(
      { name: 's', metric: 'requests', limit: 2, windowSeconds: 10 },
      { name: 'f', metric: 'requests', limit: 3, windowSeconds: 10, window: 'fixed', mode: 'warningOnly' },
    );
    const first = store.take(checks([sliding!, fixed!]));
    expect(first.results).to.deep.equal([
      { used: 1, exceeded: false, resetMs: 0 },
      { used: 1, exceeded: false, resetMs: 0 },
    ]);
    now += 4_000;
    const second = store.take(checks([sliding!, fixed!]));
    expect(second.results[0]).to.deep.equal({ used: 2, exceeded: false, resetMs: 6_000 });
    const third = store.take(checks([sliding!, fixed!]));
    expect(third.allowed).to.equal(false);
    expect(third.results[0]).to.deep.equal({ used: 2, exceeded: true, resetMs: 6_000 });
    // Warning only: counted even when another policy refused, past its limit from the 4th.
    expect(third.results[1]).to.deep.equal({ used: 3, exceeded: false, resetMs: 6_000 });
    expect(store.take(checks([sliding!, fixed!])).results[1]).to.deep.equal({ used: 4, exceeded: true, resetMs: 6_000 });
  });

  it('counts nothing in any policy when an enforced one refuses', () => {
    const [small, large] = compile(
      { name: 'small', metric: 'requests', limit: 1, windowSeconds: 60 },
      { name: 'large', metric: 'requests', limit: 100, windowSeconds: 60 },
    );
    expect(burst([small!, large!], 10)).to.equal(1);
    expect(store.take(checks([large!])).results[0]!.used).to.equal(2);
  });

  it('keeps groups apart', () => {
    const policies = compile({ name: 'p', metric: 'requests', limit: 3, windowSeconds: 60, groupBy: ['clientId'] });
    expect(burst(policies, 5, 'a')).to.equal(3);
    expect(burst(policies, 5, 'b')).to.equal(3);
    expect(store.usage(policies[0]!, 10)).to.deep.equal([
      { group: 'clientId=a', used: 3, limit: 3 },
      { group: 'clientId=b', used: 3, limit: 3 },
    ]);
  });

  it('in flight: a slot per allowed request, back on release (once)', () => {
    const [inFlight, warn] = compile(
      { name: 'c', metric: 'concurrentRequests', limit: 2 },
      { name: 'w', metric: 'concurrentRequests', limit: 1, mode: 'warningOnly' },
    );
    const a = store.take(checks([inFlight!, warn!]));
    const b = store.take(checks([inFlight!, warn!]));
    const c = store.take(checks([inFlight!, warn!]));
    expect([a.allowed, b.allowed, c.allowed]).to.deep.equal([true, true, false]);
    expect(b.results[1]).to.deep.equal({ used: 2, exceeded: true, resetMs: 0 });
    // The refused request took no slot in the warning-only policy either.
    expect(store.usage(warn!, 5)).to.deep.equal([{ group: '*', used: 2, limit: 1 }]);
    a.release();
    a.release();
    c.release();
    expect(store.usage(inFlight!, 5)).to.deep.equal([{ group: '*', used: 1, limit: 2 }]);
    expect(store.take(checks([inFlight!])).allowed).to.equal(true);
  });

  it('forgets a group once its window has passed', () => {
    const policies = compile(
      { name: 'f', metric: 'requests', limit: 5, windowSeconds: 10, window: 'fixed', groupBy: ['clientId'] },
      { name: 's', metric: 'requests', limit: 5, windowSeconds: 20, groupBy: ['clientId'] },
    );
    burst(policies, 1, 'a');
    now += 5_000;
    burst(policies, 1, 'b');
    expect(store.size).to.equal(4);
    now += 5_000;
    store.sweep();
    // The fixed window of both ended; the sliding ones have 10 and 15 s to go.
    expect(store.size).to.equal(2);
    now += 10_000;
    store.sweep();
    expect(store.size).to.equal(1);
    now += 5_000;
    store.sweep();
    expect(store.size).to.equal(0);
  });

  it('forgets groups in the order of their last count, and counts one again after it was forgotten', () => {
    const policies = compile({ name: 's', metric: 'requests', limit: 5, windowSeconds: 20, groupBy: ['clientId'] });
    burst(policies, 2, 'a');
    now += 5_000;
    burst(policies, 1, 'b');
    now += 5_000;
    burst(policies, 1, 'a');
    // b's last request left the window, a's (10 s ago) has not: b goes, a stays.
    now += 16_000;
    store.sweep();
    expect(store.usage(policies[0]!, 10)).to.deep.equal([{ group: 'clientId=a', used: 1, limit: 5 }]);
    expect(store.size).to.equal(1);
    now += 5_000;
    store.sweep();
    expect(store.size).to.equal(0);
    // The group counted last, forgotten, then counted again: held anew.
    expect(store.take(checks(policies, 'a')).results[0]!.used).to.equal(1);
    expect(store.size).to.equal(1);
  });

  it('sweeps by itself on a timer that keeps no process alive', async () => {
    const timed = new LocalTrafficStore({ sweepMs: 20 });
    const [policy] = compile({ name: 's', metric: 'requests', limit: 5, windowSeconds: 1 });
    timed.take(checks([policy!]));
    expect(timed.size).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(timed.size).to.equal(0);
    timed.close();
  });
});
