/**
 * Errors of the XACML evaluator.
 *
 * @module
 */
export { XacmlProcessingError } from './functions/types.js';

/**
 * Thrown for a document that is not a valid XACML policy or request: malformed or hostile XML
 * (DOCTYPE, entities, too large, too deep), a missing required attribute, an unknown function,
 * data type or combining algorithm, a static type error.
 *
 * `path` locates the offending element, for example
 * `/PolicySet[@PolicySetId="x"]/Policy[2]/Rule[@RuleId="r"]/Condition/Apply[1]`
 * (empty when the document could not be parsed at all).
 */
export class XacmlSyntaxError extends Error {
  /** Always `'XacmlSyntaxError'`. */
  override readonly name = 'XacmlSyntaxError';
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
