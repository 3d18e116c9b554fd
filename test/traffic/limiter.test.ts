/**
 * The engine with the local store: decisions over the policies of a request's operation, the
 * policy that refused and Retry-After, metrics per policy, the instance cap, and the checks of its
 * settings at creation.
 */
import { expect } from 'chai';
import { InvalidOptionError } from '../../src/options.js';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { TrafficControlError, TrafficStoreError } from '../../src/traffic/errors.js';
import { createTrafficLimiter, type TrafficLimiter } from '../../src/traffic/limiter.js';
import { facts } from './helpers.js';

describe('createTrafficLimiter (local store)', () => {
  let now: number;
  let limiter: TrafficLimiter;
  const results: string[] = [];
  beforeEach(() => {
    // On a minute's boundary.
    now = 1_700_000_040_000;
    results.length = 0;
    limiter = createTrafficLimiter(
      { maxConcurrentRequests: 2, headers: 'ietf' },
      { now: () => now, sweepMs: 0, onPolicyResult: (api, policy, result) => results.push(`${api} ${policy} ${result}`) },
    );
  });
  afterEach(() => limiter.close());

  const policies = compileTrafficPolicies(
    [{ name: 'per-client', metric: 'requests', limit: 2, windowSeconds: 10, groupBy: ['clientId'] }],
    [
      { name: 'writes', metric: 'requests', limit: 1, windowSeconds: 60, window: 'fixed', operations: ['updatePet'] },
      { name: 'watch', metric: 'requests', limit: 1, windowSeconds: 60, mode: 'warningOnly' },
    ],
    { api: 'Ente/PetStore/v1' },
  );

  it('decides over the policies of the operation, naming the one that refused', async () => {
    const first = await limiter.decide(facts({ clientId: 'c1', operation: 'updatePet' }), policies);
    expect(first.result).to.equal('allowed');
    expect(first.standings.map((s) => [s.policy, s.group, s.remaining, s.exceeded])).to.deep.equal([
      ['per-client', 'clientId=c1', 1, false],
      ['writes', '*', 0, false],
      ['watch', '*', 0, false],
    ]);
    now += 1_000;
    const second = await limiter.decide(facts({ clientId: 'c1', operation: 'updatePet' }), policies);
    expect(second.result).to.equal('limited');
    expect(second.limitedBy?.policy).to.equal('writes');
    // The fixed minute ends 59 s later.
    expect(second.retryAfterSeconds).to.equal(59);
    // Another operation is not covered by `writes`; the warning-only policy is past its limit.
    const third = await limiter.decide(facts({ clientId: 'c1', operation: 'getPet' }), policies);
    expect(third.result).to.equal('allowed');
    expect(third.standings.map((s) => [s.policy, s.remaining, s.resetSeconds, s.exceeded])).to.deep.equal([
      ['per-client', 0, 9, false],
      ['watch', 0, 60, true],
    ]);
    expect(results).to.deep.equal([
      'Ente/PetStore/v1 per-client allowed',
      'Ente/PetStore/v1 writes allowed',
      'Ente/PetStore/v1 watch allowed',
      'Ente/PetStore/v1 per-client allowed',
      'Ente/PetStore/v1 writes limited',
      'Ente/PetStore/v1 watch warning',
      'Ente/PetStore/v1 per-client allowed',
      'Ente/PetStore/v1 watch warning',
    ]);
    const refused = await limiter.decide(facts({ clientId: 'c1', operation: 'getPet' }), policies);
    expect([refused.result, refused.limitedBy?.policy, refused.retryAfterSeconds]).to.deep.equal(['limited', 'per-client', 9]);
    expect(await limiter.usage(policies.all[0]!, 5)).to.deep.equal([{ group: 'clientId=c1', used: 2, limit: 2 }]);
  });

  it('allows at once a request no policy covers', async () => {
    const none = compileTrafficPolicies([]);
    const decision = await limiter.decide(facts(), none);
    expect([decision.result, decision.standings.length]).to.deep.equal(['allowed', 0]);
  });

  it('caps the requests in flight on the instance', () => {
    const cap = limiter.instanceCap!;
    const a = cap.admit();
    const b = cap.admit();
    expect(cap.admit()).to.equal(undefined);
    expect(limiter.inFlight).to.equal(2);
    a!();
    a!();
    expect(limiter.inFlight).to.equal(1);
    expect(cap.admit()).to.be.a('function');
    b!();
  });

  it('checks its settings at creation', () => {
    expect(limiter.headers).to.equal('ietf');
    expect([limiter.store, limiter.onStoreUnavailable]).to.deep.equal(['local', 'localShare']);
    const error = (() => {
      try {
        createTrafficLimiter({ store: 'memory', policies: [{ name: 'a', metric: 'requests', limit: 1 }] } as never);
      } catch (err) {
        return err as TrafficControlError;
      }
    })();
    expect(error).to.be.instanceOf(TrafficControlError);
    expect(error!.issues.map((i) => `${i.path}: ${i.message}`)).to.deep.equal(['trafficControl.store: must be one of local, redis']);
    expect(() => createTrafficLimiter({ policies: [{ name: 'a', metric: 'requests', limit: 1 }] })).to.throw(
      TrafficControlError,
      'trafficControl.policies[0].windowSeconds: is required for a requests policy',
    );
    expect(() => createTrafficLimiter({ store: 'redis' }))
      .to.throw(TrafficStoreError)
      .with.property('code', 'ERR_TRAFFIC_STORE_NEEDS_REDIS');
    expect(() => createTrafficLimiter({}, { sweep: 1 } as never)).to.throw(InvalidOptionError, 'did you mean "sweepMs"?');
    expect(() => createTrafficLimiter({}, { concurrencyLeaseMs: 0 })).to.throw(InvalidOptionError, 'concurrencyLeaseMs');
  });
});
