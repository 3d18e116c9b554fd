/**
 * Keeping credentials out of records: URL `access_token` parameters, credential-bearing headers,
 * and any string that would contain the token itself.
 *
 * @module
 */

import { removeQueryParameter } from '../url/parameters.js';
import { REDACTED } from '../token/validated-data.js';
import { detach } from './detach.js';

/** Replacement of a removed secret: the one the forwarder also records for a token value. */
export { REDACTED };

/**
 * Headers redacted by default in recorded outgoing contents: they carry credentials of the client
 * or of the gateway. The list is traffic control's too (a group of one of them is labelled by a
 * keyed hash), so it is defined once, below both, in `src/traffic/credential-headers.ts`.
 */
export { DEFAULT_REDACTED_HEADERS } from '../traffic/credential-headers.js';

/**
 * The URL (path and query) without any `access_token` query parameter (RFC 6750 section 2.3), in
 * any shape a server could read as one (see `removeQueryParameter`), and without a fragment.
 * When something was removed, a flat copy: records keep it, and a slice would pin the original.
 */
export function stripAccessToken(url: string): string {
  const hash = url.indexOf('#');
  const withoutFragment = hash === -1 ? url : url.slice(0, hash);
  const stripped = removeQueryParameter(withoutFragment, 'access_token');
  return stripped === url ? url : detach(stripped);
}

/**
 * A copy of `headers` with credential-bearing ones (by name, or containing `secret`) redacted,
 * and without any header whose name contains `secret` (as {@link scrubSecret} would remove it).
 */
export function redactHeaders(
  headers: Record<string, string>,
  redacted: ReadonlySet<string>,
  secret: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  const checked = secret !== undefined && secret !== '' ? secret : undefined;
  for (const name of Object.keys(headers)) {
    if (checked !== undefined && name.includes(checked)) continue;
    const value = String(headers[name]);
    out[name] = redacted.has(name.toLowerCase()) || (checked !== undefined && value.includes(checked)) ? REDACTED : value;
  }
  return out;
}

/**
 * Replaces, in place, every string of a JSON-like value that contains `secret` by {@link REDACTED}
 * (and removes object keys that contain it). The last line of defence: whatever a middleware put
 * in diagnostics or claims, the token does not reach the store.
 */
export function scrubSecret<T>(value: T, secret: string, skip?: readonly object[]): T {
  if (secret === '') return value;
  return scrub(value, secret, 0, skip) as T;
}

function scrub(value: unknown, secret: string, depth: number, skip: readonly object[] | undefined): unknown {
  if (typeof value === 'string') return value.includes(secret) ? REDACTED : value;
  if (value === null || typeof value !== 'object' || depth > 32 || skip?.includes(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const scrubbed = scrub(item, secret, depth + 1, skip);
      if (scrubbed !== item) value[i] = scrubbed;
    }
    return value;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (key.includes(secret)) {
      delete object[key];
      continue;
    }
    const member = object[key];
    const scrubbed = scrub(member, secret, depth + 1, skip);
    if (scrubbed !== member) object[key] = scrubbed;
  }
  return value;
}
