import { expect } from 'chai';
import { appendQueryParameter, removeFormParameter, removeQueryParameter } from '../../src/url/parameters.js';

describe('url/parameters: the one remover of access_token', () => {
  it('removes the parameter and keeps every other pair byte for byte', () => {
    expect(removeQueryParameter('/pet?a=%41&access_token=abc&b=x+y', 'access_token')).to.equal('/pet?a=%41&b=x+y');
    expect(removeQueryParameter('/pet?access_token=abc', 'access_token')).to.equal('/pet');
    expect(removeQueryParameter('http://h/pet?x=1', 'access_token')).to.equal('http://h/pet?x=1');
  });

  it('removes every spelling some server reads as the parameter', () => {
    for (const name of [
      'ACCESS_TOKEN',
      'access%5Ftoken',
      'Access_Token',
      'access_token[]',
      'access_token[0]',
      'access_token.x',
      '%20access_token',
      'access_token%20',
    ]) {
      expect(removeQueryParameter(`/p?${name}=t&k=v`, 'access_token'), name).to.equal('/p?k=v');
    }
  });

  it('leaves names that only start alike, and keeps the fragment', () => {
    expect(removeQueryParameter('/p?access_tokens=1&access_token=t#frag', 'access_token')).to.equal('/p?access_tokens=1#frag');
    expect(removeQueryParameter('/p#?access_token=t', 'access_token')).to.equal('/p#?access_token=t');
  });

  it('removes every occurrence from a form body, malformed escapes included', () => {
    expect(removeFormParameter('access_token=a&x=%E0%A4&access_token=b', 'access_token')).to.equal('x=%E0%A4');
    expect(removeFormParameter('%ZZ=1&access_token=a', 'access_token')).to.equal('%ZZ=1');
  });

  it('appends an encoded parameter before the fragment', () => {
    expect(appendQueryParameter('/p', 'access_token', 'a b')).to.equal('/p?access_token=a%20b');
    expect(appendQueryParameter('/p?x=1#f', 'access_token', 't')).to.equal('/p?x=1&access_token=t#f');
    expect(appendQueryParameter('/p?', 'access_token', 't')).to.equal('/p?access_token=t');
  });
});
