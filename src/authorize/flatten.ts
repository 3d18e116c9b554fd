/**
 * Turns claims (introspection, JWT, UserInfo) into XACML attributes without losing any.
 *
 * @module
 */

/** Nesting deeper than this is kept only as the JSON text of the enclosing value. */
const MAX_DEPTH = 16;

/** An attribute id to its values, in insertion order; several values make a bag. */
export type AttributeBag = Map<string, string[]>;

/** Appends values to an attribute, creating it on first use (values of the same id merge into one bag). */
export function addValues(bag: AttributeBag, attributeId: string, values: readonly string[]): void {
  if (values.length === 0) return;
  const existing = bag.get(attributeId);
  if (existing === undefined) bag.set(attributeId, [...values]);
  else existing.push(...values);
}

/**
 * A claim name as an attribute id segment: `.` becomes `:` (docs/xacml-attributes.md, "Rules for
 * every attribute").
 */
export function claimSegment(name: string): string {
  return name.replaceAll('.', ':');
}

/**
 * Adds one claim to `bag` under `prefix + name`, following the flattening rule:
 *
 * - a string is one value; a number or boolean its JSON text (`42`, `true`); `null` is `null`;
 * - an array contributes each of its items at the same id (so an array of strings is a bag);
 * - an object contributes its compact JSON text at its own id **and** each of its members at
 *   `<id>:<member>` (recursively), so `{"realm_access":{"roles":["a","b"]}}` gives
 *   `…claim:realm_access` = `{"roles":["a","b"]}` and `…claim:realm_access:roles` = bag `a`, `b`;
 * - an array of objects therefore gives one JSON value per object at the claim's id and, for each
 *   member, the bag of that member's values across the objects.
 *
 * Nothing is dropped: an empty array adds no value (an empty bag, the same as an absent attribute),
 * and values nested deeper than 16 levels remain readable in the JSON text of their ancestors.
 */
export function addClaim(bag: AttributeBag, prefix: string, name: string, value: unknown): void {
  addFlattened(bag, prefix + claimSegment(name), value, 0);
}

function addFlattened(bag: AttributeBag, id: string, value: unknown, depth: number): void {
  if (value === undefined) return;
  if (Array.isArray(value)) {
    for (const item of value) addFlattened(bag, id, item, depth);
    return;
  }
  if (value !== null && typeof value === 'object') {
    addValues(bag, id, [JSON.stringify(value)]);
    if (depth >= MAX_DEPTH) return;
    for (const [member, memberValue] of Object.entries(value)) {
      addFlattened(bag, `${id}:${claimSegment(member)}`, memberValue, depth + 1);
    }
    return;
  }
  addValues(bag, id, [typeof value === 'string' ? value : JSON.stringify(value)]);
}
