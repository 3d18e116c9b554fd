/**
 * The one edit distance of the project (src/options.ts): what the did-you-mean of option keys,
 * command-line flags and XACML designators is measured with.
 */
import { expect } from 'chai';
import { editDistance, nearestKey } from '../src/options.js';

describe('options: editDistance and nearestKey', () => {
  it('counts insertions, deletions, substitutions and an adjacent swap as one each', () => {
    expect(editDistance('port', 'port')).to.equal(0);
    expect(editDistance('prot', 'port')).to.equal(1);
    expect(editDistance('por', 'port')).to.equal(1);
    expect(editDistance('ports', 'port')).to.equal(1);
    expect(editDistance('pert', 'port')).to.equal(1);
    expect(editDistance('', 'port')).to.equal(4);
  });

  it('counts a change of case as caseCost when asked (clientID nearer to clientId than clientIx)', () => {
    expect(editDistance('clientID', 'clientId')).to.equal(1);
    expect(editDistance('clientID', 'clientId', 0.5)).to.equal(0.5);
    expect(editDistance('clientIx', 'clientId', 0.5)).to.equal(1);
  });

  it('nearestKey: a few letters off, or a word of the key; none when nothing is close', () => {
    expect(nearestKey('requireScope', ['requiredScopes', 'policy'])).to.equal('requiredScopes');
    expect(nearestKey('timeout', ['timeoutMs', 'retries'])).to.equal('timeoutMs');
    expect(nearestKey('adminport', ['port', 'adminPort'])).to.equal('adminPort');
    expect(nearestKey('zzzzzzzzzzzzzzzzzzzzz', ['port'])).to.equal(undefined);
  });
});
