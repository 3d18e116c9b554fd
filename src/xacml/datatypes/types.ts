/**
 * The contract of an XACML data type: parse a lexical form once (at compile time for policy
 * values, on first use for request values), then compare parsed values cheaply.
 *
 * Runtime representations are fixed for the types the evaluator itself inspects:
 * `string` and `anyURI` → `string`, `boolean` → `boolean`, `integer` → `bigint`,
 * `double` → `number`. Every other type's value is opaque to the evaluator.
 *
 * @module
 */

/** Thrown by {@link DataType.parse} for a lexical form that is not valid for the type. */
export class DataTypeError extends Error {
  override readonly name = 'DataTypeError';
}

/** An XACML data type. `V` is its runtime value. */
export interface DataType<V = unknown> {
  /** The canonical data-type URI. */
  readonly id: string;
  /** Parses a lexical form (whitespace handling as XML Schema says); throws {@link DataTypeError}. */
  parse(lexical: string): V;
  /** Equality as the type's `-equal` function defines it. */
  equal(a: V, b: V): boolean;
  /**
   * Order, for the types that have `-greater-than` and friends: negative, zero, positive, or
   * `undefined` when the two values are not comparable (for example a time with a timezone and
   * one without, where XML Schema says the order is indeterminate).
   */
  compare?(a: V, b: V): number | undefined;
  /** A canonical lexical form (for responses, `string-concatenate` of URIs, XPath). */
  format(value: V): string;
}

/** A time/date/dateTime type that can be built from a clock reading (environment attributes). */
export interface TemporalDataType<V = unknown> extends DataType<V> {
  /** The value of this type at the given instant, in the local timezone of the process. */
  fromDate(date: Date): V;
}
