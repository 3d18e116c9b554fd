/**
 * The canonical request target: the one path a request is known by, decided once before routing
 * and used for routing, every XACML attribute, the record and the path relayed to the backend.
 *
 * A gateway and a backend that read one path two ways is an access-control bypass: a policy that
 * denies `/admin` is dodged by `/%61dmin`, `/x/../admin`, `/admin;x` or `/x%2f..%2fadmin` when the
 * backend decodes what the policy did not. So the path is put in one normal form (RFC 3986 6.2.2:
 * percent-encoded unreserved characters decoded, other escapes in upper case, characters outside
 * `pchar` escaped) and whatever has no single meaning across servers is refused instead of guessed.
 *
 * @module
 */

/** How strict the canonical form is; see {@link canonicalTarget}. */
export interface RequestTargetRules {
  /** Accept empty segments (`/a//b`) instead of refusing them. Default `false`. */
  readonly allowEmptySegments: boolean;
}

/** A request target in canonical form. */
export interface CanonicalTarget {
  /** The path, starting with `/`, in canonical form. */
  readonly path: string;
  /** The query string without `?` as sent (`''` when there is none). */
  readonly query: string;
}

/** Why a target was refused: a short text for diagnostics (never sent to the client). */
export interface RefusedTarget {
  readonly refused: string;
}

/** Classes of the ASCII characters of a path. */
const enum Kind {
  /** Kept as is: unreserved, sub-delims but `;`, `:` and `@`. */
  Keep = 0,
  /** Escaped as `%XX` in the canonical form (`"`, `<`, `{`, non-ASCII bytes...). */
  Escape = 1,
  /** Refused wherever it appears, raw or escaped: controls, `\`. */
  Refuse = 2,
}

const KIND: Kind[] = [];
for (let c = 0; c < 256; c++) {
  const ch = String.fromCharCode(c);
  if (c < 0x20 || c === 0x7f || ch === '\\') KIND[c] = Kind.Refuse;
  else if (/[A-Za-z0-9\-._~!$&'()*+,=:@]/.test(ch)) KIND[c] = Kind.Keep;
  else KIND[c] = Kind.Escape;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const HEX = '0123456789ABCDEF';

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}

function escaped(byte: number): string {
  return `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
}

/**
 * Puts a request target (`req.url`: origin-form, as Node gives it) in canonical form, or says why
 * it is refused. Refused: anything but origin-form (`*`, absolute-form), a fragment (`#`), a
 * malformed escape, dot segments (`.`, `..`, escaped or not), escaped separators (`%2F`, `%5C`),
 * backslashes, NUL and other control characters (escaped or not), `;` path parameters (some
 * servers drop them from a segment, others keep them) and, unless `allowEmptySegments`, empty
 * segments (`//`). A single trailing `/` is kept. The query is returned as sent.
 *
 * @example
 * ```ts
 * canonicalTarget('/pet/%61dmin?x=1', { allowEmptySegments: false }); // { path: '/pet/admin', query: 'x=1' }
 * canonicalTarget('/pet/../admin', { allowEmptySegments: false });   // { refused: 'dot segment' }
 * ```
 */
export function canonicalTarget(target: string, rules: RequestTargetRules): CanonicalTarget | RefusedTarget {
  if (target.charCodeAt(0) !== 47 /* / */) return { refused: 'not an origin-form request target' };
  if (target.includes('#')) return { refused: 'fragment in the request target' };
  const queryAt = target.indexOf('?');
  const raw = queryAt === -1 ? target : target.slice(0, queryAt);
  const query = queryAt === -1 ? '' : target.slice(queryAt + 1);
  const path = canonicalPath(raw, rules);
  return typeof path === 'string' ? { path, query } : path;
}

function canonicalPath(raw: string, rules: RequestTargetRules): string | RefusedTarget {
  let out = '';
  // Start of the current segment in `out`, to check it for a dot segment once it ends.
  let segmentStart = 1;
  let changed = false;
  const length = raw.length;
  for (let i = 1; i <= length; i++) {
    const code = i === length ? 47 : raw.charCodeAt(i);
    if (code === 47 /* / */) {
      const segment = (changed ? out : raw).slice(segmentStart, changed ? out.length : i);
      if (segment === '.' || segment === '..') return { refused: 'dot segment' };
      if (segment === '' && i < length && !rules.allowEmptySegments) return { refused: 'empty path segment' };
      if (i < length) {
        if (changed) out += '/';
        segmentStart = changed ? out.length : i + 1;
      }
      continue;
    }
    if (code === 59 /* ; */) return { refused: 'path parameter (;)' };
    if (code === 37 /* % */) {
      const high = i + 2 < length ? hexValue(raw.charCodeAt(i + 1)) : -1;
      const low = high === -1 ? -1 : hexValue(raw.charCodeAt(i + 2));
      if (low === -1) return { refused: 'malformed percent-encoding' };
      const byte = high * 16 + low;
      if (byte === 0x2f || byte === 0x5c) return { refused: 'encoded path separator' };
      if (byte < 0x20 || byte === 0x7f) return { refused: 'encoded control character' };
      if (!changed) out = raw.slice(0, i);
      changed = true;
      const ch = String.fromCharCode(byte);
      out += UNRESERVED.test(ch) ? ch : escaped(byte);
      i += 2;
      continue;
    }
    // Node gives the request line's bytes as latin1 characters; anything wider did not come from it.
    const kind = code < 256 ? KIND[code]! : Kind.Refuse;
    if (kind === Kind.Keep) {
      if (changed) out += raw[i];
      continue;
    }
    if (kind === Kind.Refuse) return { refused: code === 92 ? 'backslash in the path' : 'control or non-byte character in the path' };
    if (!changed) out = raw.slice(0, i);
    changed = true;
    out += escaped(code);
  }
  return changed ? out : raw;
}

/** Whether a canonical target was refused. */
export function isRefused(target: CanonicalTarget | RefusedTarget): target is RefusedTarget {
  return 'refused' in target;
}
