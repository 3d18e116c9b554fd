/**
 * Query-string surgery that keeps the rest of the URL byte for byte (no re-encoding).
 *
 * @module
 */

/**
 * Removes every occurrence of the query parameter `name` from `url` (absolute or origin-form),
 * leaving the other parameters exactly as they were sent. Names are compared after
 * percent-decoding, so `access%5Ftoken` is removed too.
 *
 * @example
 * ```ts
 * removeQueryParameter('/pet?access_token=abc&x=1', 'access_token'); // '/pet?x=1'
 * ```
 */
export function removeQueryParameter(url: string, name: string): string {
  const hashAt = url.indexOf('#');
  const fragment = hashAt === -1 ? '' : url.slice(hashAt);
  const beforeFragment = hashAt === -1 ? url : url.slice(0, hashAt);
  const queryAt = beforeFragment.indexOf('?');
  if (queryAt === -1) return url;
  const query = beforeFragment.slice(queryAt + 1);
  // Cheap exit on the hot path: most URLs carry no token.
  if (!query.includes(name) && !query.includes('%')) return url;
  const kept = query.split('&').filter((pair) => pair !== '' && parameterName(pair) !== name);
  const base = beforeFragment.slice(0, queryAt);
  return (kept.length === 0 ? base : `${base}?${kept.join('&')}`) + fragment;
}

/** Adds `name=value` (percent-encoded) to the query string of `url`. */
export function appendQueryParameter(url: string, name: string, value: string): string {
  const hashAt = url.indexOf('#');
  const fragment = hashAt === -1 ? '' : url.slice(hashAt);
  const beforeFragment = hashAt === -1 ? url : url.slice(0, hashAt);
  const separator = beforeFragment.includes('?') ? (beforeFragment.endsWith('?') ? '' : '&') : '?';
  return `${beforeFragment}${separator}${encodeURIComponent(name)}=${encodeURIComponent(value)}${fragment}`;
}

function parameterName(pair: string): string {
  const eq = pair.indexOf('=');
  const raw = (eq === -1 ? pair : pair.slice(0, eq)).replaceAll('+', ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
