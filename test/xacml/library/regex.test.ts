import assert from 'node:assert/strict';
import { compileXsRegex, XsRegexError } from '../../../src/xacml/functions/index.js';

const matches = (pattern: string, input: string): boolean => compileXsRegex(pattern).test(input);

describe('XML Schema regular expressions (linear-time automaton)', () => {
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

  it('answer at once where a backtracking engine takes exponential time', () => {
    // JavaScript's RegExp takes seconds on 30 characters of these and doubles with each one more.
    const long = `${'a'.repeat(100_000)}!`;
    assert.equal(matches('^([a-z]+)+$', long), false);
    assert.equal(matches('^(a|a)*$', long), false);
    assert.equal(matches('^(a*)*b$', long), false);
    assert.equal(matches('^([a-z]+)+$', 'a'.repeat(100_000)), true);
  });

  it('honour anchors anywhere, empty loops, empty branches and counted repetitions', () => {
    assert.equal(matches('^$', ''), true);
    assert.equal(matches('^$', 'a'), false);
    assert.equal(matches('$', 'abc'), true);
    assert.equal(matches('a^b', 'ab'), false);
    assert.equal(matches('a$b', 'ab'), false);
    assert.equal(matches('^a$|^b$', 'b'), true);
    assert.equal(matches('(^a|b$)', 'xxb'), true);
    assert.equal(matches('(^a|b$)', 'xbx'), false);
    assert.equal(matches('$^', ''), true);
    assert.equal(matches('^(a*)*b$', 'aab'), true);
    assert.equal(matches('^(a|)*b$', 'b'), true);
    assert.equal(matches('^()*$', ''), true);
    assert.equal(matches('^a{0}$', ''), true);
    assert.equal(matches('^(ab){2,3}$', 'ababab'), true);
    assert.equal(matches('^(ab){2,3}$', 'ab'), false);
    assert.equal(matches('^(ab){2,}$', 'abababab'), true);
    assert.equal(matches('^a{2}b?$', 'aab'), true);
    assert.equal(matches('^a+?b*?$', 'aabb'), true); // reluctant: the same language
  });

  it('match code points, not UTF-16 code units', () => {
    assert.equal(matches('^.{2}$', '\u{1F600}\u{1F601}'), true);
    assert.equal(matches('^[\u{1F600}-\u{1F64F}]+$', '\u{1F600}\u{1F64F}'), true);
    assert.equal(matches('^.$', '\uD800'), true); // a lone surrogate is one character
    assert.equal(matches('^\\p{IsBasicLatin}*$', 'ab\u{1F600}'), false);
  });

  it('agree with a backtracking engine on random inputs, also past the DFA cache size', () => {
    // Patterns whose XML Schema and JavaScript meanings agree. The first needs 2^12 DFA states,
    // more than one input may build or the cache holds: the automaton is then followed directly.
    const cases: Array<[string, RegExp]> = [
      ['(a|b)*a(a|b){11}$', /(a|b)*a(a|b){11}$/],
      ['^(ab|a)*b?$', /^(ab|a)*b?$/],
      ['b(a{2,3}|ba)+b', /b(a{2,3}|ba)+b/],
      ['^[ab]*?a[^a]{3}', /^[ab]*?a[^a]{3}/],
    ];
    let seed = 42;
    const random = (): number => (seed = (seed * 69069 + 1) % 4294967296) / 4294967296;
    const word = (n: number): string => {
      let s = '';
      for (let j = 0; j < n; j++) s += random() < 0.5 ? 'a' : 'b';
      return s;
    };
    for (const [xs, js] of cases) {
      const re = compileXsRegex(xs);
      for (let i = 0; i < 400; i++) {
        const input = word(Math.floor(random() * 40));
        assert.equal(re.test(input), js.test(input), `${xs} on ${input}`);
      }
    }
    // On long inputs JavaScript's engine is quadratic here: the answer is known otherwise (the
    // 12th letter from the end is an a).
    const first = compileXsRegex(cases[0]![0]);
    for (let i = 0; i < 20; i++) {
      const long = word(5_000 + i);
      assert.equal(first.test(long), long[long.length - 12] === 'a', 'a long input');
    }
  });

  it('refuse a pattern that would compile to more than 10,000 instructions', () => {
    assert.doesNotThrow(() => compileXsRegex('^[0-9]{1,1000}$'));
    for (const p of ['a{10001}', '(a{1000}){1000}', '((a{100}){100}){100}']) {
      assert.throws(() => compileXsRegex(p), /too large/, p);
    }
  });
});
