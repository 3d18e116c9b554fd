/**
 * Large job inputs and answers cross between the gateway's thread and a worker as bytes that are
 * moved, not copied: a structured clone of megabytes of records is work on the thread that serves
 * the APIs (77 to 169 ms for 2,000 recorded XACML requests of 1.1 KB, measured), moving an
 * `ArrayBuffer` is none. A value's own `Uint8Array`s, at its top level or one level down, move.
 *
 * @module
 */

/** The buffers of `value`'s `Uint8Array`s (top level, and one level down), to move with it. */
export function transferablesOf(value: unknown): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  const add = (item: unknown): void => {
    // A Buffer may be a view of Node's shared pool: only a view of a whole buffer of its own moves.
    if (
      item instanceof Uint8Array &&
      item.buffer instanceof ArrayBuffer &&
      item.byteOffset === 0 &&
      item.byteLength === item.buffer.byteLength &&
      !out.includes(item.buffer)
    )
      out.push(item.buffer);
  };
  if (value === null || typeof value !== 'object') return out;
  for (const item of Object.values(value)) {
    add(item);
    if (item !== null && typeof item === 'object' && !(item instanceof Uint8Array)) for (const inner of Object.values(item)) add(inner);
  }
  return out;
}

/** `text` as UTF-8 bytes in a buffer of their own (movable). */
export function encodeText(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
