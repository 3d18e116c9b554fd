/**
 * `rfc822Name` and `x500Name` (XACML 2.0 A.2, A.3.1, A.3.14): e-mail addresses with a
 * case-insensitive domain, and distinguished names compared after RFC 2253 normalization.
 *
 * @module
 */
import { DataTypeError, type DataType } from './types.js';
import { RFC822_NAME, X500_NAME } from './uris.js';
import { collapse } from './lexical.js';

/** A parsed `rfc822Name`: `local@domain`. */
export class Rfc822Name {
  /** `local + '@' + lower-case domain`: equal names have equal keys. */
  readonly key: string;
  /** The domain part, lower-cased. */
  readonly domain: string;
  /** Use the data type's `parse`. */
  constructor(
    /** The lexical form as given (white space collapsed). */
    readonly text: string,
    /** The local part (case-sensitive). */
    readonly local: string,
    domain: string,
  ) {
    this.domain = domain.toLowerCase();
    this.key = `${local}@${this.domain}`;
  }
}

/**
 * `rfc822Name`: the local part compares case-sensitively, the domain part case-insensitively.
 * Runtime value: {@link Rfc822Name}.
 */
export const rfc822NameType: DataType<Rfc822Name> = {
  id: RFC822_NAME,
  parse(lexical) {
    const s = collapse(lexical);
    const at = s.lastIndexOf('@');
    if (at <= 0 || at === s.length - 1 || /\s/.test(s)) {
      throw new DataTypeError(`invalid rfc822Name: ${JSON.stringify(lexical)}`);
    }
    return new Rfc822Name(s, s.slice(0, at), s.slice(at + 1));
  },
  equal: (a, b) => a.key === b.key,
  format: (v) => v.text,
};

/**
 * Compiles an `rfc822Name-match` pattern (XACML 2.0 A.3.14) into a predicate: a full mailbox
 * (`local@domain`: local part exact, domain case-insensitive), a domain (`sun.com`: that exact
 * domain, case-insensitive), or a sub-domain suffix (`.east.sun.com`: any domain ending with it,
 * hence never the domain `east.sun.com` itself). Compile a constant pattern once; the predicate
 * allocates nothing.
 */
export function rfc822NamePattern(pattern: string): (name: Rfc822Name) => boolean {
  const at = pattern.lastIndexOf('@');
  if (at >= 0) {
    const local = pattern.slice(0, at);
    const domain = pattern.slice(at + 1).toLowerCase();
    return (n) => n.local === local && n.domain === domain;
  }
  const p = pattern.toLowerCase();
  if (p.startsWith('.')) return (n) => n.domain.endsWith(p);
  return (n) => n.domain === p;
}

/** `rfc822Name-match(pattern, name)`; see {@link rfc822NamePattern}. */
export function rfc822NameMatch(pattern: string, name: Rfc822Name): boolean {
  return rfc822NamePattern(pattern)(name);
}

/** A parsed `x500Name`: its RDNs, most significant last (as written), normalized. */
export class X500Name {
  /** The normalized RDNs joined: equal names have equal keys. */
  readonly key: string;
  /** Use the data type's `parse`. */
  constructor(
    /** The lexical form as given (white space collapsed). */
    readonly text: string,
    /** Each RDN normalized (types upper-cased, values unescaped, case-folded, AVAs sorted). */
    readonly rdns: readonly string[],
  ) {
    this.key = rdns.join(',');
  }
}

/** Short names for the attribute types of RFC 2253 (and common ones), by OID. */
const OID_NAMES: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.9': 'STREET',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '2.5.4.5': 'SERIALNUMBER',
  '2.5.4.4': 'SN',
  '2.5.4.42': 'GIVENNAME',
  '2.5.4.12': 'T',
  '1.2.840.113549.1.9.1': 'EMAILADDRESS',
};
const TYPE_ALIASES: Readonly<Record<string, string>> = { E: 'EMAILADDRESS', S: 'ST', TITLE: 'T', SURNAME: 'SN' };

function x500Error(lexical: string, why: string): never {
  throw new DataTypeError(`invalid x500Name (${why}): ${JSON.stringify(lexical)}`);
}

function normalizeType(raw: string, lexical: string): string {
  let t = raw.trim().toUpperCase();
  if (t.startsWith('OID.')) t = t.slice(4);
  if (t === '') x500Error(lexical, 'empty attribute type');
  if (/^[0-9]+(\.[0-9]+)*$/.test(t)) return OID_NAMES[t] ?? t;
  if (!/^[A-Z][A-Z0-9-]*$/.test(t)) x500Error(lexical, `bad attribute type ${raw}`);
  return TYPE_ALIASES[t] ?? t;
}

/**
 * RFC 3280 4.1.2.4 comparison of a string value: case-insensitive, leading/trailing white space
 * removed, inner runs of white space as one space. A `#hex` (BER) value is compared as lower-case hex.
 */
function normalizeValue(v: string): string {
  return v.replace(/\s+/g, ' ').trim().toLowerCase();
}

/**
 * Parses an RFC 2253 distinguished name (also `;` separators and quoted values of RFC 1779) into
 * normalized RDN strings.
 */
function parseDn(s: string, lexical: string): string[] {
  const rdns: string[] = [];
  let avas: string[] = [];
  let i = 0;
  const n = s.length;
  if (s.trim() === '') return rdns; // the empty DN
  for (;;) {
    // attribute type
    const eq = s.indexOf('=', i);
    if (eq < 0) x500Error(lexical, 'missing "="');
    const type = normalizeType(s.slice(i, eq), lexical);
    i = eq + 1;
    while (i < n && s[i] === ' ') i++;
    let value = '';
    let hex = false;
    if (s[i] === '#') {
      let j = i + 1;
      while (j < n && /[0-9A-Fa-f]/.test(s[j]!)) j++;
      value = s.slice(i, j).toLowerCase();
      hex = true;
      i = j;
    } else if (s[i] === '"') {
      i++;
      while (i < n && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < n) i++;
        value += s[i];
        i++;
      }
      if (i >= n) x500Error(lexical, 'unterminated quoted value');
      i++;
    } else {
      const bytes: number[] = [];
      const flush = (): void => {
        if (bytes.length) {
          value += Buffer.from(bytes).toString('utf8');
          bytes.length = 0;
        }
      };
      while (i < n && s[i] !== ',' && s[i] !== ';' && s[i] !== '+') {
        if (s[i] === '\\') {
          const h = s.slice(i + 1, i + 3);
          if (/^[0-9A-Fa-f]{2}$/.test(h)) {
            bytes.push(parseInt(h, 16));
            i += 3;
            continue;
          }
          if (i + 1 >= n) x500Error(lexical, 'dangling escape');
          flush();
          value += s[i + 1];
          i += 2;
          continue;
        }
        flush();
        value += s[i];
        i++;
      }
      flush();
    }
    avas.push(`${type}=${hex ? value : normalizeValue(value)}`);
    while (i < n && s[i] === ' ') i++;
    if (i >= n) break;
    const sep = s[i];
    i++;
    if (sep === '+') continue;
    if (sep !== ',' && sep !== ';') x500Error(lexical, `unexpected ${JSON.stringify(sep)}`);
    rdns.push(avas.sort().join('+'));
    avas = [];
  }
  rdns.push(avas.sort().join('+'));
  return rdns;
}

/**
 * `x500Name`: equal when every RDN matches after RFC 2253 normalization, AVAs within an RDN
 * sorted, values compared case-insensitively with white space normalized (RFC 3280 4.1.2.4).
 * Runtime value: {@link X500Name}.
 */
export const x500NameType: DataType<X500Name> = {
  id: X500_NAME,
  parse(lexical) {
    const s = collapse(lexical);
    return new X500Name(s, parseDn(s, lexical));
  },
  equal: (a, b) => a.key === b.key,
  format: (v) => v.text,
};

/**
 * `x500Name-match` (XACML 2.0 A.3.14): whether `name` ends with the RDN sequence of `suffix`
 * (the first argument matches some terminal sequence of RDNs of the second).
 */
export function x500NameMatch(suffix: X500Name, name: X500Name): boolean {
  const a = suffix.rdns;
  const b = name.rdns;
  if (a.length > b.length) return false;
  const off = b.length - a.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[off + i]) return false;
  return true;
}
