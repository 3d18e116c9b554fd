/**
 * Helpers to declare {@link FunctionSpec}s tersely and the URI prefixes of XACML functions.
 *
 * @module
 */
import type { FunctionSpec, ValueType } from './types.js';
import * as T from '../datatypes/uris.js';

/** `urn:oasis:names:tc:xacml:1.0:function:`. */
export const F1 = 'urn:oasis:names:tc:xacml:1.0:function:';
/** `urn:oasis:names:tc:xacml:2.0:function:`. */
export const F2 = 'urn:oasis:names:tc:xacml:2.0:function:';

/** A single value of a data type. */
export function one(dataType: string): ValueType {
  return { dataType, bag: false };
}

/** A bag of a data type. */
export function bag(dataType: string): ValueType {
  return { dataType, bag: true };
}

/** A boolean result. */
export const BOOL = one(T.BOOLEAN);
/** An integer result. */
export const INT = one(T.INTEGER);

/** A function of exactly `params`. */
export function fixed(
  id: string,
  params: readonly ValueType[],
  returns: ValueType,
  impl: (args: readonly unknown[]) => unknown,
  specialize?: FunctionSpec['specialize'],
): FunctionSpec {
  return specialize
    ? { id, params, minArgs: params.length, returns, impl, specialize }
    : { id, params, minArgs: params.length, returns, impl };
}

/** A function of `params` then any number of `variadic` arguments, `minArgs` in all at least. */
export function variadic(
  id: string,
  params: readonly ValueType[],
  rest: ValueType,
  minArgs: number,
  returns: ValueType,
  impl: (args: readonly unknown[]) => unknown,
): FunctionSpec {
  return { id, params, variadic: rest, minArgs, returns, impl };
}

/**
 * The data types that XACML 2.0 gives equality, bag and set functions in the 1.0 namespace,
 * with the short name used in function URIs.
 */
export const CORE_TYPES: readonly (readonly [name: string, uri: string])[] = [
  ['string', T.STRING],
  ['boolean', T.BOOLEAN],
  ['integer', T.INTEGER],
  ['double', T.DOUBLE],
  ['time', T.TIME],
  ['date', T.DATE],
  ['dateTime', T.DATE_TIME],
  ['dayTimeDuration', T.DAY_TIME_DURATION],
  ['yearMonthDuration', T.YEAR_MONTH_DURATION],
  ['anyURI', T.ANY_URI],
  ['x500Name', T.X500_NAME],
  ['rfc822Name', T.RFC822_NAME],
  ['hexBinary', T.HEX_BINARY],
  ['base64Binary', T.BASE64_BINARY],
];

/** The data types added by XACML 2.0, whose bag functions are in the 2.0 namespace. */
export const V2_TYPES: readonly (readonly [name: string, uri: string])[] = [
  ['ipAddress', T.IP_ADDRESS],
  ['dnsName', T.DNS_NAME],
];
