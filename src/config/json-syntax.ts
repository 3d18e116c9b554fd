/**
 * JSON files an operator edits (the configuration, the users file) parsed with the place of a
 * syntax error: `JSON.parse` says `Unexpected end of JSON input`, or quotes the whole text, and
 * never the line, which a YAML error always has.
 *
 * @module
 */

/** A JSON text that does not parse: where (1-based line and column) and why. */
export class JsonSyntaxError extends SyntaxError {
  override readonly name = 'JsonSyntaxError';
  /** The line of the problem, from 1. */
  readonly line: number;
  /** Its column, in characters from 1. */
  readonly column: number;

  constructor(line: number, column: number, problem: string, options?: { cause?: unknown }) {
    super(`at line ${line}, column ${column}: ${problem}`, options);
    this.line = line;
    this.column = column;
  }
}

/**
 * `text` parsed as JSON (RFC 8259).
 *
 * @throws JsonSyntaxError naming the line, the column and what is wrong there, for example
 * `at line 3, column 5: "}" where a value was expected`.
 */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    // Found again by a scan of our own, only now: the usual case costs nothing more.
    const found = firstSyntaxError(text) ?? { offset: 0, problem: (err as Error).message };
    const before = text.slice(0, found.offset);
    const lineStart = before.lastIndexOf('\n') + 1;
    const line = before.length - before.replaceAll('\n', '').length + 1;
    throw new JsonSyntaxError(line, [...before.slice(lineStart)].length + 1, found.problem, { cause: err });
  }
}

/** A character as a message shows it: quoted when printable, else its code point. */
function shown(text: string, offset: number): string {
  const point = text.codePointAt(offset)!;
  if (point < 0x20 || (point >= 0x7f && point < 0xa0)) return `U+${point.toString(16).toUpperCase().padStart(4, '0')}`;
  return JSON.stringify(String.fromCodePoint(point));
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const NUMBER_LIKE = /[-+0-9.eE]+/y;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

type Expected = 'value' | 'value or ]' | 'name' | 'name or }' | ':' | 'after';

/** What a message says was expected, by state. */
const EXPECTED: Record<Exclude<Expected, 'after'>, string> = {
  value: 'a value',
  'value or ]': 'a value or "]"',
  name: 'a property name in double quotes',
  'name or }': 'a property name in double quotes or "}"',
  ':': '":"',
};

/** The end of the string starting at `offset` (its opening quote), or what is wrong in it. */
function scanString(text: string, offset: number): number | { offset: number; problem: string } {
  let i = offset + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') return i + 1;
    if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined) break;
      if (next === 'u') {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
          return { offset: i, problem: '"\\u" needs four hexadecimal digits (\\u00e9)' };
        i += 6;
        continue;
      }
      if (!ESCAPES.has(next)) return { offset: i, problem: `"\\${next}" is not a JSON escape (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)` };
      i += 2;
      continue;
    }
    if (c < ' ')
      return { offset: i, problem: c === '\n' ? 'a line break inside a string (write it \\n)' : `${shown(text, i)} inside a string` };
    i++;
  }
  return { offset: text.length, problem: 'the file ends inside a string' };
}

/** The character at `offset` where `wanted` was expected; a comma before a closing bracket said as such. */
function unexpected(text: string, offset: number, wanted: string): { offset: number; problem: string } {
  const c = text[offset];
  if (offset === 0 && c === '\uFEFF')
    return { offset, problem: 'the file starts with a byte order mark (U+FEFF): save it as UTF-8 without one' };
  if ((c === '}' || c === ']') && text.slice(0, offset).trimEnd().endsWith(','))
    return { offset, problem: `"${c}" after a comma, which JSON does not allow (remove the comma)` };
  return { offset, problem: `${shown(text, offset)} where ${wanted} was expected` };
}

/**
 * The offset of the first syntax error of `text` and what it is; `undefined` when there is none.
 * An explicit stack rather than recursion: a hostile file may nest a million brackets.
 */
function firstSyntaxError(text: string): { offset: number; problem: string } | undefined {
  const open: Array<'}' | ']'> = [];
  let expected: Expected = 'value';
  let i = 0;
  for (;;) {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
    if (i >= text.length) {
      if (expected === 'after' && open.length === 0) return undefined;
      if (text.trim() === '') return { offset: i, problem: 'the file is empty' };
      const wanted = expected === 'after' ? `"," or "${open.at(-1)!}"` : EXPECTED[expected];
      return { offset: i, problem: `the file ends where ${wanted} was expected` };
    }
    const c = text[i]!;
    if (expected === 'after') {
      const close = open.at(-1);
      if (close === undefined) return { offset: i, problem: `${shown(text, i)} after the end of the document` };
      if (c === ',') expected = close === '}' ? 'name' : 'value';
      else if (c === close) open.pop();
      else return { offset: i, problem: `${shown(text, i)} where "," or "${close}" was expected` };
      i++;
      continue;
    }
    if (expected === ':') {
      if (c !== ':') return { offset: i, problem: `${shown(text, i)} where ":" was expected` };
      expected = 'value';
      i++;
      continue;
    }
    if ((expected === 'name or }' && c === '}') || (expected === 'value or ]' && c === ']')) {
      open.pop();
      expected = 'after';
      i++;
      continue;
    }
    if (expected === 'name' || expected === 'name or }') {
      if (c !== '"') return unexpected(text, i, EXPECTED[expected]);
      const end = scanString(text, i);
      if (typeof end !== 'number') return end;
      expected = ':';
      i = end;
      continue;
    }
    // A value.
    const wanted = EXPECTED[expected];
    expected = 'after';
    if (c === '{' || c === '[') {
      open.push(c === '{' ? '}' : ']');
      expected = c === '{' ? 'name or }' : 'value or ]';
      i++;
    } else if (c === '"') {
      const end = scanString(text, i);
      if (typeof end !== 'number') return end;
      i = end;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      NUMBER_LIKE.lastIndex = i;
      const number = NUMBER.exec(text)?.[0] ?? '';
      const written = NUMBER_LIKE.exec(text)?.[0] ?? c;
      if (number !== written) return { offset: i, problem: `${JSON.stringify(written.slice(0, 40))} is not a JSON number` };
      i += number.length;
    } else {
      const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i));
      if (literal === undefined) return unexpected(text, i, wanted);
      i += literal.length;
    }
  }
}
