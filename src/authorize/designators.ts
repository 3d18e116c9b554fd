/**
 * The attribute designators of a policy that name an `org:gateway:` attribute the gateway never
 * puts in its requests (a typo such as `...:subject:token:clientID`): such a designator finds
 * nothing, so the rule silently never applies. Found at configuration load, as warnings.
 *
 * @module
 */
import { editDistance } from '../options.js';
import { XacmlAttributes } from './attributes.js';

/** One designator naming an attribute the gateway never fills. */
export interface UnknownDesignator {
  /** Its `AttributeId`. */
  readonly attributeId: string;
  /** The known identifier (or prefix, ending in `:`) nearest to it. */
  readonly nearest: string;
}

const NAMESPACE = 'org:gateway:';
const ids: readonly string[] = Object.values(XacmlAttributes).filter((id) => id.startsWith(NAMESPACE));
const exact = new Set(ids.filter((id) => !id.endsWith(':')));
const prefixes = ids.filter((id) => id.endsWith(':'));

const DESIGNATOR =
  /<(?:[\w.-]+:)?(?:Subject|Resource|Action|Environment)AttributeDesignator\b[^>]*?\bAttributeId\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** Whether the gateway's request builder can produce `id`. */
export function isKnownGatewayAttribute(id: string): boolean {
  return exact.has(id) || prefixes.some((prefix) => id.length > prefix.length && id.startsWith(prefix));
}

/** The known identifier, or prefix, nearest to `id`. */
export function nearestGatewayAttribute(id: string): string {
  let best = ids[0]!;
  let bestDistance = Infinity;
  for (const known of ids) {
    // A prefix is compared with as much of the id as it covers.
    const d =
      known.endsWith(':') && id.length > known.length ? editDistance(id.slice(0, known.length), known, 0.5) : editDistance(id, known, 0.5);
    if (d < bestDistance) [best, bestDistance] = [known, d];
  }
  return best;
}

/** The designators of a policy document (XML text) in the `org:gateway:` namespace that the gateway never fills. */
export function unknownGatewayDesignators(xml: string): UnknownDesignator[] {
  const found = new Map<string, UnknownDesignator>();
  for (const match of xml.matchAll(DESIGNATOR)) {
    const id = match[1] ?? match[2] ?? '';
    if (!id.startsWith(NAMESPACE) || isKnownGatewayAttribute(id) || found.has(id)) continue;
    found.set(id, { attributeId: id, nearest: nearestGatewayAttribute(id) });
  }
  return [...found.values()];
}
