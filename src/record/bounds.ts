/**
 * Keeping records small whatever the client, the authorization server or a middleware sends: long
 * strings are cut with a visible marker, claims are copied within a depth, width and size budget.
 *
 * @module
 */
import { detach } from './detach.js';
import { REDACTED } from './redact.js';

/** Default longest string kept whole in a record (URL, header value, claim value, diagnostic). */
export const DEFAULT_MAX_VALUE_LENGTH = 2048;

/** The bounds of one record, derived once per `recordTransaction` from its `maxValueLength`. */
export interface RecordLimits {
  /** Longest string kept whole, in UTF-16 code units. */
  readonly maxValueLength: number;
  /** Deepest nesting of claims kept (the claims object is level 0). */
  readonly maxDepth: number;
  /** Most items of an array, members of an object, diagnostics or outgoing headers kept. */
  readonly maxEntries: number;
  /** Characters of all the strings of one section (a claims set; diagnostics and headers together). */
  readonly sectionLength: number;
  /** Values of one claims set. */
  readonly sectionNodes: number;
}

/** What is left of a section's allowance while it is copied. */
export interface Budget {
  /** Characters still allowed. */
  chars: number;
  /** Values still allowed. */
  nodes: number;
}

/** The limits of records whose strings are cut past `maxValueLength`. */
export function recordLimits(maxValueLength: number): RecordLimits {
  return Object.freeze({ maxValueLength, maxDepth: 8, maxEntries: 100, sectionLength: 16 * maxValueLength, sectionNodes: 1000 });
}

/** A fresh budget for one section. */
export function budgetOf(limits: RecordLimits): Budget {
  return { chars: limits.sectionLength, nodes: limits.sectionNodes };
}

/**
 * `value` when it is at most `max` long; otherwise its first `max` code units (never half of a
 * surrogate pair) followed by `…[truncated N characters]`.
 */
export function truncate(value: string, max: number): string {
  if (value.length <= max) return value;
  let cut = Math.max(0, max);
  if (cut > 0) {
    const code = value.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
  }
  return `${cut === 0 ? '' : detach(value.slice(0, cut))}…[truncated ${value.length - cut} characters]`;
}

/** {@link truncate} within what is left of a section's budget, which it consumes. */
export function fit(value: string, limits: RecordLimits, budget: Budget): string {
  const allowed = Math.min(limits.maxValueLength, Math.max(0, budget.chars));
  budget.chars -= Math.min(value.length, allowed);
  return truncate(value, allowed);
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // A `__proto__` member (JSON.parse makes it an own property) stays a member, not a prototype.
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * A bounded copy of a JSON-like value (claims): every string that contains `secret` replaced by
 * {@link REDACTED}, every object key that contains it removed, strings cut as {@link fit} does,
 * nesting past `maxDepth` replaced by a marker, arrays and objects cut after `maxEntries` (or when
 * the budget's values run out) with a marker item or member. Anything but plain data (a Date, a
 * Map) is copied as its JSON form, as the console serves it anyway.
 */
export function copyBounded<T>(value: T, secret: string | undefined, limits: RecordLimits, budget: Budget = budgetOf(limits)): T {
  return copy(value, secret === '' ? undefined : secret, limits, budget, 0) as T;
}

function copy(value: unknown, secret: string | undefined, limits: RecordLimits, budget: Budget, depth: number): unknown {
  budget.nodes--;
  if (typeof value === 'string') return secret !== undefined && value.includes(secret) ? REDACTED : fit(value, limits, budget);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= limits.maxDepth) return `…[truncated: nested deeper than ${limits.maxDepth} levels]`;
  if (Array.isArray(value)) {
    const n = value.length;
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) {
      if (i >= limits.maxEntries || budget.nodes <= 0) {
        out.push(`…[truncated ${n - i} more items]`);
        break;
      }
      out.push(copy(value[i], secret, limits, budget, depth + 1));
    }
    return out;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      json = undefined;
    }
    return json === undefined ? null : copy(JSON.parse(json), secret, limits, budget, depth);
  }
  const keys = Object.keys(value);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (secret !== undefined && key.includes(secret)) continue;
    if (i >= limits.maxEntries || budget.nodes <= 0) {
      define(out, '…', `[truncated ${keys.length - i} more members]`);
      break;
    }
    define(out, fit(key, limits, budget), copy((value as Record<string, unknown>)[key], secret, limits, budget, depth + 1));
  }
  return out;
}
