/**
 * Small lexical helpers shared by the data types: XML Schema whitespace facets and code-point
 * string order.
 *
 * @module
 */

const EDGE_WS = /^[\t\n\r ]+|[\t\n\r ]+$/g;
const INNER_WS = /[\t\n\r ]+/g;

/**
 * XML Schema `whiteSpace="collapse"`: runs of XML white space become one space, leading and
 * trailing white space is removed. Only #x20, #x9, #xA, #xD count (not `String.prototype.trim`'s
 * wider set).
 */
export function collapse(s: string): string {
  // Fast path: most values have no white space at all.
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      return s.replace(INNER_WS, ' ').replace(EDGE_WS, '');
    }
  }
  return s;
}

/** Removes leading and trailing XML white space (#x20, #x9, #xA, #xD) only. */
export function trimXmlSpace(s: string): string {
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(s.length - 1);
  if (!isXmlSpace(first) && !isXmlSpace(last)) return s;
  return s.replace(EDGE_WS, '');
}

/** Whether a UTF-16 code unit is XML white space. */
export function isXmlSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/**
 * Orders two strings by Unicode code point (what XML Schema and XPath use), not by UTF-16 code
 * unit as JavaScript's `<` does: the two differ only when a supplementary character (surrogate
 * pair) meets a BMP character at or above U+E000.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // Move surrogates (D800–DFFF) above E000–FFFF so the order is the code-point order.
      if (x >= 0xd800 && y >= 0xd800) {
        x += x < 0xe000 ? 0x2000 : -0x800;
        y += y < 0xe000 ? 0x2000 : -0x800;
      }
      return x < y ? -1 : 1;
    }
  }
  return a.length - b.length < 0 ? -1 : a.length === b.length ? 0 : 1;
}
