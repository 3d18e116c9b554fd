/**
 * The syntax of XML Schema / XPath regular expressions (XML Schema Part 2 Appendix F, as XQuery
 * 1.0 F&O 7.6.1 extends them with `^` and `$` anchors and reluctant quantifiers): a parser to a
 * syntax tree, which `regex-automaton.ts` compiles and matches.
 *
 * Every character class (a literal, `.`, `\s \i \c \w \d` in their XML Schema meaning, not
 * JavaScript's, `\p{..}` categories, `\p{IsBlock}` blocks, `[...]` with negation and the
 * subtraction `[a-z-[aeiou]]`) stands for one code point and is given as the source of a
 * JavaScript class for the `v` (unicode sets) flag, `[[a-z]--[aeiou]]`, every literal character
 * as a `\u{…}` escape: a class alone has nothing to backtrack, so the automaton may ask a
 * `RegExp` of it whether a code point belongs. Back-references and flags are not supported (XML
 * Schema has none, XACML gives no way to pass flags); a reluctant quantifier parses as the greedy
 * one (the same language: only whether the pattern matches counts).
 *
 * @module
 */

/** Thrown for a pattern that is not a valid XML Schema regular expression. */
export class XsRegexError extends Error {
  override readonly name = 'XsRegexError';
}

/** XML 1.0 (5th ed.) NameStartChar, as a `v`-mode class body. */
const NAME_START =
  ':A-Z_a-z\\u{C0}-\\u{D6}\\u{D8}-\\u{F6}\\u{F8}-\\u{2FF}\\u{370}-\\u{37D}\\u{37F}-\\u{1FFF}\\u{200C}-\\u{200D}' +
  '\\u{2070}-\\u{218F}\\u{2C00}-\\u{2FEF}\\u{3001}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFFD}\\u{10000}-\\u{EFFFF}';
/** XML 1.0 (5th ed.) NameChar. */
const NAME_CHAR = `${NAME_START}\\-.0-9\\u{B7}\\u{300}-\\u{36F}\\u{203F}-\\u{2040}`;

/** Multi-character escapes → `v`-mode class (usable inside and outside a class). */
const MULTI: Readonly<Record<string, string>> = {
  s: '[\\u{20}\\t\\n\\r]',
  S: '[^\\u{20}\\t\\n\\r]',
  i: `[${NAME_START}]`,
  I: `[^${NAME_START}]`,
  c: `[${NAME_CHAR}]`,
  C: `[^${NAME_CHAR}]`,
  d: '\\p{Nd}',
  D: '\\P{Nd}',
  w: '[^\\p{P}\\p{Z}\\p{C}]',
  W: '[\\p{P}\\p{Z}\\p{C}]',
};

/** Single-character escapes → the character. */
const SINGLE: Readonly<Record<string, number>> = {
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  '\\': 0x5c,
  '|': 0x7c,
  '.': 0x2e,
  '?': 0x3f,
  '*': 0x2a,
  '+': 0x2b,
  '(': 0x28,
  ')': 0x29,
  '{': 0x7b,
  '}': 0x7d,
  '-': 0x2d,
  '[': 0x5b,
  ']': 0x5d,
  '^': 0x5e,
  $: 0x24,
};

const CATEGORIES = new Set(
  'L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po Z Zs Zl Zp S Sm Sc Sk So C Cc Cf Co Cn'.split(' '),
);

/** Unicode blocks for `\p{IsName}` (the common ones; an unknown block is an error). */
const BLOCKS: Readonly<Record<string, [number, number]>> = {
  BasicLatin: [0x0000, 0x007f],
  'Latin-1Supplement': [0x0080, 0x00ff],
  'LatinExtended-A': [0x0100, 0x017f],
  'LatinExtended-B': [0x0180, 0x024f],
  IPAExtensions: [0x0250, 0x02af],
  SpacingModifierLetters: [0x02b0, 0x02ff],
  CombiningDiacriticalMarks: [0x0300, 0x036f],
  Greek: [0x0370, 0x03ff],
  GreekandCoptic: [0x0370, 0x03ff],
  Cyrillic: [0x0400, 0x04ff],
  Armenian: [0x0530, 0x058f],
  Hebrew: [0x0590, 0x05ff],
  Arabic: [0x0600, 0x06ff],
  Devanagari: [0x0900, 0x097f],
  Thai: [0x0e00, 0x0e7f],
  LatinExtendedAdditional: [0x1e00, 0x1eff],
  GreekExtended: [0x1f00, 0x1fff],
  GeneralPunctuation: [0x2000, 0x206f],
  SuperscriptsandSubscripts: [0x2070, 0x209f],
  CurrencySymbols: [0x20a0, 0x20cf],
  LetterlikeSymbols: [0x2100, 0x214f],
  NumberForms: [0x2150, 0x218f],
  Arrows: [0x2190, 0x21ff],
  MathematicalOperators: [0x2200, 0x22ff],
  BoxDrawing: [0x2500, 0x257f],
  GeometricShapes: [0x25a0, 0x25ff],
  MiscellaneousSymbols: [0x2600, 0x26ff],
  CJKSymbolsandPunctuation: [0x3000, 0x303f],
  Hiragana: [0x3040, 0x309f],
  Katakana: [0x30a0, 0x30ff],
  CJKUnifiedIdeographs: [0x4e00, 0x9fff],
  HangulSyllables: [0xac00, 0xd7af],
  PrivateUse: [0xe000, 0xf8ff],
  AlphabeticPresentationForms: [0xfb00, 0xfb4f],
  HalfwidthandFullwidthForms: [0xff00, 0xffef],
  Specials: [0xfff0, 0xffff],
};

function esc(cp: number): string {
  const c = String.fromCodePoint(cp);
  return /[A-Za-z0-9]/.test(c) ? c : `\\u{${cp.toString(16)}}`;
}

/** The syntax tree of a pattern. */
export type XsRegexNode =
  /** One code point of a class: `source` is a `v`-mode class (or `\p{..}`), `literal` its only code point when it has one. */
  | { readonly kind: 'class'; readonly source: string; readonly literal?: number }
  | { readonly kind: 'seq'; readonly items: readonly XsRegexNode[] }
  | { readonly kind: 'alt'; readonly items: readonly XsRegexNode[] }
  /** `max` is `Infinity` for an unbounded quantifier. */
  | { readonly kind: 'repeat'; readonly item: XsRegexNode; readonly min: number; readonly max: number }
  | { readonly kind: 'start' }
  | { readonly kind: 'end' };

const START: XsRegexNode = { kind: 'start' };
const END: XsRegexNode = { kind: 'end' };
const ANY: XsRegexNode = { kind: 'class', source: '[^\\n\\r]' };

function literal(cp: number): XsRegexNode {
  return { kind: 'class', source: `[${esc(cp)}]`, literal: cp };
}

/** A recursive-descent parser over the pattern's code points. */
class Parser {
  private readonly cps: number[];
  private pos = 0;

  constructor(private readonly pattern: string) {
    this.cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  }

  parse(): XsRegexNode {
    const out = this.regExp();
    if (this.pos < this.cps.length) this.fail(`unexpected ${this.charAt(this.pos)}`);
    return out;
  }

  private fail(why: string): never {
    throw new XsRegexError(`invalid regular expression ${JSON.stringify(this.pattern)}: ${why}`);
  }

  private charAt(i: number): string {
    const cp = this.cps[i];
    return cp === undefined ? 'end' : JSON.stringify(String.fromCodePoint(cp));
  }

  private peek(): number | undefined {
    return this.cps[this.pos];
  }

  private regExp(): XsRegexNode {
    const items = [this.branch()];
    while (this.peek() === 0x7c /* | */) {
      this.pos++;
      items.push(this.branch());
    }
    return items.length === 1 ? items[0]! : { kind: 'alt', items };
  }

  private branch(): XsRegexNode {
    const items: XsRegexNode[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === 0x7c || c === 0x29 /* ) */) return items.length === 1 ? items[0]! : { kind: 'seq', items };
      items.push(this.piece());
    }
  }

  private piece(): XsRegexNode {
    const atom = this.atom();
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === 0x3f /* ? */) [min, max] = [0, 1];
    else if (c === 0x2a /* * */) [min, max] = [0, Infinity];
    else if (c === 0x2b /* + */) [min, max] = [1, Infinity];
    else if (c === 0x7b /* { */) [min, max] = this.quantity();
    else return atom;
    if (c !== 0x7b) this.pos++;
    if (atom.kind === 'start' || atom.kind === 'end') this.fail('quantified anchor');
    if (this.peek() === 0x3f) this.pos++; // reluctant (XPath 2.0): the same language
    return { kind: 'repeat', item: atom, min, max };
  }

  private quantity(): [number, number] {
    const start = this.pos;
    const end = this.cps.indexOf(0x7d, start);
    if (end < 0) this.fail('unterminated quantifier');
    const body = String.fromCodePoint(...this.cps.slice(start + 1, end));
    const m = /^(\d+)(,(\d*))?$/.exec(body);
    if (!m) this.fail(`bad quantifier {${body}}`);
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (max < min) this.fail(`bad quantifier {${body}}`);
    this.pos = end + 1;
    return [min, max];
  }

  private atom(): XsRegexNode {
    const c = this.cps[this.pos++]!;
    switch (c) {
      case 0x28 /* ( */: {
        const inner = this.regExp();
        if (this.cps[this.pos++] !== 0x29) this.fail('unclosed group');
        return inner;
      }
      case 0x5b /* [ */:
        return { kind: 'class', source: this.classExpr() };
      case 0x2e /* . */:
        return ANY;
      case 0x5e /* ^ */:
        return START;
      case 0x24 /* $ */:
        return END;
      case 0x5c /* \ */: {
        const single = this.singleEscape();
        return single === undefined ? { kind: 'class', source: this.escape() } : literal(single);
      }
      case 0x3f:
      case 0x2a:
      case 0x2b:
      case 0x7b:
      case 0x7d:
      case 0x29:
      case 0x5d:
        return this.fail(`unexpected ${String.fromCodePoint(c)}`);
      default:
        return literal(c);
    }
  }

  /** After a backslash: the code point of a single-character escape (consumed), else `undefined`. */
  private singleEscape(): number | undefined {
    const c = this.cps[this.pos];
    const single = c === undefined ? undefined : SINGLE[String.fromCodePoint(c)];
    if (single !== undefined) this.pos++;
    return single;
  }

  /** After a backslash: a multi-char escape, a category escape or a single-char escape. */
  private escape(): string {
    const c = this.cps[this.pos++];
    if (c === undefined) this.fail('dangling backslash');
    const ch = String.fromCodePoint(c);
    const multi = MULTI[ch];
    if (multi !== undefined) return multi;
    if (ch === 'p' || ch === 'P') return this.category(ch === 'P');
    const single = SINGLE[ch];
    if (single !== undefined) return esc(single);
    if (ch >= '0' && ch <= '9') this.fail('back-references are not supported');
    return this.fail(`unknown escape \\${ch}`);
  }

  private category(negated: boolean): string {
    if (this.cps[this.pos++] !== 0x7b) this.fail('\\p needs {name}');
    const end = this.cps.indexOf(0x7d, this.pos);
    if (end < 0) this.fail('unterminated \\p{');
    const name = String.fromCodePoint(...this.cps.slice(this.pos, end));
    this.pos = end + 1;
    if (CATEGORIES.has(name)) return `\\${negated ? 'P' : 'p'}{${name}}`;
    if (name.startsWith('Is')) {
      const block = BLOCKS[name.slice(2)];
      if (block) return `[${negated ? '^' : ''}${esc(block[0])}-${esc(block[1])}]`;
    }
    return this.fail(`unknown category or block ${name}`);
  }

  /** After `[`: `[^? items (-[subtracted])? ]` → a `v`-mode class. */
  private classExpr(): string {
    let negated = false;
    if (this.peek() === 0x5e) {
      negated = true;
      this.pos++;
    }
    let body = '';
    let sub: string | undefined;
    let first = true;
    for (;;) {
      const c = this.cps[this.pos];
      if (c === undefined) this.fail('unterminated character class');
      if (c === 0x5d /* ] */) {
        if (first) this.fail('empty character class');
        this.pos++;
        break;
      }
      if (c === 0x2d /* - */ && this.cps[this.pos + 1] === 0x5b /* [ */ && !first) {
        this.pos += 2;
        sub = this.classExpr();
        if (this.cps[this.pos++] !== 0x5d) this.fail('subtraction must end the class');
        break;
      }
      first = false;
      if (c === 0x5b) this.fail('unescaped [ in a character class');
      // One item: a single char (maybe a range start) or an escape.
      let lo: number;
      if (c === 0x5c) {
        this.pos++;
        const save = this.pos;
        const ch = String.fromCodePoint(this.cps[this.pos] ?? 0);
        if (MULTI[ch] !== undefined || ch === 'p' || ch === 'P') {
          body += this.escape();
          continue;
        }
        const single = SINGLE[ch];
        if (single === undefined) {
          this.pos = save;
          this.escape(); // throws the right message
        }
        this.pos++;
        lo = single!;
      } else {
        this.pos++;
        lo = c;
      }
      if (this.cps[this.pos] === 0x2d && this.cps[this.pos + 1] !== 0x5d && this.cps[this.pos + 1] !== 0x5b) {
        // a range lo-hi
        this.pos++;
        let hi = this.cps[this.pos++];
        if (hi === undefined) this.fail('unterminated range');
        if (hi === 0x5c) {
          const ch = String.fromCodePoint(this.cps[this.pos++] ?? 0);
          const single = SINGLE[ch];
          if (single === undefined) this.fail(`bad range end \\${ch}`);
          hi = single;
        } else if (hi === 0x5b) {
          this.fail('unescaped [ in a character class');
        }
        if (hi < lo) this.fail('range out of order');
        body += `${esc(lo)}-${esc(hi)}`;
      } else {
        body += esc(lo);
      }
    }
    const cls = `[${negated ? '^' : ''}${body}]`;
    return sub === undefined ? cls : `[${cls}--${sub}]`;
  }
}

/**
 * Parses an XML Schema / XPath regular expression into its syntax tree. Throws
 * {@link XsRegexError} for an invalid pattern, including a class JavaScript cannot build.
 */
export function parseXsRegex(pattern: string): XsRegexNode {
  return new Parser(pattern).parse();
}
