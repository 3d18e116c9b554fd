/**
 * The header fields that carry credentials: one list for the records, which redact them by default
 * (`src/record/redact.ts` gives it as `DEFAULT_REDACTED_HEADERS`), and for traffic control, which
 * shows a group formed from one by a keyed hash of its value, never the value
 * (`src/traffic/group-key.ts`). It lives here, below both: the records sit above traffic control.
 *
 * @module
 */

/**
 * Headers redacted by default in recorded contents, in lower case: they carry credentials of the
 * client or of the gateway (`Gateway-JWT` is a signed assertion the backend trusts; `DPoP` a proof
 * of possession, usable until its `jti` is used; `X-Api-Key` a client's key).
 */
export const DEFAULT_REDACTED_HEADERS: readonly string[] = [
  'authorization',
  'dpop',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'gateway-jwt',
];
