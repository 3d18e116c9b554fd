/**
 * Keeping credentials out of records: URL `access_token` parameters, credential-bearing headers,
 * and any string that would contain the token itself.
 *
 * @module
 */

/** Replacement of a removed secret. */
export const REDACTED = '[redacted]';

/**
 * Headers redacted by default in recorded outgoing contents: they carry credentials of the client
 * or of the gateway (`Gateway-JWT` is a signed assertion the backend trusts).
 */
export const DEFAULT_REDACTED_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'gateway-jwt',
];

/** The URL (path and query) without any `access_token` query parameter (RFC 6750 section 2.3). */
export function stripAccessToken(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash === -1 ? undefined : hash);
  const kept = query.split('&').filter((pair) => {
    if (pair === '') return false;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    let name: string;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      name = rawName;
    }
    return name.trim().toLowerCase() !== 'access_token';
  });
  return url.slice(0, q) + (kept.length > 0 ? `?${kept.join('&')}` : '');
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

/**
 * A copy of a JSON-like value (claims) with every string that contains `secret` replaced by
 * {@link REDACTED} and every object key that contains it removed: {@link scrubSecret} and a deep
 * copy in one pass, for values the record must not share (they may be frozen, or change later).
 * `secret` `undefined` or empty: a plain copy. Nesting deeper than 32 levels is copied as is.
 */
export function copyScrubbed<T>(value: T, secret: string | undefined): T {
  return copy(value, secret === '' ? undefined : secret, 0) as T;
}

function copy(value: unknown, secret: string | undefined, depth: number): unknown {
  if (typeof value === 'string') return secret !== undefined && value.includes(secret) ? REDACTED : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth > 32) return structuredClone(value);
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copy(value[i], secret, depth + 1);
    return out;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  // Anything but a plain object (a Date, a Map...) is copied as structuredClone would.
  if (prototype !== Object.prototype && prototype !== null) return secret === undefined ? structuredClone(value) : scrub(structuredClone(value), secret, depth, undefined);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (secret !== undefined && key.includes(secret)) continue;
    const member = copy((value as Record<string, unknown>)[key], secret, depth + 1);
    // A `__proto__` member (JSON.parse makes it an own property) stays a member, not a prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true });
    else out[key] = member;
  }
  return out;
}
