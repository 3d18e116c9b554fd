/**
 * The gateway's DPoP nonces: stateless, accepted during their window and the next, by every
 * instance holding the same client secret, and by no other policy.
 */
import { expect } from 'chai';
import { DpopNonces } from '../../../src/token/binding/nonce.js';

describe('DPoP nonces', () => {
  const realNow = Date.now;
  afterEach(() => {
    Date.now = realNow;
  });

  it('a nonce of one instance is accepted by another with the same secret and scope, not with another', () => {
    const a = new DpopNonces('gateway-secret', 'DemoIdP|https://api.example.org/', 300);
    const b = new DpopNonces('gateway-secret', 'DemoIdP|https://api.example.org/', 300);
    const otherPolicy = new DpopNonces('gateway-secret', 'Other|https://api.example.org/', 300);
    const otherSecret = new DpopNonces('another-secret', 'DemoIdP|https://api.example.org/', 300);
    const nonce = a.current();
    expect(b.accepts(nonce)).to.equal(true);
    expect(otherPolicy.accepts(nonce)).to.equal(false);
    expect(otherSecret.accepts(nonce)).to.equal(false);
  });

  it('holds for its window and the next, not after, nor before it was issued', () => {
    const start = realNow();
    Date.now = () => start;
    const nonces = new DpopNonces('s', 'p', 60);
    const nonce = nonces.current();
    Date.now = () => start + 60_000;
    expect(nonces.accepts(nonce)).to.equal(true);
    Date.now = () => start + 121_000;
    expect(nonces.accepts(nonce)).to.equal(false);
    Date.now = () => start - 61_000;
    expect(nonces.accepts(nonce)).to.equal(false);
  });

  it('refuses what is not one of its nonces, whatever its type or shape', () => {
    const nonces = new DpopNonces(undefined, 'p', 300);
    const nonce = nonces.current();
    for (const bad of [
      undefined,
      42,
      {},
      '',
      '.',
      'x'.repeat(100),
      `${nonce}x`,
      `0${nonce}`,
      nonce.replace('.', '..'),
      nonce.toUpperCase(),
    ])
      expect(nonces.accepts(bad), String(bad)).to.equal(false);
    expect(nonces.accepts(nonce)).to.equal(true);
  });
});
