/**
 * Flat copies of strings. V8 keeps a slice (and a concatenation holding one) as a view into its
 * parent: a short part of a 15 KB URL kept in a record would keep the whole 15 KB alive in the
 * store, outside of any accounting.
 *
 * @module
 */

// eslint-disable-next-line no-control-regex
const WIDE = /[^\u0000-\u00ff]/;

/**
 * A flat copy of `value` that holds no reference to the string it was cut from (lossless). Latin-1
 * text goes through `latin1` so that V8 keeps the copy at one byte per character, as the original.
 */
export function detach(value: string): string {
  const encoding = WIDE.test(value) ? 'utf16le' : 'latin1';
  return Buffer.from(value, encoding).toString(encoding);
}
