/**
 * RFC 8941/9651 structured-field Lists read with the `structured-headers` parser (what a client's
 * parser accepts, and nothing it refuses), as plain values the tests can compare: a token as
 * `{ token }`, parameters as an object. Inner lists are refused: the rate-limit fields have none.
 */
import { parseList as parseStructuredList, Token, type BareItem as LibraryBareItem } from 'structured-headers';

/** A bare item: integer, decimal, string, token (as `{ token }`) or boolean. */
export type BareItem = number | string | boolean | { token: string };
/** One list member. */
export interface SfItem {
  value: BareItem;
  params: Record<string, BareItem>;
}

function plain(value: LibraryBareItem): BareItem {
  if (value instanceof Token) return { token: value.toString() };
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  throw new SyntaxError(`structured field: unexpected item ${String(value)}`);
}

/** The members of a List; a SyntaxError for anything a strict parser refuses. */
export function parseList(text: string): SfItem[] {
  let list;
  try {
    list = parseStructuredList(text);
  } catch (err) {
    throw new SyntaxError(`structured field: ${(err as Error).message} in ${JSON.stringify(text)}`);
  }
  return list.map(([value, params]) => {
    if (Array.isArray(value)) throw new SyntaxError(`structured field: an inner list in ${JSON.stringify(text)}`);
    return { value: plain(value), params: Object.fromEntries([...params].map(([key, item]) => [key, plain(item)])) };
  });
}
