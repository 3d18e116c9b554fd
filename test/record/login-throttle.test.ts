import { expect } from 'chai';
import { LoginThrottle } from '../../src/record/console/throttle.js';

describe('LoginThrottle', () => {
  it('blocks an address after maxFailures within the window, until windowMs after the last failure', () => {
    const t = new LoginThrottle({ maxFailures: 3, windowMs: 1000 });
    expect(t.fail('a', 0)).to.equal(1);
    expect(t.fail('a', 100)).to.equal(2);
    expect(t.blockedFor('a', 150)).to.equal(0);
    expect(t.fail('a', 200)).to.equal(3);
    expect(t.blockedFor('a', 200)).to.equal(1000);
    expect(t.blockedFor('a', 1199)).to.equal(1);
    expect(t.blockedFor('a', 1200)).to.equal(0);
    expect(t.size).to.equal(0);
  });

  it('forgets failures older than the window', () => {
    const t = new LoginThrottle({ maxFailures: 2, windowMs: 1000 });
    t.fail('a', 0);
    expect(t.fail('a', 1000), 'a new window').to.equal(1);
    expect(t.blockedFor('a', 1001)).to.equal(0);
  });

  it('a success forgets its own address only', () => {
    const t = new LoginThrottle({ maxFailures: 2, windowMs: 1000 });
    t.fail('a', 0);
    t.fail('b', 0);
    t.succeed('a');
    expect(t.fail('a', 10)).to.equal(1);
    expect(t.fail('b', 10)).to.equal(2);
    expect(t.blockedFor('b', 20)).to.be.above(0);
  });

  it('remembers at most maxAddresses, dropping expired ones first, then the stalest', () => {
    const t = new LoginThrottle({ maxFailures: 1, windowMs: 1000, maxAddresses: 3 });
    t.fail('old', 0);
    t.fail('x', 500);
    t.fail('y', 600);
    t.fail('z', 1200); // 'old' expired: it goes first
    expect(t.size).to.equal(3);
    expect(t.blockedFor('x', 1200)).to.be.above(0);
    t.fail('w', 1201); // full of live entries: the stalest ('x') goes
    expect(t.size).to.equal(3);
    expect(t.blockedFor('x', 1202)).to.equal(0);
    expect(t.blockedFor('y', 1202)).to.be.above(0);
  });

  it('validates its options, naming them', () => {
    expect(() => new LoginThrottle({ maxFailures: 0 }, 'admin.loginThrottle')).to.throw(TypeError, /admin\.loginThrottle\.maxFailures/);
    expect(() => new LoginThrottle({ windowMs: 1.5 })).to.throw(TypeError, /windowMs/);
    expect(() => new LoginThrottle({ maxAddresses: -1 })).to.throw(TypeError, /maxAddresses/);
    expect(() => new LoginThrottle(null as never)).to.throw(TypeError, /loginThrottle must be an object/);
  });
});
