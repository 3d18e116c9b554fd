/**
 * The contract of an XACML function implemented eagerly: every argument is evaluated first,
 * then {@link FunctionSpec.impl} runs. The evaluator handles the functions that are not eager
 * itself (the logical `and`/`or`/`n-of`/`not`, the higher-order bag functions, and the XPath
 * functions that need the request document) and uses this registry for everything else.
 *
 * @module
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- imported for the {@link}s below
import type { XacmlProcessingError } from '../errors.js';

/** The static type of an argument or result: a data type, single or bag. */
export interface ValueType {
  /** Data-type URI (canonical; aliases are resolved before lookup). */
  readonly dataType: string;
  /** Whether it is a bag of values. */
  readonly bag: boolean;
}

/** An eagerly evaluated XACML function. */
export interface FunctionSpec {
  /** Canonical function URI. */
  readonly id: string;
  /** Types of the fixed parameters, in order. */
  readonly params: readonly ValueType[];
  /**
   * Type of any further arguments (for `string-concatenate`, `*-bag`, `integer-add`,
   * `*-one-and-only`-less variadics). Absent when the function takes exactly `params`.
   */
  readonly variadic?: ValueType;
  /** The fewest arguments accepted (for variadic functions); `params.length` otherwise. */
  readonly minArgs: number;
  /** The result type. */
  readonly returns: ValueType;
  /**
   * The implementation. Each argument is a runtime value, or a `readonly unknown[]` for a bag
   * parameter. Throws {@link XacmlProcessingError} for a processing error.
   */
  readonly impl: (args: readonly unknown[]) => unknown;
  /**
   * Optional (additive): returns an implementation specialized for the arguments that are known
   * when the policy is compiled, for example a constant regular expression compiled once.
   * `constants[i]` is the runtime value of argument `i` when `known[i]` is true. The returned
   * function replaces {@link FunctionSpec.impl} at that call site and still receives every
   * argument. It never throws itself: an invalid constant yields an implementation that throws
   * the {@link XacmlProcessingError} when evaluated.
   */
  readonly specialize?: (known: readonly boolean[], constants: readonly unknown[]) => (args: readonly unknown[]) => unknown;
}
