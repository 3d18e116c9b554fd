/**
 * The registry of eagerly evaluated XACML 2.0 functions (Appendix A.3), keyed by URI.
 *
 * Not here, because the evaluator implements them itself: `and`, `or`, `n-of`, `not`, the
 * higher-order bag functions (`any-of`, `all-of`, `any-of-any`, `all-of-any`, `any-of-all`,
 * `all-of-all`, `map`) and the XPath functions (`xpath-node-count`, `xpath-node-equal`,
 * `xpath-node-match`, computed by `../xpath.js`).
 *
 * @module
 */
import type { FunctionSpec } from './types.js';
import { equalityFunctions, comparisonFunctions } from './equality.js';
import { arithmeticFunctions } from './arithmetic.js';
import { bagAndSetFunctions } from './bags.js';
import { temporalFunctions } from './temporal.js';
import { stringFunctions } from './strings.js';

export type { FunctionSpec, ValueType } from './types.js';
export { compileXsRegex, XsRegexError } from './regex.js';
export type { XsRegex } from './regex.js';
export { equalityOf } from './equality.js';

/**
 * Every eagerly evaluated function of XACML 2.0 Appendix A, by URI (1.0 namespace where the
 * function dates from XACML 1.x, 2.0 namespace for the ones XACML 2.0 added).
 *
 * @example
 * ```ts
 * const add = functions.get('urn:oasis:names:tc:xacml:1.0:function:integer-add')!;
 * add.impl([1n, 2n, 3n]); // 6n
 * ```
 */
export const functions: ReadonlyMap<string, FunctionSpec> = new Map(
  [
    ...equalityFunctions(),
    ...arithmeticFunctions(),
    ...comparisonFunctions(),
    ...temporalFunctions(),
    ...bagAndSetFunctions(),
    ...stringFunctions(),
  ].map((f) => [f.id, f] as const),
);

/** The function URIs the evaluator implements itself (logical, higher-order and XPath). */
export const EVALUATOR_FUNCTIONS: ReadonlySet<string> = new Set(
  [
    'and',
    'or',
    'n-of',
    'not',
    'any-of',
    'all-of',
    'any-of-any',
    'all-of-any',
    'any-of-all',
    'all-of-all',
    'map',
    'xpath-node-count',
    'xpath-node-equal',
    'xpath-node-match',
  ].map((n) => `urn:oasis:names:tc:xacml:1.0:function:${n}`),
);
