import { expect } from 'chai';
import { compileXsRegex, XsRegexError } from '../../../src/xacml/functions/index.js';

const matches = (pattern: string, input: string): boolean => compileXsRegex(pattern).test(input);

describe('XML Schema regular expressions translated to RegExp', () => {
  it('match any substring unless anchored (fn:matches)', () => {
    expect(matches('bra', 'abracadabra')).to.equal(true);
    expect(matches('^a.*a$', 'abracadabra')).to.equal(true);
    expect(matches('^bra', 'abracadabra')).to.equal(false);
    expect(matches('', 'anything')).to.equal(true);
  });

  it('give . and \\s \\d \\w their XML Schema meaning', () => {
    expect(matches('^.$', '\n')).to.equal(false);
    expect(matches('^.$', '\u2028')).to.equal(true); // JavaScript's . would refuse it
    expect(matches('^.$', '\u{1F600}')).to.equal(true); // one character, not two code units
    expect(matches('^\\s$', '\u00A0')).to.equal(false); // XML white space only
    expect(matches('^\\d+$', '\u0663\u0664')).to.equal(true); // Arabic-Indic digits are Nd
    expect(matches('^\\w$', '_')).to.equal(false); // punctuation is not a word character in XSD
    expect(matches('^\\w$', 'é')).to.equal(true);
  });

  it('support \\i \\c name classes, categories and blocks', () => {
    expect(matches('^\\i\\c*$', 'xacml:name-1.0')).to.equal(true);
    expect(matches('^\\i', '1abc')).to.equal(false);
    expect(matches('^\\p{Lu}+$', 'ÀB')).to.equal(true);
    expect(matches('^\\P{Lu}+$', 'ab')).to.equal(true);
    expect(matches('^\\p{IsBasicLatin}+$', 'abc')).to.equal(true);
    expect(matches('^\\p{IsBasicLatin}+$', 'àbc')).to.equal(false);
    expect(matches('^[\\p{IsGreek}]$', 'λ')).to.equal(true);
  });

  it('support character-class subtraction, negation, ranges and escapes', () => {
    expect(matches('^[a-z-[aeiou]]+$', 'bcdfg')).to.equal(true);
    expect(matches('^[a-z-[aeiou]]+$', 'bad')).to.equal(false);
    expect(matches('^[a-z-[aeiou-[e]]]+$', 'bed')).to.equal(true); // nested subtraction
    expect(matches('^[^0-9]+$', 'abc')).to.equal(true);
    expect(matches('^[^0-9]+$', 'a1')).to.equal(false);
    expect(matches('^[\\-+*/]+$', '-+*/')).to.equal(true);
    expect(matches('^[a-]+$', 'a-a')).to.equal(true);
    expect(matches('^[\\s\\d]+$', ' 1 2')).to.equal(true);
    expect(matches('^[^\\s]+$', 'a b')).to.equal(false);
    expect(matches('^\\$\\^\\.\\{\\}$', '$^.{}')).to.equal(true);
    expect(matches('^a{2,3}$', 'aaa')).to.equal(true);
    expect(matches('^a{2,3}$', 'aaaa')).to.equal(false);
    expect(matches('^(ab)+$', 'abab')).to.equal(true);
    expect(matches('^(a|b)*?c$', 'abac')).to.equal(true);
  });

  it('treat JavaScript syntax as literal characters, not as syntax', () => {
    expect(matches('^/', '/x')).to.equal(true);
    expect(matches('^&&$', '&&')).to.equal(true);
    expect(matches('^[&&]+$', '&')).to.equal(true);
  });

  it('reject what XML Schema rejects, including back-references', () => {
    for (const p of ['(', 'a)', '[a', '[]', '*a', 'a{3,2}', 'a{x}', '\\1', '(a)\\1', '\\q', '\\p{Foo}', '[z-a]', '^*']) {
      expect(() => compileXsRegex(p), p).to.throw(XsRegexError);
    }
  });
});
