/**
 * Option checks of every factory: one place that says what a valid option is and how a bad one is
 * reported, so that a misconfiguration fails at start-up with the same shape of error everywhere:
 * an {@link InvalidOptionError} (a `TypeError`, code `ERR_INVALID_OPTION`) whose message starts with
 * `<factory>: options.<path>`.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The code of every {@link InvalidOptionError}. */
export const INVALID_OPTION = 'ERR_INVALID_OPTION';

/** One bad option of an {@link InvalidOptionError}. */
export interface InvalidOptionIssue {
  /** The option, as `<factory>: options.<path>`, for example `createTokenPolicy: options.timeoutMs`. */
  readonly option: string;
  /** What is wrong with it, for example `must be a positive integer`. */
  readonly message: string;
}

/**
 * A factory was given an option it cannot use (or several: a factory that checks its options
 * against a schema reports every problem at once, in {@link InvalidOptionError.issues}). Thrown
 * at creation, never on a request.
 *
 * @example
 * ```ts
 * try {
 *   createRelay({ target: 'ftp://nope' });
 * } catch (err) {
 *   if (err instanceof InvalidOptionError) console.error(err.code, err.option, err.message);
 * }
 * ```
 */
export class InvalidOptionError extends TypeError {
  /** Always `ERR_INVALID_OPTION`. */
  readonly code: typeof INVALID_OPTION = INVALID_OPTION;
  /** The (first) bad option, as `<factory>: options.<path>`, for example `createRelay: options.timeoutMs`. */
  readonly option: string;
  /** Every bad option found, the first one first; the message lists them all, each with its path. */
  readonly issues: readonly InvalidOptionIssue[];

  /** `option` and `message`: the first bad option; `more`: the others found with it. */
  constructor(option: string, message: string, more: readonly InvalidOptionIssue[] = []) {
    // `createTokenPolicy: options.issuer must be ...; options.timeoutMs must be ...`: the factory said once.
    const factory = option.slice(0, option.indexOf(': ') + 2);
    const others = more.map(
      (issue) => `${issue.option.startsWith(factory) ? issue.option.slice(factory.length) : issue.option} ${issue.message}`,
    );
    super([`${option} ${message}`, ...others].join('; '));
    this.name = 'InvalidOptionError';
    this.option = option;
    this.issues = Object.freeze([{ option, message }, ...more]);
  }
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Whether `value` is an HTTP header name (RFC 9110 token). */
export function isHeaderName(value: string): boolean {
  return HEADER_NAME.test(value);
}

/** Whether Node accepts `value` as a header value (RFC 9110 field-value characters: no controls but tab). */
export function isHeaderValue(value: string): boolean {
  return HEADER_VALUE.test(value);
}

/**
 * The checks of one factory's options. Each method takes the value, its path below `options` and,
 * for optional settings, the default; it returns the value to use or throws an
 * {@link InvalidOptionError}.  @internal
 */
export class OptionChecks {
  readonly #factory: string;

  constructor(factory: string) {
    this.#factory = factory;
  }

  /** Throws the error of the option at `path` (below `options`; `''` for `options` itself). */
  fail(path: string, message: string): never {
    throw new InvalidOptionError(this.#option(path), message);
  }

  /** Throws one error naming every issue (paths below `options`), when there is any. */
  failAll(issues: ReadonlyArray<{ readonly path: string; readonly message: string }>): void {
    const [first, ...more] = issues;
    if (first === undefined) return;
    throw new InvalidOptionError(
      this.#option(first.path),
      first.message,
      more.map((issue) => ({ option: this.#option(issue.path), message: issue.message })),
    );
  }

  #option(path: string): string {
    return `${this.#factory}: options${path === '' ? '' : `.${path}`}`;
  }

  /** An object (not `null`, not an array); `fallback` when undefined and one is given. */
  object<T extends object>(value: unknown, path: string, fallback?: T): T {
    if (value === undefined && fallback !== undefined) return fallback;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) this.fail(path, 'must be an object');
    return value as T;
  }

  /**
   * Refuses every key of the object `value` that `known` does not list (`undefined` passes): a
   * misspelt option in plain JavaScript would otherwise be ignored, and the check it meant to set
   * silently left out. The error names the key and, when one is close, the option it may mean.
   */
  known<T extends object | undefined>(value: T, path: string, known: readonly string[]): T {
    if (value === undefined) return value;
    refuseUnknownKeys(`${this.#factory}: options${path === '' ? '' : `.${path}`}`, this.object(value, path), known);
    return value;
  }

  /** A boolean. */
  boolean(value: unknown, path: string, fallback: boolean): boolean {
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') this.fail(path, 'must be a boolean');
    return value;
  }

  /** A finite number above 0 (a whole one with `integer`). */
  positive(value: unknown, path: string, fallback: number, integer = false): number {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isSafeInteger(value))) {
      this.fail(path, integer ? 'must be a positive integer' : 'must be a positive number');
    }
    return value;
  }

  /** A finite number of at least 0 (a whole one with `integer`). */
  nonNegative(value: unknown, path: string, fallback: number, integer = false): number {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (integer && !Number.isSafeInteger(value))) {
      this.fail(path, integer ? 'must be a non-negative integer' : 'must be a non-negative number');
    }
    return value;
  }

  /** A non-empty string (matching `pattern`, described by `what`, when given). */
  string(value: unknown, path: string, fallback?: string, pattern?: RegExp, what = 'a non-empty string'): string {
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || value === '' || (pattern !== undefined && !pattern.test(value))) this.fail(path, `must be ${what}`);
    return value;
  }

  /** One of `allowed`. */
  oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[], fallback?: T): T {
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value))
      this.fail(path, `must be one of ${allowed.join(', ')}`);
    return value as T;
  }

  /** A function (optional: `undefined` stays `undefined`). */
  optionalFunction<F extends (...args: never[]) => unknown>(value: unknown, path: string): F | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== 'function') this.fail(path, 'must be a function');
    return value as F;
  }

  /** An HTTP header name. */
  headerName(value: unknown, path: string, fallback?: string): string {
    return this.string(value, path, fallback, HEADER_NAME, 'a header name');
  }

  /** An HTTP header value (no control characters but tab; may be empty only with `allowEmpty`). */
  headerValue(value: unknown, path: string, fallback?: string, allowEmpty = false): string {
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || (!allowEmpty && value === '') || !HEADER_VALUE.test(value)) {
      this.fail(
        path,
        allowEmpty ? 'must be a header value (no control characters)' : 'must be a non-empty header value (no control characters)',
      );
    }
    return value;
  }
}

/**
 * Refuses the first key of `value` that `known` does not list, as {@link OptionChecks.known} does,
 * for checks that name their options themselves (`name` as `monitoringConsole: options`).  @internal
 */
export function refuseUnknownKeys(name: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidOptionError(`${name}.${key}`, unknownOptionMessage(key, known));
  }
}

/** What is said of an option `key` that `known` does not list: the nearest valid one, or them all.  @internal */
export function unknownOptionMessage(key: string, known: readonly string[]): string {
  const nearest = nearestKey(key, known);
  return `is not an option (${nearest === undefined ? `options: ${known.join(', ')}` : `did you mean "${nearest}"?`})`;
}

/**
 * The keys of an options type, for {@link OptionChecks.known}: every key of `T` must be listed and
 * no other (a compile error otherwise), so the list cannot fall behind the type.  @internal
 */
export function optionKeys<T extends object>(keys: Record<keyof T, true>): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * The key of `known` that `given` most likely meant, or `undefined` when none is close: a few
 * letters off the whole key (`requireScope` → `requiredScopes`, `policy` → `policies`), or the
 * given key is a word or words of a known one (`scopes` → `requiredScopes`, `timeout` →
 * `timeoutMs`). Case is ignored.
 *  @internal
 */
export function nearestKey(given: string, known: readonly string[]): string | undefined {
  const wanted = given.toLowerCase();
  let best: { key: string; score: number } | undefined;
  for (const key of known) {
    const whole = Math.min(keyDistance(wanted, key.toLowerCase()), keyDistance(singular(wanted), singular(key.toLowerCase())));
    let score = whole <= Math.max(1, Math.floor(wanted.length / 3)) ? whole : Infinity;
    const words = key.split(/(?=[A-Z])/).map((w) => w.toLowerCase());
    for (let from = 0; from < words.length; from++) {
      for (let to = from + 1; to <= words.length; to++) {
        if (from === 0 && to === words.length) continue;
        const joined = words.slice(from, to).join('');
        const part = Math.min(keyDistance(wanted, joined), keyDistance(singular(wanted), singular(joined)));
        // A part of a key is a weaker match than the whole key at the same distance.
        if (part <= Math.floor(wanted.length / 4)) score = Math.min(score, part + 0.5);
      }
    }
    if (score !== Infinity && (best === undefined || score < best.score)) best = { key, score };
  }
  return best?.key;
}

/** A command's flags, as `parseArgs` takes them. */
type Flags = NonNullable<ParseArgsConfig['options']>;

/** A flag as typed, for a message: bounded, and quoted when it holds anything but visible ASCII. */
function typedFlag(raw: string): string {
  const bounded = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return /^[\x21-\x7e…]+$/.test(bounded) ? bounded : JSON.stringify(bounded);
}

/**
 * What is wrong with command-line `args` that `parseArgs` refused with `err` (strict), said for an
 * operator in one line: an unknown flag with the nearest valid one (`unknown option --prot (did you
 * mean --port?)`), a flag without its value, a switch given one. Flags are compared as option keys
 * are (`admin-port` as `adminPort`), so that `--adminport` finds `--admin-port`.  @internal
 */
export function commandLineProblem(err: unknown, args: string[], flags: Flags): string {
  const { tokens } = parseArgs({ args, options: flags, strict: false, allowPositionals: true, tokens: true });
  const names = Object.keys(flags);
  const asKey = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const flag = typedFlag(token.rawName);
    const spec = Object.hasOwn(flags, token.name) ? flags[token.name] : undefined;
    if (spec === undefined) {
      const nearest = token.rawName.startsWith('--') ? nearestKey(asKey(token.name), names.map(asKey)) : undefined;
      const meant = nearest === undefined ? undefined : names.find((name) => asKey(name) === nearest);
      return `unknown option ${flag}${meant === undefined ? '' : ` (did you mean --${meant}?)`}`;
    }
    if (spec.type === 'string' && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-'))))
      return `${flag} needs a value${token.value === undefined ? '' : ` (got the flag ${typedFlag(token.value)} after it)`}`;
    if (spec.type === 'boolean' && token.inlineValue === true) return `${flag} takes no value`;
  }
  return (err as Error)?.message ?? String(err);
}

/** A plural key as its singular (`policies` → `policy`, `maxRecords` → `maxrecord`), for comparing. */
function singular(key: string): string {
  return key.replace(/ies$/, 'y').replace(/s$/, '');
}

/**
 * Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps, each 1;
 * a substitution that changes only the case costs `caseCost` (default 1: case counts fully; the
 * XACML designator check gives ½, so that `clientID` is nearer to `clientId` than `clientIx`).
 * The one edit distance of the project.  @internal
 */
export function editDistance(a: string, b: string, caseCost = 1): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const ca = a[i - 1]!;
      const cb = b[j - 1]!;
      const cost = ca === cb ? 0 : caseCost !== 1 && ca.toLowerCase() === cb.toLowerCase() ? caseCost : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && ca === b[j - 2] && a[i - 2] === cb) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/** {@link editDistance} for keys: past 8 characters of difference in length, none is close. */
function keyDistance(a: string, b: string): number {
  return Math.abs(a.length - b.length) > 8 ? Infinity : editDistance(a, b);
}

/** The option checks of `factory` (for example `createRelay`).  @internal */
export function optionChecks(factory: string): OptionChecks {
  return new OptionChecks(factory);
}
