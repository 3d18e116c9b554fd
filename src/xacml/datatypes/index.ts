/**
 * The registry of XACML 2.0 data types, keyed by every accepted URI.
 *
 * @module
 */
import type { DataType } from './types.js';
import { DATA_TYPE_ALIASES } from './uris.js';
import { anyURIType, base64BinaryType, booleanType, doubleType, hexBinaryType, integerType, stringType } from './primitive.js';
import { dateTimeType, dateType, dayTimeDurationType, timeType, yearMonthDurationType } from './temporal.js';
import { rfc822NameType, x500NameType } from './names.js';
import { dnsNameType, ipAddressType } from './network.js';

export * from './uris.js';
export { DataTypeError } from './types.js';
export type { DataType, TemporalDataType } from './types.js';
export {
  anyURIType,
  base64BinaryType,
  booleanType,
  doubleType,
  formatDouble,
  hexBinaryType,
  integerType,
  stringType,
} from './primitive.js';
export {
  addDayTimeDuration,
  addYearMonthDuration,
  compareTemporal,
  dateTimeType,
  dateType,
  DayTimeDuration,
  dayTimeDurationType,
  timeInRange,
  timeType,
  XsDateTime,
  YearMonthDuration,
  yearMonthDurationType,
} from './temporal.js';
export type { TemporalKind } from './temporal.js';
export { Rfc822Name, rfc822NameMatch, rfc822NamePattern, rfc822NameType, X500Name, x500NameMatch, x500NameType } from './names.js';
export { DnsName, dnsNameType, IpAddress, ipAddressType } from './network.js';
export type { PortRange } from './network.js';
export { collapse, compareCodePoints } from './lexical.js';

const ALL: readonly DataType<never>[] = [
  stringType,
  booleanType,
  integerType,
  doubleType,
  timeType,
  dateType,
  dateTimeType,
  dayTimeDurationType,
  yearMonthDurationType,
  anyURIType,
  hexBinaryType,
  base64BinaryType,
  rfc822NameType,
  x500NameType,
  ipAddressType,
  dnsNameType,
] as DataType<never>[];

/**
 * Every XACML 2.0 data type, keyed by its canonical URI and by each accepted alias
 * (`http://www.w3.org/2001/XMLSchema#dayTimeDuration` / `#yearMonthDuration` for the XQuery
 * working-draft duration URIs). A type found under an alias has the canonical `id`.
 *
 * @example
 * ```ts
 * const int = dataTypes.get('http://www.w3.org/2001/XMLSchema#integer')!;
 * int.parse('+007'); // 7n
 * ```
 */
export const dataTypes: ReadonlyMap<string, DataType> = (() => {
  const m = new Map<string, DataType>();
  for (const t of ALL) m.set(t.id, t as DataType);
  for (const [alias, canonical] of DATA_TYPE_ALIASES) m.set(alias, m.get(canonical)!);
  return m;
})();

/**
 * The canonical spelling of a data-type URI: aliases map to the URI XACML 2.0 uses; any other
 * string (known or not) is returned unchanged.
 */
export function canonicalDataType(uri: string): string {
  return DATA_TYPE_ALIASES.get(uri) ?? uri;
}
