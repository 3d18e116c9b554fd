/**
 * The XML Schema primitive types of XACML: string, boolean, integer, double, anyURI, hexBinary,
 * base64Binary. Lexical forms are parsed as XML Schema 1.0 says, not as JavaScript would.
 *
 * @module
 */
import { DataTypeError, type DataType } from './types.js';
import { ANY_URI, BASE64_BINARY, BOOLEAN, DOUBLE, HEX_BINARY, INTEGER, STRING } from './uris.js';
import { collapse, compareCodePoints } from './lexical.js';

/** `xs:string`: white space preserved; ordered by code point. Runtime value: `string`. */
export const stringType: DataType<string> = {
  id: STRING,
  parse: (lexical) => lexical,
  equal: (a, b) => a === b,
  compare: compareCodePoints,
  format: (v) => v,
};

/** `xs:boolean`: `true`, `false`, `1`, `0`. Runtime value: `boolean`. */
export const booleanType: DataType<boolean> = {
  id: BOOLEAN,
  parse(lexical) {
    switch (collapse(lexical)) {
      case 'true':
      case '1':
        return true;
      case 'false':
      case '0':
        return false;
      default:
        throw new DataTypeError(`invalid boolean: ${JSON.stringify(lexical)}`);
    }
  },
  equal: (a, b) => a === b,
  format: (v) => (v ? 'true' : 'false'),
};

const INTEGER_RE = /^[+-]?[0-9]+$/;

/** `xs:integer`: arbitrary precision, optional sign and leading zeros. Runtime value: `bigint`. */
export const integerType: DataType<bigint> = {
  id: INTEGER,
  parse(lexical) {
    const s = collapse(lexical);
    if (!INTEGER_RE.test(s)) throw new DataTypeError(`invalid integer: ${JSON.stringify(lexical)}`);
    return BigInt(s);
  },
  equal: (a, b) => a === b,
  compare: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
  format: (v) => v.toString(),
};

const DOUBLE_RE = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/**
 * `xs:double`: IEEE 754 binary64 with the lexical forms `INF`, `-INF` (and `+INF`, as XML
 * Schema 1.1 allows), `NaN`, exponents. Equality and order are IEEE's: `NaN` equals nothing and
 * is not ordered, `-0` equals `0`. Runtime value: `number`.
 */
export const doubleType: DataType<number> = {
  id: DOUBLE,
  parse(lexical) {
    const s = collapse(lexical);
    if (DOUBLE_RE.test(s)) return Number(s);
    switch (s) {
      case 'INF':
      case '+INF':
        return Infinity;
      case '-INF':
        return -Infinity;
      case 'NaN':
        return NaN;
      default:
        throw new DataTypeError(`invalid double: ${JSON.stringify(lexical)}`);
    }
  },
  equal: (a, b) => a === b,
  compare: (a, b) => (a < b ? -1 : a > b ? 1 : a === b ? 0 : undefined),
  format: formatDouble,
};

/** The XML Schema lexical form of a double (`INF`, `-INF`, `NaN`, `1.5E-7`). */
export function formatDouble(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'INF';
  if (v === -Infinity) return '-INF';
  return String(v).replace('e+', 'E').replace('e', 'E');
}

/** `xs:anyURI`: compared as the collapsed string. Runtime value: `string`. */
export const anyURIType: DataType<string> = {
  id: ANY_URI,
  parse: (lexical) => collapse(lexical),
  equal: (a, b) => a === b,
  format: (v) => v,
};

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * `xs:hexBinary`: runtime value is the canonical (upper-case) hex string, so equal octet
 * sequences are equal strings.
 */
export const hexBinaryType: DataType<string> = {
  id: HEX_BINARY,
  parse(lexical) {
    const s = collapse(lexical);
    if (!HEX_RE.test(s)) throw new DataTypeError(`invalid hexBinary: ${JSON.stringify(lexical)}`);
    return s.toUpperCase();
  },
  equal: (a, b) => a === b,
  format: (v) => v,
};

const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const B64_SPACE = /[\t\n\r ]/g;

/**
 * `xs:base64Binary`: white space between characters is ignored; runtime value is the canonical
 * base64 of the octets, so equal octet sequences are equal strings.
 */
export const base64BinaryType: DataType<string> = {
  id: BASE64_BINARY,
  parse(lexical) {
    const s = lexical.replace(B64_SPACE, '');
    if (!B64_RE.test(s)) throw new DataTypeError(`invalid base64Binary: ${JSON.stringify(lexical)}`);
    return Buffer.from(s, 'base64').toString('base64');
  },
  equal: (a, b) => a === b,
  format: (v) => v,
};
