/**
 * Bag functions (XACML 2.0 A.3.10) and set functions (A.3.11), for every data type.
 *
 * @module
 */
import { XacmlProcessingError } from '../errors.js';
import type { FunctionSpec } from './types.js';
import { BOOL, CORE_TYPES, F1, F2, INT, V2_TYPES, bag, fixed, one, variadic } from './define.js';
import { equalityOf } from './equality.js';

type Eq = (a: unknown, b: unknown) => boolean;
type Bag = readonly unknown[];

function contains(b: Bag, v: unknown, eq: Eq): boolean {
  for (let i = 0; i < b.length; i++) if (eq(v, b[i])) return true;
  return false;
}

/** The distinct values of `b` (first occurrence kept), appended to `out`. */
function addDistinct(out: unknown[], b: Bag, eq: Eq): void {
  for (let i = 0; i < b.length; i++) if (!contains(out, b[i], eq)) out.push(b[i]);
}

function subset(a: Bag, b: Bag, eq: Eq): boolean {
  for (let i = 0; i < a.length; i++) if (!contains(b, a[i], eq)) return false;
  return true;
}

/** `T-one-and-only`, `T-bag-size`, `T-is-in`, `T-bag` for one type. */
function bagFunctions(prefix: string, name: string, uri: string): FunctionSpec[] {
  const eq = equalityOf(uri);
  const v = one(uri);
  const b = bag(uri);
  return [
    fixed(`${prefix}${name}-one-and-only`, [b], v, (a) => {
      const x = a[0] as Bag;
      if (x.length !== 1) {
        throw new XacmlProcessingError(`${name}-one-and-only: expected a bag of one value, got ${x.length}`);
      }
      return x[0];
    }),
    fixed(`${prefix}${name}-bag-size`, [b], INT, (a) => BigInt((a[0] as Bag).length)),
    fixed(`${prefix}${name}-is-in`, [v, b], BOOL, (a) => contains(a[1] as Bag, a[0], eq)),
    variadic(`${prefix}${name}-bag`, [], v, 0, b, (a) => a.slice()),
  ];
}

/** `T-intersection`, `T-at-least-one-member-of`, `T-union`, `T-subset`, `T-set-equals`. */
function setFunctions(name: string, uri: string): FunctionSpec[] {
  const eq = equalityOf(uri);
  const b = bag(uri);
  return [
    fixed(`${F1}${name}-intersection`, [b, b], b, (a) => {
      const x = a[0] as Bag;
      const y = a[1] as Bag;
      const out: unknown[] = [];
      for (let i = 0; i < x.length; i++) if (contains(y, x[i], eq) && !contains(out, x[i], eq)) out.push(x[i]);
      return out;
    }),
    fixed(`${F1}${name}-at-least-one-member-of`, [b, b], BOOL, (a) => {
      const x = a[0] as Bag;
      const y = a[1] as Bag;
      for (let i = 0; i < x.length; i++) if (contains(y, x[i], eq)) return true;
      return false;
    }),
    fixed(`${F1}${name}-union`, [b, b], b, (a) => {
      const out: unknown[] = [];
      addDistinct(out, a[0] as Bag, eq);
      addDistinct(out, a[1] as Bag, eq);
      return out;
    }),
    fixed(`${F1}${name}-subset`, [b, b], BOOL, (a) => subset(a[0] as Bag, a[1] as Bag, eq)),
    fixed(`${F1}${name}-set-equals`, [b, b], BOOL, (a) => subset(a[0] as Bag, a[1] as Bag, eq) && subset(a[1] as Bag, a[0] as Bag, eq)),
  ];
}

/**
 * Bag functions for the 14 types of XACML 1.0 (1.0 namespace) and for `ipAddress`/`dnsName`
 * (2.0 namespace); set functions for the 14 types (XACML 2.0 defines no equality, hence no set
 * functions, for `ipAddress` and `dnsName`). `one-and-only` of a bag that does not hold exactly
 * one value is a processing error. Results of `intersection`/`union` hold no duplicates.
 */
export function bagAndSetFunctions(): FunctionSpec[] {
  const out: FunctionSpec[] = [];
  for (const [name, uri] of CORE_TYPES) out.push(...bagFunctions(F1, name, uri), ...setFunctions(name, uri));
  for (const [name, uri] of V2_TYPES) out.push(...bagFunctions(F2, name, uri));
  return out;
}
