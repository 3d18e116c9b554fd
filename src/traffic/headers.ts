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
  if (!value.includes('"') && !value.includes('\\')) return `"${value}"`;
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * The header fields for `decision` under `set`, as `[name, value]` pairs: none when no `requests`
 * policy covered the request, or when nothing was counted (the shared store unreachable, not under
 * `localShare`).
 */
export function trafficHeaders(decision: TrafficDecision, set: TrafficHeaderSet): Array<[string, string]> {
  if (set === 'none' || (decision.storeUnavailable && decision.fallback !== 'localShare')) return [];
  let policyField = '';
  let limitField = '';
  let shown: PolicyStanding | undefined;
  for (const s of decision.standings) {
    if (s.metric !== 'requests') continue;
    const name = sfString(s.policy);
    const separator = shown === undefined ? '' : ', ';
    policyField += `${separator}${name};q=${s.limit};w=${s.windowSeconds ?? 0}`;
    limitField += `${separator}${name};r=${s.remaining};t=${s.resetSeconds}`;
    // The legacy fields show the standing nearest its limit: the least remaining, then the longest wait.
    if (shown === undefined || s.remaining < shown.remaining || (s.remaining === shown.remaining && s.resetSeconds > shown.resetSeconds)) {
      shown = s;
    }
  }
  if (shown === undefined) return [];
  const fields: Array<[string, string]> = [];
  if (set === 'both' || set === 'ietf') {
    fields.push(['RateLimit-Policy', policyField]);
    fields.push(['RateLimit', limitField]);
  }
  if (set === 'both' || set === 'legacy') {
    fields.push(['X-RateLimit-Limit', String(shown.limit)]);
    fields.push(['X-RateLimit-Remaining', String(shown.remaining)]);
    fields.push(['X-RateLimit-Reset', String(shown.resetSeconds)]);
  }
  return fields;
}
