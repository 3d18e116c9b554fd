/**
 * The problems of a value, as a list: the shape shared by the checks of
 * `requireScopes`/`xacmlAuthorize` (which throw the first) and the configuration validator (which
 * reports them all), so that the rules of a valid value are written once.  @internal
 *
 * @module
 */

/** One problem: the field's path below the value checked, and what is wrong. */
export interface RuleIssue {
  /** Path below the value, for example `client1.roles[0]` (empty for the value itself). */
  readonly path: string;
  /** What is wrong, for example `must be a non-empty string`. */
  readonly message: string;
}

/** A member's path segment: `.name`, or `["a name"]` when it is not a plain identifier. */
export function memberPath(base: string, key: string): string {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return base === '' ? key : `${base}.${key}`;
  return `${base}[${JSON.stringify(key)}]`;
}

/** The full path of an issue found below `base` (`base.key`, `base["a key"]`, `base[0]`). */
export function issuePath(base: string, relative: string): string {
  if (relative === '') return base;
  if (base === '') return relative;
  return relative.startsWith('[') ? `${base}${relative}` : `${base}.${relative}`;
}
