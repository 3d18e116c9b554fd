/** Shared pieces of the traffic control tests: facts as a request would give them. */
import type { TrafficFacts } from '../../src/traffic/types.js';

/** Facts of a request to `api`, with the given members and request headers (names in any case). */
export function facts(members: Partial<Omit<TrafficFacts, 'header'>> = {}, headers: Record<string, string> = {}): TrafficFacts {
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { api: 'Ente/PetStore/v1', ...members, header: (name) => lower.get(name) };
}
