/**
 * Equality predicates (XACML 2.0 A.3.1) and the comparison functions of A.3.6 and A.3.8,
 * including `time-in-range`.
 *
 * @module
 */
import type { FunctionSpec } from './types.js';
import { BOOL, CORE_TYPES, F1, F2, fixed, one } from './define.js';
import { dataTypes } from '../datatypes/index.js';
import { compareCodePoints } from '../datatypes/lexical.js';
import { compareTemporal, timeInRange, type XsDateTime } from '../datatypes/temporal.js';
import * as T from '../datatypes/uris.js';

/** Types whose runtime values are JavaScript primitives where `===` is the XACML equality. */
const STRICT = new Set([T.STRING, T.BOOLEAN, T.INTEGER, T.DOUBLE, T.ANY_URI, T.HEX_BINARY, T.BASE64_BINARY]);

/** The equality of a data type as a plain function (strict `===` where that is exact). */
export function equalityOf(uri: string): (a: unknown, b: unknown) => boolean {
  if (STRICT.has(uri)) return (a, b) => a === b;
  const t = dataTypes.get(uri);
  if (!t) throw new Error(`unknown data type ${uri}`);
  return (a, b) => t.equal(a, b);
}

/** `T-equal` for each of the 14 types of A.3.1. */
export function equalityFunctions(): FunctionSpec[] {
  return CORE_TYPES.map(([name, uri]) => {
    const eq = equalityOf(uri);
    const p = one(uri);
    return fixed(`${F1}${name}-equal`, [p, p], BOOL, (a) => eq(a[0], a[1]));
  });
}

type Cmp = (a: never, b: never) => number | undefined;

function comparisons(name: string, uri: string, cmp: Cmp): FunctionSpec[] {
  const p = one(uri);
  const c = cmp as (a: unknown, b: unknown) => number | undefined;
  // An undefined order (NaN) makes every comparison false, as IEEE 754 says.
  return [
    fixed(`${F1}${name}-greater-than`, [p, p], BOOL, (a) => (c(a[0], a[1]) ?? NaN) > 0),
    fixed(`${F1}${name}-greater-than-or-equal`, [p, p], BOOL, (a) => (c(a[0], a[1]) ?? NaN) >= 0),
    fixed(`${F1}${name}-less-than`, [p, p], BOOL, (a) => (c(a[0], a[1]) ?? NaN) < 0),
    fixed(`${F1}${name}-less-than-or-equal`, [p, p], BOOL, (a) => (c(a[0], a[1]) ?? NaN) <= 0),
  ];
}

/**
 * `-greater-than`, `-greater-than-or-equal`, `-less-than`, `-less-than-or-equal` for integer,
 * double (A.3.6), string, time, date, dateTime (A.3.8), and `time-in-range` (2.0).
 */
export function comparisonFunctions(): FunctionSpec[] {
  const time = one(T.TIME);
  const num = (a: bigint | number, b: bigint | number): number | undefined => (a < b ? -1 : a > b ? 1 : a === b ? 0 : undefined);
  return [
    ...comparisons('integer', T.INTEGER, num),
    ...comparisons('double', T.DOUBLE, num),
    ...comparisons('string', T.STRING, compareCodePoints),
    ...comparisons('time', T.TIME, compareTemporal),
    ...comparisons('date', T.DATE, compareTemporal),
    ...comparisons('dateTime', T.DATE_TIME, compareTemporal),
    fixed(`${F2}time-in-range`, [time, time, time], BOOL, (a) => timeInRange(a[0] as XsDateTime, a[1] as XsDateTime, a[2] as XsDateTime)),
  ];
}
