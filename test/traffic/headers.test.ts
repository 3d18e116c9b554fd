/**
 * The rate-limit header fields, read back with a strict structured-field parser: one list member
 * per `requests` policy, the legacy fields of the policy nearest its limit, per `headers` setting.
 */
import { expect } from 'chai';
import { trafficHeaders } from '../../src/traffic/headers.js';
import type { PolicyStanding, TrafficDecision } from '../../src/traffic/types.js';
import { parseList } from '../support/structured-fields.js';

function standing(policy: string, limit: number, remaining: number, resetSeconds: number, windowSeconds?: number): PolicyStanding {
  return {
    policy,
    metric: windowSeconds === undefined ? 'concurrentRequests' : 'requests',
    mode: 'enforce',
    limit,
    windowSeconds,
    group: '*',
    remaining,
    resetSeconds,
    exceeded: false,
  };
}

function decision(standings: readonly PolicyStanding[], more: Partial<TrafficDecision> = {}): TrafficDecision {
  return { result: 'allowed', standings, storeUnavailable: false, release: () => undefined, ...more };
}

const both = decision([
  standing('per-client', 100, 40, 0, 60),
  standing('in-flight', 5, 4, 0),
  standing('per.day~x_y-z', 1000, 3, 3600, 86400),
]);

describe('trafficHeaders', () => {
  it('writes RateLimit-Policy and RateLimit as structured-field lists, one member per requests policy', () => {
    const fields = Object.fromEntries(trafficHeaders(both, 'ietf'));
    expect(Object.keys(fields)).to.deep.equal(['RateLimit-Policy', 'RateLimit']);
    expect(parseList(fields['RateLimit-Policy']!)).to.deep.equal([
      { value: 'per-client', params: { q: 100, w: 60 } },
      { value: 'per.day~x_y-z', params: { q: 1000, w: 86400 } },
    ]);
    expect(parseList(fields.RateLimit!)).to.deep.equal([
      { value: 'per-client', params: { r: 40, t: 0 } },
      { value: 'per.day~x_y-z', params: { r: 3, t: 3600 } },
    ]);
  });

  it('writes the legacy fields of the policy nearest its limit, in seconds from now', () => {
    expect(trafficHeaders(both, 'legacy')).to.deep.equal([
      ['X-RateLimit-Limit', '1000'],
      ['X-RateLimit-Remaining', '3'],
      ['X-RateLimit-Reset', '3600'],
    ]);
    expect(trafficHeaders(both, 'both').map(([name]) => name)).to.deep.equal([
      'RateLimit-Policy',
      'RateLimit',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ]);
    // Equally near: the one with the longer wait.
    const tie = decision([standing('a', 10, 0, 5, 10), standing('b', 20, 0, 9, 60)]);
    expect(trafficHeaders(tie, 'legacy')[2]).to.deep.equal(['X-RateLimit-Reset', '9']);
  });

  it('writes nothing under none, without a requests policy, or when nothing was counted', () => {
    expect(trafficHeaders(both, 'none')).to.deep.equal([]);
    expect(trafficHeaders(decision([standing('in-flight', 5, 4, 0)]), 'both')).to.deep.equal([]);
    expect(trafficHeaders(decision(both.standings, { storeUnavailable: true, fallback: 'allow' }), 'both')).to.deep.equal([]);
    expect(
      trafficHeaders(decision(both.standings, { result: 'unavailable', storeUnavailable: true, fallback: 'deny' }), 'both'),
    ).to.deep.equal([]);
    expect(trafficHeaders(decision(both.standings, { storeUnavailable: true, fallback: 'localShare' }), 'ietf')).to.have.length(2);
  });

  it('has a parser that refuses what RFC 8941 refuses', () => {
    for (const bad of ['"a";q=1,', '"a" "b"', '"a";Q=1', '"unterminated', '("a")', 'a;q=1.12345', '"a";q=1234567890123456']) {
      expect(() => parseList(bad), bad).to.throw(SyntaxError);
    }
  });
});
