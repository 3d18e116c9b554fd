import { expect } from 'chai';
import { LoginAttempt, LoginThrottle } from '../../src/admin/throttle.js';

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

  it('reserves an attempt before its check: past the allowance, attempts are refused while earlier ones are still being checked', () => {
    const t = new LoginThrottle({ maxFailures: 3, windowMs: 1000 });
    const attempts = Array.from({ length: 5 }, () => t.reserve('a', 'otto', 0));
    expect(attempts.map((a) => typeof a)).to.deep.equal(['object', 'object', 'object', 'number', 'number']);
    expect(attempts[3]).to.equal(1000);
    // One of them was right: the address's failures are forgotten.
    (attempts[0] as LoginAttempt).succeeded(10);
    expect(t.blockedFor('a', 10)).to.equal(0);
  });

  it('limits an account across addresses, except from an address it signed in from', () => {
    const t = new LoginThrottle({ maxFailures: 5, maxAccountFailures: 4, windowMs: 1000 });
    (t.reserve('home', 'Otto', 0) as LoginAttempt).succeeded(0);
    for (const address of ['x1', 'x2', 'x3', 'x4']) (t.reserve(address, 'otto', 10) as LoginAttempt).failed();
    expect(t.reserve('x5', 'OTTO', 20), 'locked, whatever the case of the name').to.equal(990);
    expect(t.reserve('x5', 'vera', 20)).to.be.an.instanceOf(LoginAttempt);
    const owner = t.reserve('home', 'otto', 20);
    expect(owner).to.be.an.instanceOf(LoginAttempt);
    // A right password gives back its own slot only: the guesses from elsewhere still count.
    (owner as LoginAttempt).succeeded(20);
    expect(t.blockedFor('x5', 30, 'otto')).to.equal(990);
    expect(t.blockedFor('x5', 1020, 'otto'), 'the window over').to.equal(0);
  });

  it('validates its options, naming them', () => {
    expect(() => new LoginThrottle({ maxAccountFailures: 0 })).to.throw(TypeError, /maxAccountFailures/);
    expect(() => new LoginThrottle({ maxFailures: 0 }, 'admin.loginThrottle')).to.throw(TypeError, /admin\.loginThrottle\.maxFailures/);
    expect(() => new LoginThrottle({ windowMs: 1.5 })).to.throw(TypeError, /windowMs/);
    expect(() => new LoginThrottle({ maxAddresses: -1 })).to.throw(TypeError, /maxAddresses/);
    expect(() => new LoginThrottle(null as never)).to.throw(TypeError, /loginThrottle must be an object/);
  });
});
