/**
 * String functions (XACML 2.0 A.3.9), regular-expression matching (A.3.13) and the special
 * match functions (A.3.14).
 *
 * @module
 */
import { XacmlProcessingError } from '../errors.js';
import type { FunctionSpec } from './types.js';
import { BOOL, F1, F2, fixed, one, variadic } from './define.js';
import { compileXsRegex } from './regex.js';
import type { XsRegex } from './regex.js';
import { rfc822NameMatch, rfc822NamePattern, x500NameMatch, type Rfc822Name, type X500Name } from '../datatypes/names.js';
import * as T from '../datatypes/uris.js';

const STR = one(T.STRING);
const URI = one(T.ANY_URI);

function concat(a: readonly unknown[]): string {
  let s = '';
  for (let i = 0; i < a.length; i++) s += a[i] as string;
  return s;
}

/** Most patterns given as values (not policy constants) kept compiled, per function. */
const RUNTIME_PATTERNS = 64;

function regex(pattern: string, fn: string): XsRegex {
  try {
    return compileXsRegex(pattern);
  } catch (e) {
    throw new XacmlProcessingError(`${fn}: ${(e as Error).message}`);
  }
}

/**
 * A `*-regexp-match` function: argument 1 is an XML Schema regular expression, argument 2 is
 * converted to a string by `toText` and matched as `fn:matches` does (any substring, unless
 * anchored), in time linear in its length (see `regex.ts`). A constant pattern is compiled once,
 * with the policy, through `specialize`; a pattern computed per request goes through a small
 * cache of the last {@link RUNTIME_PATTERNS} ones (a compilation is linear in the pattern, but
 * not free).
 */
function regexpMatch(id: string, name: string, type: string, toText: (v: unknown) => string): FunctionSpec {
  const cache = new Map<string, XsRegex>();
  const runtime = (pattern: string): XsRegex => {
    let re = cache.get(pattern);
    if (re === undefined) {
      re = regex(pattern, name);
      if (cache.size >= RUNTIME_PATTERNS) cache.delete(cache.keys().next().value!);
      cache.set(pattern, re);
    }
    return re;
  };
  const impl = (a: readonly unknown[]): boolean => runtime(a[0] as string).test(toText(a[1]));
  const specialize: FunctionSpec['specialize'] = (known, constants) => {
    if (!known[0]) return impl;
    let re: XsRegex;
    try {
      re = regex(constants[0] as string, name);
    } catch (e) {
      return () => {
        throw e;
      };
    }
    return (a) => re.test(toText(a[1]));
  };
  return fixed(id, [STR, one(type)], BOOL, impl, specialize);
}

const asString = (v: unknown): string => v as string;
const asText = (v: unknown): string => (v as { text: string }).text;

/**
 * `string-concatenate` (2.0, two or more strings), `uri-string-concatenate` (2.0, an anyURI then
 * one or more strings, giving an anyURI; also under its other published spelling
 * `url-string-concatenate`), `string-regexp-match` (1.0), `anyURI-`, `ipAddress-`, `dnsName-`,
 * `rfc822Name-`, `x500Name-regexp-match` (2.0, matching the value's lexical form),
 * `x500Name-match`, `rfc822Name-match`.
 */
export function stringFunctions(): FunctionSpec[] {
  const uriConcat = (id: string): FunctionSpec => variadic(id, [URI, STR], STR, 2, URI, concat);
  return [
    variadic(`${F2}string-concatenate`, [STR, STR], STR, 2, STR, concat),
    uriConcat(`${F2}uri-string-concatenate`),
    uriConcat(`${F2}url-string-concatenate`),
    regexpMatch(`${F1}string-regexp-match`, 'string-regexp-match', T.STRING, asString),
    regexpMatch(`${F2}anyURI-regexp-match`, 'anyURI-regexp-match', T.ANY_URI, asString),
    regexpMatch(`${F2}ipAddress-regexp-match`, 'ipAddress-regexp-match', T.IP_ADDRESS, asText),
    regexpMatch(`${F2}dnsName-regexp-match`, 'dnsName-regexp-match', T.DNS_NAME, asText),
    regexpMatch(`${F2}rfc822Name-regexp-match`, 'rfc822Name-regexp-match', T.RFC822_NAME, asText),
    regexpMatch(`${F2}x500Name-regexp-match`, 'x500Name-regexp-match', T.X500_NAME, asText),
    fixed(`${F1}x500Name-match`, [one(T.X500_NAME), one(T.X500_NAME)], BOOL, (a) => x500NameMatch(a[0] as X500Name, a[1] as X500Name)),
    fixed(
      `${F1}rfc822Name-match`,
      [STR, one(T.RFC822_NAME)],
      BOOL,
      (a) => rfc822NameMatch(a[0] as string, a[1] as Rfc822Name),
      (known, constants) => {
        if (!known[0]) return (a) => rfc822NameMatch(a[0] as string, a[1] as Rfc822Name);
        const match = rfc822NamePattern(constants[0] as string);
        return (a) => match(a[1] as Rfc822Name);
      },
    ),
  ];
}
