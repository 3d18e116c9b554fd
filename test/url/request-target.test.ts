/**
 * The canonical request target, unit by unit (the attacks over HTTP are in
 * test/security/paths.test.ts).
 */
import { expect } from 'chai';
import { canonicalTarget, isRefused } from '../../src/url/request-target.js';

const strict = { allowEmptySegments: false };
const canonical = (target: string, rules = strict): string => {
  const result = canonicalTarget(target, rules);
  if (isRefused(result)) throw new Error(`${target} refused: ${result.refused}`);
  return result.query === '' && !target.includes('?') ? result.path : `${result.path}?${result.query}`;
};
const refusal = (target: string, rules = strict): string | undefined => {
  const result = canonicalTarget(target, rules);
  return isRefused(result) ? result.refused : undefined;
};

describe('canonicalTarget', () => {
  it('keeps a canonical path as it is, and the query as sent', () => {
    expect(canonical('/pet/10')).to.equal('/pet/10');
    expect(canonical('/')).to.equal('/');
    expect(canonical('/pet/')).to.equal('/pet/');
    expect(canonical('/a?x=%2F&y=..')).to.equal('/a?x=%2F&y=..');
    expect(canonical("/a-b_c.d~e!$&'()*+,=:@")).to.equal("/a-b_c.d~e!$&'()*+,=:@");
  });

  it('decodes escaped unreserved characters and writes other escapes in upper case', () => {
    expect(canonical('/%61dmin')).to.equal('/admin');
    expect(canonical('/%41%7e%2d%2E%5F')).to.equal('/A~-._');
    expect(canonical('/a%2ab')).to.equal('/a%2Ab');
    expect(canonical('/a%20b')).to.equal('/a%20b');
    expect(canonical('/a%3bb')).to.equal('/a%3Bb');
  });

  it('escapes characters outside pchar', () => {
    expect(canonical('/a"b')).to.equal('/a%22b');
    expect(canonical('/caf\u00e9')).to.equal('/caf%E9');
    expect(canonical('/{x}|^`[]')).to.equal('/%7Bx%7D%7C%5E%60%5B%5D');
  });

  it('refuses what has no single meaning across servers', () => {
    const cases: Array<[string, string]> = [
      ['/a/../b', 'dot segment'],
      ['/a/./b', 'dot segment'],
      ['/a/..', 'dot segment'],
      ['/a/%2e%2E/b', 'dot segment'],
      ['/a/%2e', 'dot segment'],
      ['/a%2fb', 'encoded path separator'],
      ['/a%5Cb', 'encoded path separator'],
      ['/a\\b', 'backslash in the path'],
      ['/a%00', 'encoded control character'],
      ['/a%0a', 'encoded control character'],
      ['/a%7f', 'encoded control character'],
      ['/a\u0001', 'control or non-byte character in the path'],
      ['/a\u0100', 'control or non-byte character in the path'],
      ['/a;b', 'path parameter (;)'],
      ['//a', 'empty path segment'],
      ['/a//b', 'empty path segment'],
      ['/a%zz', 'malformed percent-encoding'],
      ['/a%4', 'malformed percent-encoding'],
      ['/a#b', 'fragment in the request target'],
      ['*', 'not an origin-form request target'],
      ['http://host/a', 'not an origin-form request target'],
    ];
    for (const [target, reason] of cases) expect(refusal(target), target).to.equal(reason);
  });

  it('keeps empty segments only when allowed; the other refusals stay', () => {
    const lenient = { allowEmptySegments: true };
    expect(canonical('/a//b', lenient)).to.equal('/a//b');
    expect(refusal('/a//../b', lenient)).to.equal('dot segment');
    expect(canonical('/a/.../b')).to.equal('/a/.../b');
  });
});
