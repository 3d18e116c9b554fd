/**
 * Operation path templates (`/pet/{petId}`, `/days/{year}-{month}-{day}`) and how a resource path
 * matches one. Routing tests every request's path against the API's templates before any token
 * work, so a match never backtracks: its time is linear in the path and the template, whatever
 * either holds (a regular expression of several parameters in one segment took seconds on one
 * request of a few thousand `-`).
 *
 * How a path matches:
 *
 * - segment by segment: the path has as many `/`-separated segments as the template (one trailing
 *   `/` of the path is ignored when the template has none there), and a literal segment is equal
 *   to the path's;
 * - in a segment with parameters, the literal text before the first parameter starts the segment,
 *   the literal text after the last one ends it, and each literal text between two parameters is
 *   found at its leftmost place that lets the parameter before it be valid: every parameter but the
 *   last takes the shortest value it can, the last takes the rest. `{year}-{month}-{day}` splits
 *   `2024-01-02` into `2024`, `01`, `02`, and `2024-01-02-03` into `2024`, `01`, `02-03`;
 * - a parameter's value is never empty, never holds `/`, and is never `.` or `..`.
 *
 * A path matches when a split of that kind exists; looking for the leftmost place first finds one
 * whenever any does (a later place only leaves less room to what follows).
 *
 * @module
 */

/** An operation's path template, compiled: what routing tests each resource path against. */
export interface PathTemplate {
  /** The template as written, for example `/pet/{petId}`. */
  readonly template: string;
  /**
   * Whether `path` (a canonical resource path, such as `/pet/10`) matches the template, in time
   * linear in the path and the template.
   */
  test(path: string): boolean;
}

/** A literal text between parameters, with its KMP failure table (searches never rescan). */
interface Literal {
  readonly text: string;
  readonly failure: Int32Array;
}

/**
 * One segment of a template: a literal one (`pet`), or literal texts around parameters
 * (`{year}-{month}-{day}`: `''`, `-`, `-`, `''`), one more literal than parameters.
 */
export type TemplateSegment = { readonly literal: string } | { readonly literals: readonly Literal[] };

const SLASH = 47;
const DOT = 46;
const OPEN = 123; // {
const CLOSE = 125; // }

function literal(text: string): Literal {
  const failure = new Int32Array(text.length);
  for (let i = 1, k = 0; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== text.charCodeAt(k)) k = failure[k - 1]!;
    if (text.charCodeAt(i) === text.charCodeAt(k)) k++;
    failure[i] = k;
  }
  return { text, failure };
}

/**
 * The pieces of one template segment. A parameter is `{` then at least one character other than
 * `}` and `/`, then `}`; any other brace is literal text. One pass: a `{` with no `}` before the
 * segment ends makes every `{` up to there literal.
 */
function compileSegment(segment: string): TemplateSegment {
  const literals: Literal[] = [];
  let text = '';
  let i = 0;
  while (i < segment.length) {
    if (segment.charCodeAt(i) !== OPEN) {
      text += segment[i];
      i++;
      continue;
    }
    const close = segment.indexOf('}', i + 1);
    if (close === -1) {
      text += segment.slice(i);
      break;
    }
    if (close === i + 1) {
      text += '{';
      i++;
      continue;
    }
    literals.push(literal(text));
    text = '';
    i = close + 1;
  }
  if (literals.length === 0) return { literal: text };
  literals.push(literal(text));
  return { literals };
}

/** The leftmost `literal` in `text` starting at or after `from` and ending at or before `to`; -1 if none. */
function find(text: string, { text: wanted, failure }: Literal, from: number, to: number): number {
  const n = wanted.length;
  if (n === 0) return from <= to ? from : -1;
  let k = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    while (k > 0 && wanted.charCodeAt(k) !== c) k = failure[k - 1]!;
    if (wanted.charCodeAt(k) === c) k++;
    if (k === n) return i - n + 1;
  }
  return -1;
}

/**
 * The first place a parameter starting at `at` may end: after one character, or after two when
 * that one is `.`, or after three when the first two are `..` (a value is never `.` or `..`).
 */
function earliestEnd(text: string, at: number): number {
  if (text.charCodeAt(at) !== DOT) return at + 1;
  return text.charCodeAt(at + 1) === DOT ? at + 3 : at + 2;
}

/**
 * Whether `text` from `start` to `end` (one segment, no `/`) matches `segment`; the parameters'
 * values are pushed to `values` when given.
 */
export function matchSegment(segment: TemplateSegment, text: string, start: number, end: number, values?: string[]): boolean {
  if ('literal' in segment) return end - start === segment.literal.length && text.startsWith(segment.literal, start);
  const { literals } = segment;
  const last = literals.length - 1;
  const head = literals[0]!.text;
  const tail = literals[last]!.text;
  // Each parameter takes at least one character.
  if (end - start < head.length + tail.length + last) return false;
  const tailAt = end - tail.length;
  if (!text.startsWith(head, start) || !text.startsWith(tail, tailAt)) return false;
  let at = start + head.length;
  for (let i = 1; i < last; i++) {
    const found = find(text, literals[i]!, earliestEnd(text, at), tailAt);
    if (found === -1) return false;
    values?.push(text.slice(at, found));
    at = found + literals[i]!.text.length;
  }
  if (tailAt < earliestEnd(text, at)) return false;
  values?.push(text.slice(at, tailAt));
  return true;
}

/** A compiled template, with what the matcher's users inside the package need beyond {@link PathTemplate}. */
export class CompiledTemplate implements PathTemplate {
  readonly template: string;
  /** The segments after the leading `/`; empty for a template that does not start with `/` (it matches nothing). */
  readonly segments: readonly TemplateSegment[];

  constructor(template: string) {
    this.template = template;
    this.segments = template.charCodeAt(0) === SLASH ? template.slice(1).split('/').map(compileSegment) : [];
  }

  test(path: string): boolean {
    return this.values(path) !== undefined;
  }

  /**
   * The parameters' values, in the template's order, when `path` matches (as the module comment
   * says); `undefined` when it does not.
   */
  values(path: string): string[] | undefined {
    const values: string[] = [];
    if (this.#match(path, path.length, values)) return values;
    // One trailing `/` the template does not have.
    if (path.length > 1 && path.charCodeAt(path.length - 1) === SLASH) {
      values.length = 0;
      if (this.#match(path, path.length - 1, values)) return values;
    }
    return undefined;
  }

  /** Whether `path` up to `end` matches, segment by segment. */
  #match(path: string, end: number, values: string[]): boolean {
    const { segments } = this;
    if (segments.length === 0 || end < 1 || path.charCodeAt(0) !== SLASH) return false;
    let start = 1;
    for (let i = 0; i < segments.length; i++) {
      let stop = path.indexOf('/', start);
      if (stop === -1 || stop >= end) stop = end;
      const lastSegment = i === segments.length - 1;
      if (lastSegment !== (stop === end)) return false;
      if (!matchSegment(segments[i]!, path, start, stop, values)) return false;
      start = stop + 1;
    }
    return true;
  }
}

/**
 * Compiles an operation's path template. `{name}` is a parameter (any name: names do not change
 * what matches); a template that does not start with `/` matches nothing.
 *
 * @example
 * ```ts
 * const days = compilePathTemplate('/days/{year}-{month}-{day}');
 * days.test('/days/2024-01-02');   // true
 * days.values('/days/2024-01-02'); // ['2024', '01', '02']
 * days.test('/days/2024-01');      // false
 * ```
 */
export function compilePathTemplate(template: string): CompiledTemplate {
  return new CompiledTemplate(template);
}
