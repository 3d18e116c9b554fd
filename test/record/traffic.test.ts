/**
 * The record's traffic section, from decisions built by hand: the policy that refused and its
 * group, warnings, the fallback followed while Redis was down, groups bounded and never holding
 * the client's token.
 */
import { expect } from 'chai';
import { recordLimits } from '../../src/record/bounds.js';
import { REDACTED } from '../../src/record/redact.js';
import { trafficSection } from '../../src/record/traffic.js';
import type { PolicyStanding, TrafficDecision } from '../../src/traffic/types.js';

const limits = recordLimits(64);

function standing(overrides: Partial<PolicyStanding>): PolicyStanding {
  return {
    policy: 'per-client',
    metric: 'requests',
    mode: 'enforce',
    limit: 10,
    windowSeconds: 60,
    group: 'clientId=client1',
    remaining: 3,
    resetSeconds: 0,
    exceeded: false,
    ...overrides,
  };
}

function decision(overrides: Partial<TrafficDecision>): TrafficDecision {
  return { result: 'allowed', standings: [], storeUnavailable: false, release: () => undefined, ...overrides };
}

describe('record: the traffic section', () => {
  it('names the policy that refused and its group, the warnings, every policy with where it stood (frozen)', () => {
    const refusing = standing({ remaining: 0, resetSeconds: 17, exceeded: true });
    const warning = standing({
      policy: 'watch',
      mode: 'warningOnly',
      metric: 'concurrentRequests',
      windowSeconds: undefined,
      group: '*',
      remaining: 0,
      exceeded: true,
    });
    const section = trafficSection(
      decision({ result: 'limited', limitedBy: refusing, standings: [refusing, warning], retryAfterSeconds: 17 }),
      undefined,
      limits,
    );
    expect(section).to.deep.equal({
      result: 'limited',
      policy: 'per-client',
      group: 'clientId=client1',
      warnings: ['watch'],
      policies: [
        {
          policy: 'per-client',
          mode: 'enforce',
          metric: 'requests',
          group: 'clientId=client1',
          limit: 10,
          windowSeconds: 60,
          remaining: 0,
          exceeded: true,
        },
        { policy: 'watch', mode: 'warningOnly', metric: 'concurrentRequests', group: '*', limit: 10, remaining: 0, exceeded: true },
      ],
    });
    expect(Object.isFrozen(section)).to.equal(true);
    expect(Object.isFrozen(section!.policies[0])).to.equal(true);
  });

  it('says which fallback a decision followed without Redis; nothing for a request no policy covered', () => {
    const shared = trafficSection(
      decision({ standings: [standing({})], storeUnavailable: true, fallback: 'localShare' }),
      undefined,
      limits,
    );
    expect(shared).to.deep.include({ result: 'allowed', storeUnavailable: 'localShare' });
    const denied = trafficSection(
      decision({ result: 'unavailable', standings: [standing({})], storeUnavailable: true, fallback: 'deny' }),
      undefined,
      limits,
    );
    expect(denied).to.deep.include({ result: 'unavailable', storeUnavailable: 'deny' });
    expect(denied).not.to.have.property('policy');
    expect(trafficSection(decision({}), undefined, limits)).to.equal(undefined);
  });

  it('never keeps the token in a group, and bounds a long one', () => {
    const token = 'eyJ-the-clients-token-value';
    const leaky = standing({ group: `header:x-api-key=${token}` });
    const long = standing({ policy: 'long', group: `claim:tenant=${'t'.repeat(200)}` });
    const section = trafficSection(decision({ standings: [leaky, long] }), token, limits)!;
    expect(section.policies[0]!.group).to.equal(REDACTED);
    expect(JSON.stringify(section)).not.to.include(token);
    expect(section.policies[1]!.group.length).to.be.below(120);
    expect(section.policies[1]!.group).to.match(/^claim:tenant=t+…\[truncated \d+ characters\]$/);
  });
});
