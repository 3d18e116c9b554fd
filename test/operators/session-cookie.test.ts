/**
 * The session cookie's spellings and the Cookie header the relay sends on: every name the gateway
 * issues goes, in any case or prefix, and the client's other cookies stay exactly as they came.
 */
import { expect } from 'chai';
import { isGatewayCookie, withoutGatewayCookies } from '../../src/operators/session-cookie.js';

describe('operators: the session cookie', () => {
  it('knows its own names in every spelling, and no other name', () => {
    for (const name of [
      'eag_session',
      '__Host-eag_session',
      '__Secure-eag_session',
      'EAG_SESSION',
      '__HOST-Eag_Session',
      ' eag_session ',
      '__secure-EAG_session',
    ]) {
      expect(isGatewayCookie(name), name).to.equal(true);
    }
    for (const name of ['eag_session_x', 'xeag_session', '__Host-__Host-eag_session', '__Other-eag_session', 'eag-session', '']) {
      expect(isGatewayCookie(name), name).to.equal(false);
    }
  });

  it('removes them from a Cookie header, keeping the others byte for byte and in order', () => {
    expect(withoutGatewayCookies('a=1; b="x y"')).to.equal('a=1; b="x y"');
    expect(withoutGatewayCookies('a=1;eag_session=S; b=2')).to.equal('a=1; b=2');
    expect(withoutGatewayCookies('__Host-eag_session=S; a=%20x=y; EAG_SESSION=T;  c=')).to.equal('a=%20x=y; c=');
    expect(withoutGatewayCookies('eag_session=S; __Secure-eag_session=T')).to.equal(undefined);
    expect(withoutGatewayCookies('eag_session')).to.equal(undefined);
    // A header that names the gateway's cookie only inside another one's value is left as it is.
    expect(withoutGatewayCookies('note=eag_session')).to.equal('note=eag_session');
  });
});
