/**
 * XML Schema / XPath regular expressions for the `*-regexp-match` functions (XACML 2.0 A.3.13),
 * matched in time linear in the input.
 *
 * The values matched come from callers (headers, URL parameters, token claims): a backtracking
 * engine, such as JavaScript's `RegExp`, takes seconds on `^([a-z]+)+$` and 30 letters followed
 * by `!`, blocking every other request meanwhile. XML Schema regular expressions have no
 * back-references, so an automaton can match every one of them: the pattern is parsed
 * (`regex-syntax.ts`) and compiled to a Thompson automaton run as a lazily built DFA
 * (`regex-automaton.ts`).
 *
 * Matching follows `fn:matches`, which XACML 2.0 A.3.13 names for `string-regexp-match`: the
 * pattern may match any substring, unless anchored with `^` / `$`.
 *
 * @module
 */
import { LinearRegex } from './regex-automaton.js';
import { parseXsRegex, XsRegexError } from './regex-syntax.js';

export { XsRegexError, parseXsRegex } from './regex-syntax.js';
export type { XsRegexNode } from './regex-syntax.js';
export { MAX_PROGRAM } from './regex-automaton.js';

/** A compiled XML Schema regular expression. Stateless for its callers: it can be shared. */
export interface XsRegex {
  /** Whether the pattern matches `input` as `fn:matches` does, in time linear in `input`. */
  test(input: string): boolean;
}

/**
 * Compiles an XML Schema / XPath regular expression for linear-time matching. Throws
 * {@link XsRegexError} for an invalid pattern, or one that compiles to more than
 * `MAX_PROGRAM` (10,000) instructions (large counted repetitions).
 *
 * @example
 * ```ts
 * compileXsRegex('^[a-z-[aeiou]]+$').test('xyz'); // true
 * compileXsRegex('^([a-z]+)+$').test(`${'a'.repeat(100_000)}!`); // false, at once
 * ```
 */
export function compileXsRegex(pattern: string): XsRegex {
  const tree = parseXsRegex(pattern);
  try {
    return new LinearRegex(tree);
  } catch (e) {
    throw new XsRegexError(`invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}`);
  }
}
