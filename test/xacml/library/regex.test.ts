import assert from 'node:assert/strict';
import { compileXsRegex, XsRegexError } from '../../../src/xacml/functions/index.js';

const matches = (pattern: string, input: string): boolean => compileXsRegex(pattern).test(input);

describe('XML Schema regular expressions translated to RegExp', () => {
  it('match any substring unless anchored (fn:matches)', () => {
    assert.equal(matches('bra', 'abracadabra'), true);
    assert.equal(matches('^a.*a$', 'abracadabra'), true);
    assert.equal(matches('^bra', 'abracadabra'), false);
    assert.equal(matches('', 'anything'), true);
  });

  it('give . and \\s \\d \\w their XML Schema meaning', () => {
    assert.equal(matches('^.$', '\n'), false);
    assert.equal(matches('^.$', '\u2028'), true); // JavaScript's . would refuse it
    assert.equal(matches('^.$', '\u{1F600}'), true); // one character, not two code units
    assert.equal(matches('^\\s$', '\u00A0'), false); // XML white space only
    assert.equal(matches('^\\d+$', '\u0663\u0664'), true); // Arabic-Indic digits are Nd
    assert.equal(matches('^\\w$', '_'), false); // punctuation is not a word character in XSD
    assert.equal(matches('^\\w$', 'é'), true);
  });

  it('support \\i \\c name classes, categories and blocks', () => {
    assert.equal(matches('^\\i\\c*$', 'xacml:name-1.0'), true);
    assert.equal(matches('^\\i', '1abc'), false);
    assert.equal(matches('^\\p{Lu}+$', 'ÀB'), true);
    assert.equal(matches('^\\P{Lu}+$', 'ab'), true);
    assert.equal(matches('^\\p{IsBasicLatin}+$', 'abc'), true);
    assert.equal(matches('^\\p{IsBasicLatin}+$', 'àbc'), false);
    assert.equal(matches('^[\\p{IsGreek}]$', 'λ'), true);
  });

  it('support character-class subtraction, negation, ranges and escapes', () => {
    assert.equal(matches('^[a-z-[aeiou]]+$', 'bcdfg'), true);
    assert.equal(matches('^[a-z-[aeiou]]+$', 'bad'), false);
    assert.equal(matches('^[a-z-[aeiou-[e]]]+$', 'bed'), true); // nested subtraction
    assert.equal(matches('^[^0-9]+$', 'abc'), true);
    assert.equal(matches('^[^0-9]+$', 'a1'), false);
    assert.equal(matches('^[\\-+*/]+$', '-+*/'), true);
    assert.equal(matches('^[a-]+$', 'a-a'), true);
    assert.equal(matches('^[\\s\\d]+$', ' 1 2'), true);
    assert.equal(matches('^[^\\s]+$', 'a b'), false);
    assert.equal(matches('^\\$\\^\\.\\{\\}$', '$^.{}'), true);
    assert.equal(matches('^a{2,3}$', 'aaa'), true);
    assert.equal(matches('^a{2,3}$', 'aaaa'), false);
    assert.equal(matches('^(ab)+$', 'abab'), true);
    assert.equal(matches('^(a|b)*?c$', 'abac'), true);
  });

  it('treat JavaScript syntax as literal characters, not as syntax', () => {
    assert.equal(matches('^/', '/x'), true);
    assert.equal(matches('^&&$', '&&'), true);
    assert.equal(matches('^[&&]+$', '&'), true);
  });

  it('reject what XML Schema rejects, including back-references', () => {
    for (const p of ['(', 'a)', '[a', '[]', '*a', 'a{3,2}', 'a{x}', '\\1', '(a)\\1', '\\q', '\\p{Foo}', '[z-a]', '^*']) {
      assert.throws(() => compileXsRegex(p), XsRegexError, p);
    }
  });
});
