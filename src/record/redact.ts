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

/** A copy of `headers` with credential-bearing ones (by name, or containing `secret`) redacted. */
export function redactHeaders(
  headers: Record<string, string>,
  redacted: ReadonlySet<string>,
  secret: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const hit = redacted.has(name.toLowerCase()) || (secret !== undefined && secret !== '' && String(value).includes(secret));
    out[name] = hit ? REDACTED : String(value);
  }
  return out;
}

/**
 * Replaces, in place, every string of a JSON-like value that contains `secret` by {@link REDACTED}
 * (and removes object keys that contain it). The last line of defence: whatever a middleware put
 * in diagnostics or claims, the token does not reach the store.
 */
export function scrubSecret<T>(value: T, secret: string): T {
  if (secret === '') return value;
  return scrub(value, secret, 0) as T;
}

function scrub(value: unknown, secret: string, depth: number): unknown {
  if (typeof value === 'string') return value.includes(secret) ? REDACTED : value;
  if (value === null || typeof value !== 'object' || depth > 32) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = scrub(value[i], secret, depth + 1);
    return value;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (key.includes(secret)) {
      delete object[key];
      continue;
    }
    object[key] = scrub(object[key], secret, depth + 1);
  }
  return value;
}
