/**
 * The data-type URIs of XACML 2.0 (section 10.2.7 and Appendix A.2), canonical spellings.
 *
 * @module
 */

const XS = 'http://www.w3.org/2001/XMLSchema#';

/** `http://www.w3.org/2001/XMLSchema#string`. */
export const STRING = `${XS}string`;
/** `http://www.w3.org/2001/XMLSchema#boolean`. */
export const BOOLEAN = `${XS}boolean`;
/** `http://www.w3.org/2001/XMLSchema#integer`. */
export const INTEGER = `${XS}integer`;
/** `http://www.w3.org/2001/XMLSchema#double`. */
export const DOUBLE = `${XS}double`;
/** `http://www.w3.org/2001/XMLSchema#time`. */
export const TIME = `${XS}time`;
/** `http://www.w3.org/2001/XMLSchema#date`. */
export const DATE = `${XS}date`;
/** `http://www.w3.org/2001/XMLSchema#dateTime`. */
export const DATE_TIME = `${XS}dateTime`;
/** `http://www.w3.org/2001/XMLSchema#anyURI`. */
export const ANY_URI = `${XS}anyURI`;
/** `http://www.w3.org/2001/XMLSchema#hexBinary`. */
export const HEX_BINARY = `${XS}hexBinary`;
/** `http://www.w3.org/2001/XMLSchema#base64Binary`. */
export const BASE64_BINARY = `${XS}base64Binary`;
/**
 * `dayTimeDuration` as XACML 2.0 names it (the XQuery operators working draft of 2002-08-16);
 * `http://www.w3.org/2001/XMLSchema#dayTimeDuration` is accepted as an alias.
 */
export const DAY_TIME_DURATION = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration';
/**
 * `yearMonthDuration` as XACML 2.0 names it (the XQuery operators working draft of 2002-08-16);
 * `http://www.w3.org/2001/XMLSchema#yearMonthDuration` is accepted as an alias.
 */
export const YEAR_MONTH_DURATION = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#yearMonthDuration';
/** `urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name`. */
export const RFC822_NAME = 'urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name';
/** `urn:oasis:names:tc:xacml:1.0:data-type:x500Name`. */
export const X500_NAME = 'urn:oasis:names:tc:xacml:1.0:data-type:x500Name';
/** `urn:oasis:names:tc:xacml:2.0:data-type:ipAddress`. */
export const IP_ADDRESS = 'urn:oasis:names:tc:xacml:2.0:data-type:ipAddress';
/** `urn:oasis:names:tc:xacml:2.0:data-type:dnsName`. */
export const DNS_NAME = 'urn:oasis:names:tc:xacml:2.0:data-type:dnsName';

/** Accepted alternative spellings → canonical URI. */
export const DATA_TYPE_ALIASES: ReadonlyMap<string, string> = new Map([
  [`${XS}dayTimeDuration`, DAY_TIME_DURATION],
  [`${XS}yearMonthDuration`, YEAR_MONTH_DURATION],
]);
