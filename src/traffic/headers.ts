/**
 * The rate-limit header fields of an answer, from its decision (a pure function):
 * draft-ietf-httpapi-ratelimit-headers-10 (`RateLimit-Policy: "per-client";q=100;w=60` and
 * `RateLimit: "per-client";r=5;t=30`, one list member per `requests` policy, structured fields)
 * and the legacy `X-RateLimit-Limit`, `-Remaining`, `-Reset` (seconds from now) of the policy
 * nearest its limit. In-flight policies have no field of their own in either.
 *
 * @module
 */
import type { PolicyStanding, TrafficDecision } from './types.js';

/** Which fields to send: the `headers` setting. */
export type TrafficHeaderSet = 'both' | 'ietf' | 'legacy' | 'none';

/** A structured-field string (RFC 8941 section 3.3.3). */
function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The standing whose numbers the legacy fields show: the least remaining, then the longest wait. */
function nearest(standings: readonly PolicyStanding[]): PolicyStanding {
  let best = standings[0]!;
  for (const s of standings) {
    if (s.remaining < best.remaining || (s.remaining === best.remaining && s.resetSeconds > best.resetSeconds)) best = s;
  }
  return best;
}

/**
 * The header fields for `decision` under `set`, as `[name, value]` pairs: none when no `requests`
 * policy covered the request, or when nothing was counted (the shared store unreachable, not under
 * `localShare`).
 */
export function trafficHeaders(decision: TrafficDecision, set: TrafficHeaderSet): Array<[string, string]> {
  if (set === 'none' || (decision.storeUnavailable && decision.fallback !== 'localShare')) return [];
  const standings = decision.standings.filter((s) => s.metric === 'requests');
  if (standings.length === 0) return [];
  const fields: Array<[string, string]> = [];
  if (set === 'both' || set === 'ietf') {
    fields.push(['RateLimit-Policy', standings.map((s) => `${sfString(s.policy)};q=${s.limit};w=${s.windowSeconds ?? 0}`).join(', ')]);
    fields.push(['RateLimit', standings.map((s) => `${sfString(s.policy)};r=${s.remaining};t=${s.resetSeconds}`).join(', ')]);
  }
  if (set === 'both' || set === 'legacy') {
    const shown = nearest(standings);
    fields.push(['X-RateLimit-Limit', String(shown.limit)]);
    fields.push(['X-RateLimit-Remaining', String(shown.remaining)]);
    fields.push(['X-RateLimit-Reset', String(shown.resetSeconds)]);
  }
  return fields;
}
