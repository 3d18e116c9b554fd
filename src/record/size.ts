/**
 * An estimate of the memory a record holds, for the byte budget of the memory store.
 *
 * @module
 */

// Rough V8 costs on 64-bit: a string's header, an object's header, one property or array slot.
const STRING = 16;
const OBJECT = 32;
const SLOT = 8;
// Deeper than a record built by recordTransaction ever is: counted as one opaque kilobyte.
const MAX_DEPTH = 24;

/** Sizes of sections many records share (outcomes, a cached token's sections), measured once. */
const sharedSizes = new WeakMap<object, number>();

/**
 * Measures a frozen section that many records will hold, once: {@link estimateSize} then takes its
 * size from here instead of walking it for every record.
 */
export function rememberSize(section: object): void {
  if (Object.isFrozen(section)) sharedSizes.set(section, estimateSize(section, 1));
}

/**
 * Estimated bytes held by a JSON-like value: one byte per string character (two when it is not
 * Latin-1 would be exact; the estimate counts every character as one byte and adds per-string,
 * per-object and per-slot overheads). A section shared by many records (a frozen outcome, sender
 * or claims set) is counted in full for each: the estimate errs on the side of the budget.
 */
export function estimateSize(value: unknown, depth = 0): number {
  if (typeof value === 'string') return STRING + value.length;
  if (value === null || typeof value !== 'object') return SLOT;
  if (depth > MAX_DEPTH) return 1024;
  // A record's sections (depth 1) may be shared ones, already measured.
  if (depth === 1) {
    const known = sharedSizes.get(value);
    if (known !== undefined) return known;
  }
  let size = OBJECT;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) size += SLOT + estimateSize(value[i], depth + 1);
  } else {
    // for-in rather than Object.keys: no array per object (records are plain objects, no inherited keys).
    for (const key in value) {
      size += SLOT + STRING + key.length + estimateSize((value as Record<string, unknown>)[key], depth + 1);
    }
  }
  return size;
}
