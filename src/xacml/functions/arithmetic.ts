/**
 * Arithmetic (XACML 2.0 A.3.2), string normalization (A.3.3) and numeric conversion (A.3.4).
 *
 * @module
 */
import { XacmlProcessingError } from '../errors.js';
import type { FunctionSpec } from './types.js';
import { F1, fixed, one, variadic } from './define.js';
import * as T from '../datatypes/uris.js';

const INT = one(T.INTEGER);
const DBL = one(T.DOUBLE);
const STR = one(T.STRING);

function addInts(a: readonly unknown[]): bigint {
  let s = 0n;
  for (let i = 0; i < a.length; i++) s += a[i] as bigint;
  return s;
}
function mulInts(a: readonly unknown[]): bigint {
  let s = 1n;
  for (let i = 0; i < a.length; i++) s *= a[i] as bigint;
  return s;
}
function addDoubles(a: readonly unknown[]): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] as number;
  return s;
}
function mulDoubles(a: readonly unknown[]): number {
  let s = 1;
  for (let i = 0; i < a.length; i++) s *= a[i] as number;
  return s;
}

const XML_SPACE_EDGES = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * `integer-`/`double-` `add` and `multiply` (two or more arguments), `subtract`, `divide`
 * (a zero divisor is a processing error; integer division truncates toward zero as
 * `op:numeric-integer-divide`), `integer-mod` (sign of the dividend, zero divisor is an error),
 * `abs`, `round` (`fn:round`: half toward positive infinity), `floor`, `string-normalize-space`
 * (strips leading and trailing white space only), `string-normalize-to-lower-case`,
 * `double-to-integer` (truncation; NaN and infinities are processing errors), `integer-to-double`.
 */
export function arithmeticFunctions(): FunctionSpec[] {
  return [
    variadic(`${F1}integer-add`, [INT, INT], INT, 2, INT, addInts),
    variadic(`${F1}double-add`, [DBL, DBL], DBL, 2, DBL, addDoubles),
    variadic(`${F1}integer-multiply`, [INT, INT], INT, 2, INT, mulInts),
    variadic(`${F1}double-multiply`, [DBL, DBL], DBL, 2, DBL, mulDoubles),
    fixed(`${F1}integer-subtract`, [INT, INT], INT, (a) => (a[0] as bigint) - (a[1] as bigint)),
    fixed(`${F1}double-subtract`, [DBL, DBL], DBL, (a) => (a[0] as number) - (a[1] as number)),
    fixed(`${F1}integer-divide`, [INT, INT], INT, (a) => {
      if (a[1] === 0n) throw new XacmlProcessingError('integer-divide: division by zero');
      return (a[0] as bigint) / (a[1] as bigint);
    }),
    fixed(`${F1}double-divide`, [DBL, DBL], DBL, (a) => {
      if (a[1] === 0) throw new XacmlProcessingError('double-divide: division by zero');
      return (a[0] as number) / (a[1] as number);
    }),
    fixed(`${F1}integer-mod`, [INT, INT], INT, (a) => {
      if (a[1] === 0n) throw new XacmlProcessingError('integer-mod: division by zero');
      return (a[0] as bigint) % (a[1] as bigint);
    }),
    fixed(`${F1}integer-abs`, [INT], INT, (a) => {
      const v = a[0] as bigint;
      return v < 0n ? -v : v;
    }),
    fixed(`${F1}double-abs`, [DBL], DBL, (a) => Math.abs(a[0] as number)),
    // Math.round is fn:round: nearest, ties toward positive infinity; NaN and ±INF unchanged.
    fixed(`${F1}round`, [DBL], DBL, (a) => Math.round(a[0] as number)),
    fixed(`${F1}floor`, [DBL], DBL, (a) => Math.floor(a[0] as number)),
    fixed(`${F1}string-normalize-space`, [STR], STR, (a) => (a[0] as string).replace(XML_SPACE_EDGES, '')),
    fixed(`${F1}string-normalize-to-lower-case`, [STR], STR, (a) => (a[0] as string).toLowerCase()),
    fixed(`${F1}double-to-integer`, [DBL], INT, (a) => {
      const v = a[0] as number;
      if (!Number.isFinite(v)) throw new XacmlProcessingError(`double-to-integer: ${v} has no integer value`);
      return BigInt(Math.trunc(v));
    }),
    fixed(`${F1}integer-to-double`, [INT], DBL, (a) => Number(a[0] as bigint)),
  ];
}
