/**
 * URIs of XACML 2.0 used by the evaluator.
 *
 * @module
 */

/** Namespace of XACML 2.0 policies. */
export const POLICY_NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';
/** Namespace of XACML 2.0 request/response contexts. */
export const CONTEXT_NS = 'urn:oasis:names:tc:xacml:2.0:context:schema:os';
/** Accepted policy namespaces (2.0, and 1.x whose elements 2.0 kept). */
export const POLICY_NAMESPACES: ReadonlySet<string> = new Set([POLICY_NS, 'urn:oasis:names:tc:xacml:1.0:policy']);
/** Accepted context namespaces. */
export const CONTEXT_NAMESPACES: ReadonlySet<string> = new Set([CONTEXT_NS, 'urn:oasis:names:tc:xacml:1.0:context']);

const STATUS = 'urn:oasis:names:tc:xacml:1.0:status:';
/** Status code `ok`. */
export const STATUS_OK = `${STATUS}ok`;
/** Status code `missing-attribute`. */
export const STATUS_MISSING_ATTRIBUTE = `${STATUS}missing-attribute`;
/** Status code `syntax-error`. */
export const STATUS_SYNTAX_ERROR = `${STATUS}syntax-error`;
/** Status code `processing-error`. */
export const STATUS_PROCESSING_ERROR = `${STATUS}processing-error`;

/** `resource-id`. */
export const RESOURCE_ID = 'urn:oasis:names:tc:xacml:1.0:resource:resource-id';
/** `scope` of the hierarchical / multiple resource profile. */
export const RESOURCE_SCOPE = 'urn:oasis:names:tc:xacml:1.0:resource:scope';

/** Environment attributes the PDP supplies when the request has none. */
export const CURRENT_TIME = 'urn:oasis:names:tc:xacml:1.0:environment:current-time';
/** See {@link CURRENT_TIME}. */
export const CURRENT_DATE = 'urn:oasis:names:tc:xacml:1.0:environment:current-date';
/** See {@link CURRENT_TIME}. */
export const CURRENT_DATETIME = 'urn:oasis:names:tc:xacml:1.0:environment:current-dateTime';

/** XML Schema data types the evaluator inspects itself (defined once, in datatypes/uris). */
export {
  STRING as XS_STRING,
  BOOLEAN as XS_BOOLEAN,
  INTEGER as XS_INTEGER,
  ANY_URI as XS_ANYURI,
  TIME as XS_TIME,
  DATE as XS_DATE,
  DATE_TIME as XS_DATETIME,
} from './datatypes/uris.js';

/** Prefix of the 1.0 function namespace. */
export const FN1 = 'urn:oasis:names:tc:xacml:1.0:function:';
