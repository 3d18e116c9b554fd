/**
 * A JSON document's new value written into its old text with the least change: only the spans of
 * the values that changed are replaced, members removed or added in place, so that a hand-formatted
 * configuration file keeps its indentation, key order, blank lines and everything else outside the
 * fields that changed, byte for byte. New text is indented as the file is.
 *
 * @module
 */
import { isDeepStrictEqual } from 'node:util';

/** A value's span in the text, and its members' or items' spans. */
interface Node {
  start: number;
  end: number;
  members?: Array<{ key: string; keyStart: number; value: Node }>;
  items?: Node[];
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

/** Parses `text` (already known to be valid JSON) into spans. */
function spans(text: string): Node {
  let i = 0;
  const skip = (): void => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const stringEnd = (from: number): number => {
    let j = from + 1;
    while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
    return j + 1;
  };
  const value = (): Node => {
    skip();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const members: NonNullable<Node['members']> = [];
      skip();
      while (text[i] !== '}') {
        skip();
        const keyStart = i;
        i = stringEnd(i);
        const key = JSON.parse(text.slice(keyStart, i)) as string;
        skip();
        i++; // ':'
        members.push({ key, keyStart, value: value() });
        skip();
        if (text[i] === ',') i++;
        skip();
      }
      i++;
      return { start, end: i, members };
    }
    if (c === '[') {
      i++;
      const items: Node[] = [];
      skip();
      while (text[i] !== ']') {
        items.push(value());
        skip();
        if (text[i] === ',') i++;
        skip();
      }
      i++;
      return { start, end: i, items };
    }
    if (c === '"') {
      i = stringEnd(i);
      return { start, end: i };
    }
    while (i < text.length && !/[\s,\]}]/.test(text[i]!)) i++;
    return { start, end: i };
  };
  return value();
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `text` with `value` written as JSON, nested lines indented from `indent` by `unit`. */
function serialize(value: unknown, indent: string, unit: string): string {
  return JSON.stringify(value, null, unit).replace(/\n/g, `\n${indent}`);
}

/** The writer of the edits of one document. */
function editor(text: string, unit: string) {
  const lineIndent = (at: number): string => {
    const lineStart = text.lastIndexOf('\n', at - 1) + 1;
    return /^[ \t]*/.exec(text.slice(lineStart, at))![0];
  };
  const edits: Edit[] = [];
  const patch = (node: Node, before: unknown, after: unknown): void => {
    if (isDeepStrictEqual(before, after)) return;
    if (node.members !== undefined && node.members.length > 0 && isObject(before) && isObject(after)) {
      const members = node.members;
      const kept = members.filter((m) => Object.hasOwn(after, m.key));
      if (kept.length === 0)
        return void edits.push({ start: node.start, end: node.end, text: serialize(after, lineIndent(node.start), unit) });
      members.forEach((m, index) => {
        if (Object.hasOwn(after, m.key)) return patch(m.value, before[m.key], after[m.key]);
        // Removed with the separator before it (or, first, with the one after it).
        const previous = members[index - 1];
        const next = members[index + 1];
        if (previous !== undefined) edits.push({ start: previous.value.end, end: m.value.end, text: '' });
        else if (next !== undefined) edits.push({ start: m.keyStart, end: next.keyStart, text: '' });
      });
      const last = kept[kept.length - 1]!;
      const indent = lineIndent(last.keyStart);
      const added = Object.keys(after).filter((key) => !members.some((m) => m.key === key));
      const insertion = added.map((key) => `,\n${indent}${JSON.stringify(key)}: ${serialize(after[key], indent, unit)}`).join('');
      if (insertion !== '') edits.push({ start: last.value.end, end: last.value.end, text: insertion });
      return;
    }
    if (node.items !== undefined && Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
      node.items.forEach((item, index) => patch(item, before[index], after[index]));
      return;
    }
    edits.push({ start: node.start, end: node.end, text: serialize(after, lineIndent(node.start), unit) });
  };
  return { patch, edits };
}

/**
 * `text` (a JSON document whose value is `before`) changed to hold `after`, touching only what
 * changed. Falls back to `JSON.stringify(after, null, 2)` when the text is not JSON of `before` or
 * the edit would not read back as `after`.
 */
export function editJson(text: string, before: unknown, after: unknown): string {
  const whole = `${JSON.stringify(after, null, 2)}\n`;
  try {
    if (!isDeepStrictEqual(JSON.parse(text), before)) return whole;
    const unit = /\n([ \t]+)\S/.exec(text)?.[1] ?? '  ';
    const { patch, edits } = editor(text, unit);
    patch(spans(text), before, after);
    let out = text;
    for (const edit of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
    return isDeepStrictEqual(JSON.parse(out), after) ? out : whole;
  } catch {
    return whole;
  }
}
