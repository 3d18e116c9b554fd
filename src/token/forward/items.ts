/**
 * The token information items forwarded to the backend, and how each is named and formatted.
 *
 * @module
 */
import type { TokenContext } from '../../context.js';
import { tokenFacts } from '../facts.js';

/** The items of token information the gateway can forward. */
export type ForwardedItem =
  | 'subject'
  | 'issuer'
  | 'clientId'
  | 'username'
  | 'audience'
  | 'scopes'
  | 'roles'
  | 'expire'
  | 'issuedAt'
  | 'notToBeUsedBefore'
  | 'jti'
  | 'fullName'
  | 'firstName'
  | 'middleName'
  | 'familyName'
  | 'eMail'
  | 'binding'
  | 'processTime';

/** Default header of each item in `headers` mode. */
export const defaultForwardedHeaderNames: Readonly<Record<ForwardedItem, string>> = {
  subject: 'Gateway-Token-Subject',
  issuer: 'Gateway-Token-Issuer',
  clientId: 'Gateway-Token-ClientId',
  username: 'Gateway-Token-Username',
  audience: 'Gateway-Token-Audience',
  scopes: 'Gateway-Token-Scopes',
  roles: 'Gateway-Token-Roles',
  expire: 'Gateway-Token-Expire',
  issuedAt: 'Gateway-Token-IssuedAt',
  notToBeUsedBefore: 'Gateway-Token-NotToBeUsedBefore',
  jti: 'Gateway-Token-Jti',
  fullName: 'Gateway-Token-FullName',
  firstName: 'Gateway-Token-FirstName',
  middleName: 'Gateway-Token-MiddleName',
  familyName: 'Gateway-Token-FamilyName',
  eMail: 'Gateway-Token-EMail',
  binding: 'Gateway-Token-Binding',
  processTime: 'Gateway-Token-ProcessTime',
};

/**
 * How dates (`expire`, `issuedAt`, `notToBeUsedBefore`) are written:
 * - `iso` (default): ISO 8601 in UTC, `2026-11-21T15:04:05.000Z`;
 * - `epoch`: seconds since the epoch, `1795273445` (a number in JSON);
 * - `epochMillis`: milliseconds since the epoch (a number in JSON);
 * - `http`: the HTTP date format (RFC 9110), `Sat, 21 Nov 2026 15:04:05 GMT`;
 * - a function of the `Date`.
 */
export type ForwardDateFormat = 'iso' | 'epoch' | 'epochMillis' | 'http' | ((date: Date) => string);

/** A forwarded value: text, a list (comma-joined in headers), or a number. */
export type ForwardedValue = string | number | readonly string[];

/** Formats an epoch-seconds time with `format`. */
export function formatDate(seconds: number, format: ForwardDateFormat): string | number {
  switch (format) {
    case 'epoch':
      return seconds;
    case 'epochMillis':
      return seconds * 1000;
    case 'iso':
      return new Date(seconds * 1000).toISOString();
    case 'http':
      return new Date(seconds * 1000).toUTCString();
    default:
      return format(new Date(seconds * 1000));
  }
}

/** The items the token supplies, in the order of {@link defaultForwardedHeaderNames}. Empty ones are left out. */
export function collectItems(token: TokenContext | undefined, dateFormat: ForwardDateFormat): Map<ForwardedItem, ForwardedValue> {
  const items = new Map<ForwardedItem, ForwardedValue>();
  if (token === undefined) return items;
  const facts = tokenFacts(token);
  const put = (item: ForwardedItem, value: ForwardedValue | undefined): void => {
    if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) return;
    items.set(item, value);
  };
  put('subject', facts.subject);
  put('issuer', facts.issuer);
  put('clientId', facts.clientId);
  put('username', facts.username);
  put('audience', facts.audience);
  put('scopes', facts.scopes);
  put('roles', facts.roles);
  put('expire', facts.expiresAt === undefined ? undefined : formatDate(facts.expiresAt, dateFormat));
  put('issuedAt', facts.issuedAt === undefined ? undefined : formatDate(facts.issuedAt, dateFormat));
  put('notToBeUsedBefore', facts.notBefore === undefined ? undefined : formatDate(facts.notBefore, dateFormat));
  put('jti', facts.jti);
  put('fullName', facts.userInfo.fullName);
  put('firstName', facts.userInfo.firstName);
  put('middleName', facts.userInfo.middleName);
  put('familyName', facts.userInfo.familyName);
  put('eMail', facts.userInfo.eMail);
  // What the token is bound to (`dpop`), checked against the request: absent for an unbound token.
  put('binding', token.binding?.kind);
  put('processTime', token.processTimeMs);
  return items;
}

/**
 * A value as an HTTP header value: lists comma-joined; text made only of visible ASCII and spaces
 * is sent as is, anything else (non-ASCII names, control characters) percent-encoded as UTF-8
 * (`encodeURIComponent`), so that no value can break the header or be refused by Node.
 */
export function headerValue(value: ForwardedValue): string {
  // A number's text is plain ASCII: no check (processTime is formatted on every request).
  if (typeof value === 'number') return String(value);
  const text = typeof value === 'string' ? value : value.join(',');
  return /^[\x20-\x7e]*$/.test(text) ? text : encodeURIComponent(text);
}

/** The JSON document of `json` and `jws` modes: `id` (the transaction id) and every item present. */
export function itemsDocument(transactionId: string, items: ReadonlyMap<ForwardedItem, ForwardedValue>): Record<string, unknown> {
  const document: Record<string, unknown> = { id: transactionId };
  for (const [item, value] of items) document[item] = value;
  return document;
}
