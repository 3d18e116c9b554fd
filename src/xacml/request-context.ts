/**
 * The XACML 2.0 request context as plain data: what {@link parseRequest} returns and what the
 * gateway builds from an invocation. Values stay in their lexical (string) form; the evaluator
 * parses them by data type.
 *
 * @module
 */

/** `http://www.w3.org/2001/XMLSchema#string`. */
export { STRING as XS_STRING } from './datatypes/uris.js';

/** The default subject category, `access-subject`. */
export const ACCESS_SUBJECT = 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject';

/** One `<Attribute>` of the request: several values make a bag. */
export interface RequestAttribute {
  /** `AttributeId`. */
  attributeId: string;
  /** `DataType` URI. */
  dataType: string;
  /** `Issuer`, when given. */
  issuer?: string;
  /** The `<AttributeValue>` contents in lexical form. */
  values: string[];
}

/** One `<Subject>` of the request. */
export interface RequestSubject {
  /** `SubjectCategory`, {@link ACCESS_SUBJECT} by default. */
  subjectCategory: string;
  /** The subject's attributes. */
  attributes: RequestAttribute[];
}

/** One `<Resource>` of the request. */
export interface RequestResource {
  /** The resource's attributes (`resource-id`, and `scope` in a hierarchical request). */
  attributes: RequestAttribute[];
  /** The `<ResourceContent>` element's XML, for AttributeSelectors, when present. */
  resourceContent?: string;
}

/** The XACML 2.0 `<Request>` as data. */
export interface RequestContext {
  /** The `<Subject>`s, in document order (usually one, of category `access-subject`). */
  subjects: RequestSubject[];
  /** The `<Resource>`s, in document order. */
  resources: RequestResource[];
  /** The single `<Action>`. */
  action: {
    /** The action's attributes. */
    attributes: RequestAttribute[];
  };
  /** The single `<Environment>` (empty when the request has none; the PDP supplies current time/date). */
  environment: {
    /** The environment's attributes. */
    attributes: RequestAttribute[];
  };
}
