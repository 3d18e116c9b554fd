/**
 * A strict parser of RFC 8941 structured-field Lists (items with parameters; inner lists are
 * refused, the rate-limit fields have none): what a client's parser would accept, and nothing it
 * would refuse.
 */

/** A bare item: integer, decimal, string, token (as `{ token }`) or boolean. */
export type BareItem = number | string | boolean | { token: string };
/** One list member. */
export interface SfItem {
  value: BareItem;
  params: Record<string, BareItem>;
}

class Input {
  pos = 0;
  constructor(readonly text: string) {}
  get done(): boolean {
    return this.pos >= this.text.length;
  }
  peek(): string {
    return this.text[this.pos] ?? '';
  }
  fail(what: string): never {
    throw new SyntaxError(`structured field: ${what} at ${this.pos} in ${JSON.stringify(this.text)}`);
  }
}

function parseKey(input: Input): string {
  if (!/[a-z*]/.test(input.peek())) input.fail('key');
  let key = '';
  while (/[a-z0-9_\-.*]/.test(input.peek()) && !input.done) key += input.text[input.pos++];
  return key;
}

function parseNumber(input: Input): number {
  const match = /^-?\d+(\.\d+)?/.exec(input.text.slice(input.pos));
  if (match === null) input.fail('number');
  const [text, fraction] = [match[0], match[1]];
  const whole = text.replace(/^-/, '').split('.')[0]!;
  if (fraction === undefined ? whole.length > 15 : whole.length > 12 || fraction.length > 4) input.fail('number too long');
  input.pos += text.length;
  return Number(text);
}

function parseString(input: Input): string {
  input.pos++;
  let out = '';
  for (;;) {
    if (input.done) input.fail('unterminated string');
    const c = input.text[input.pos++]!;
    if (c === '\\') {
      const next = input.text[input.pos++];
      if (next !== '"' && next !== '\\') input.fail('bad escape');
      out += next;
    } else if (c === '"') {
      return out;
    } else if (c < ' ' || c > '~') {
      input.fail('character in string');
    } else {
      out += c;
    }
  }
}

function parseBareItem(input: Input): BareItem {
  const c = input.peek();
  if (c === '-' || /\d/.test(c)) return parseNumber(input);
  if (c === '"') return parseString(input);
  if (c === '?') {
    const b = input.text[input.pos + 1];
    if (b !== '0' && b !== '1') input.fail('boolean');
    input.pos += 2;
    return b === '1';
  }
  if (/[A-Za-z*]/.test(c)) {
    let token = '';
    while (!input.done && /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/.test(input.peek())) token += input.text[input.pos++];
    return { token };
  }
  return input.fail('item');
}

function parseParams(input: Input): Record<string, BareItem> {
  const params: Record<string, BareItem> = {};
  while (input.peek() === ';') {
    input.pos++;
    while (input.peek() === ' ') input.pos++;
    const key = parseKey(input);
    let value: BareItem = true;
    if (input.peek() === '=') {
      input.pos++;
      value = parseBareItem(input);
    }
    params[key] = value;
  }
  return params;
}

/** Parses a List field value; throws a `SyntaxError` on anything RFC 8941 refuses. */
export function parseList(text: string): SfItem[] {
  const input = new Input(text);
  const members: SfItem[] = [];
  while (input.peek() === ' ') input.pos++;
  while (!input.done) {
    if (input.peek() === '(') input.fail('inner list');
    members.push({ value: parseBareItem(input), params: parseParams(input) });
    while (input.peek() === ' ' || input.peek() === '\t') input.pos++;
    if (input.done) return members;
    if (input.peek() !== ',') input.fail('comma');
    input.pos++;
    while (input.peek() === ' ' || input.peek() === '\t') input.pos++;
    if (input.done) input.fail('trailing comma');
  }
  return members;
}
