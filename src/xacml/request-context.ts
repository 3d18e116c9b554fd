/**
 * The XACML 2.0 request context as plain data: what {@link parseRequest} returns and what the
 * gateway builds from an invocation. Values stay in their lexical (string) form; the evaluator
 * parses them by data type.
 *
 * @module
 */

/** `http://www.w3.org/2001/XMLSchema#string`. */
export const XS_STRING = 'http://www.w3.org/2001/XMLSchema#string';

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
  attributes: RequestAttribute[];
}

/** One `<Resource>` of the request. */
export interface RequestResource {
  attributes: RequestAttribute[];
  /** The `<ResourceContent>` element's XML, for AttributeSelectors, when present. */
  resourceContent?: string;
}

/** The XACML 2.0 `<Request>` as data. */
export interface RequestContext {
  subjects: RequestSubject[];
  resources: RequestResource[];
  action: { attributes: RequestAttribute[] };
  environment: { attributes: RequestAttribute[] };
}
