/**
 * The one place that finds and removes a parameter in a query string or form body: what keeps a
 * token in the URL from reaching a backend, a record or an XACML attribute. It keeps the rest of
 * the URL byte for byte (no re-encoding). The request path's canonical form is decided beside it,
 * in `request-target.ts`: this module only edits queries and form bodies.
 *
 * @module
 */

/**
 * Removes every occurrence of the query parameter `name` (lower case) from `url` (absolute or
 * origin-form), leaving the other parameters exactly as they were sent. Names are compared after
 * percent-decoding, trimmed and in any case, `qs` shapes included: `access%5Ftoken`,
 * `ACCESS_TOKEN` and `access_token[]` go too.
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
  const kept = removeFormParameter(query, name);
  if (kept === query) return url;
  const base = beforeFragment.slice(0, queryAt);
  return (kept === '' ? base : `${base}?${kept}`) + fragment;
}

/**
 * Removes every `name` parameter from an `application/x-www-form-urlencoded` text (a query string
 * without `?`, or a form body), keeping the other pairs byte for byte. `name[...]` and `name.x`
 * go too: `qs`-style parsers (Express 4, PHP) read them as `name`.
 */
export function removeFormParameter(form: string, name: string): string {
  // Cheap exit on the hot path: most requests carry no token there (any case, any escape).
  if (!form.includes('%') && !form.toLowerCase().includes(name)) return form;
  const pairs = form.split('&');
  const kept = pairs.filter((pair) => !isParameter(parameterName(pair), name));
  return kept.length === pairs.length ? form : kept.join('&');
}

/** Adds `name=value` (percent-encoded) to the query string of `url`. */
export function appendQueryParameter(url: string, name: string, value: string): string {
  const hashAt = url.indexOf('#');
  const fragment = hashAt === -1 ? '' : url.slice(hashAt);
  const beforeFragment = hashAt === -1 ? url : url.slice(0, hashAt);
  const separator = beforeFragment.includes('?') ? (beforeFragment.endsWith('?') ? '' : '&') : '?';
  return `${beforeFragment}${separator}${encodeURIComponent(name)}=${encodeURIComponent(value)}${fragment}`;
}

/**
 * Whether a decoded parameter name is `name` as some server would read it: in any case, padded
 * with spaces, or in a `qs` shape (`name[]`, `name[x]`, `name.x`). Removing too much here only
 * costs a parameter; removing too little relays a token.
 */
function isParameter(decoded: string, name: string): boolean {
  const trimmed = decoded.trim().toLowerCase();
  if (!trimmed.startsWith(name)) return false;
  const next = trimmed.charCodeAt(name.length);
  return Number.isNaN(next) || next === 91 /* [ */ || next === 46; /* . */
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
