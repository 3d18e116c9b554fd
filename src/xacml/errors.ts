/**
 * Errors of the XACML evaluator, each with a stable `code` to test against instead of its
 * message.
 *
 * @module
 */

/** The stable codes of the evaluator's errors. */
export type XacmlErrorCode = 'ERR_XACML_SYNTAX' | 'ERR_XACML_PROCESSING';

/**
 * Thrown for a document that is not a valid XACML policy or request: malformed or hostile XML
 * (DOCTYPE, entities, too large, too deep), a missing required attribute, an unknown function,
 * data type or combining algorithm, a static type error.
 *
 * `path` locates the offending element, for example
 * `/PolicySet[@PolicySetId="x"]/Policy[2]/Rule[@RuleId="r"]/Condition/Apply[1]`
 * (empty when the document could not be parsed at all).
 *
 * @example
 * ```ts
 * try {
 *   createPdp({ policies: [xml] });
 * } catch (err) {
 *   if (err instanceof XacmlSyntaxError) console.error(err.code, err.path, err.message);
 * }
 * ```
 */
export class XacmlSyntaxError extends Error {
  /** Always `'XacmlSyntaxError'`. */
  override readonly name = 'XacmlSyntaxError';
  /** Always `ERR_XACML_SYNTAX`. */
  readonly code = 'ERR_XACML_SYNTAX' as const satisfies XacmlErrorCode;
  /** Where the problem is, as an XPath-like path of the element. */
  readonly path: string;

  /**
   * @param message - what is wrong.
   * @param path - the element's path; appended to the message when not empty.
   */
  constructor(message: string, path = '') {
    super(path ? `${message} (at ${path})` : message);
    this.path = path;
  }
}

/**
 * Thrown by a function implementation (or the XPath layer) when the result is a processing error
 * (division by zero, `one-and-only` of a bag that does not hold exactly one value, an invalid
 * lexical form in a `*-from-string` conversion, an XPath expression that cannot be evaluated …).
 * The evaluator turns it into Indeterminate with status `processing-error` and this message; it
 * never escapes `Pdp.evaluate`.
 */
export class XacmlProcessingError extends Error {
  /** Always `'XacmlProcessingError'`. */
  override readonly name = 'XacmlProcessingError';
  /** Always `ERR_XACML_PROCESSING`. */
  readonly code = 'ERR_XACML_PROCESSING' as const satisfies XacmlErrorCode;
}
