/**
 * An estimate of the heap a value holds, for the token cache's byte bound (`cacheMaxBytes`): what
 * V8 (64-bit, no pointer compression, as Node ships) allocates for strings, arrays, plain objects
 * and maps, property names excepted (they are shared). Within one estimate, an object and a string
 * value are counted once (equal strings are taken for one: a claim's value is usually the same
 * string wherever the token's data holds it). Calibrated against the heap measured with a forced
 * collection (test/token/cache-memory.test.ts).
 *
 * @module
 */

/** Words of 8 bytes. */
const WORD = 8;

/** A character past Latin-1: V8 then keeps the string two bytes a character. */
const TWO_BYTE = /[\u0100-\uffff]/;

const roundUp = (bytes: number): number => Math.ceil(bytes / WORD) * WORD;

/** Estimated heap bytes of `value` and everything it holds (each object once). */
export function heapBytes(value: unknown, seen: Set<unknown> = new Set()): number {
  switch (typeof value) {
    case 'string':
      if (seen.has(value)) return 0;
      seen.add(value);
      // SeqOneByteString / SeqTwoByteString: a 16-byte header, then the characters.
      return roundUp(16 + (TWO_BYTE.test(value) ? 2 * value.length : value.length));
    case 'number':
      // Small integers live in the slot that holds them; other numbers are HeapNumbers.
      return Number.isInteger(value) && Math.abs(value) < 2 ** 30 ? 0 : 16;
    case 'bigint':
      return 24;
    case 'object':
      return value === null || seen.has(value) ? 0 : objectBytes(value, seen);
    default:
      return 0;
  }
}

function objectBytes(value: object, seen: Set<unknown>): number {
  seen.add(value);
  if (Array.isArray(value)) {
    // JSArray (32) and its backing store (16 + a word per element).
    let bytes = 32 + 16 + WORD * value.length;
    for (const item of value) bytes += heapBytes(item, seen);
    return bytes;
  }
  if (value instanceof Map) {
    // JSMap (32) and its OrderedHashMap: three words per entry, a bucket word per two, a header.
    let bytes = 32 + 40 + Math.ceil(3.5 * WORD * Math.max(value.size, 2));
    for (const [key, item] of value) bytes += heapBytes(key, seen) + heapBytes(item, seen);
    return bytes;
  }
  if (value instanceof Set) {
    let bytes = 32 + 40 + Math.ceil(2.5 * WORD * Math.max(value.size, 2));
    for (const item of value) bytes += heapBytes(item, seen);
    return bytes;
  }
  if (ArrayBuffer.isView(value)) return 64 + roundUp(value.byteLength);
  // A plain object: its header (24) and a word per property, in the object.
  const keys = Object.keys(value);
  let bytes = 24 + WORD * keys.length;
  for (const key of keys) bytes += heapBytes((value as Record<string, unknown>)[key], seen);
  return bytes;
}
