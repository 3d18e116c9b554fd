/**
 * The record's traffic section: what traffic control decided on the exchange, from the engine's
 * decision (the policy that refused, its group, every policy that covered the request).
 *
 * @module
 */
import type { TrafficDecision } from '../traffic/types.js';
import { REDACTED } from './redact.js';
import { truncate, type RecordLimits } from './bounds.js';
import type { TransactionTraffic, TransactionTrafficPolicy } from './types.js';

/**
 * A group's label as the record keeps it: the engine cuts each value, this bounds the whole, and
 * a label that holds the client's token (a policy grouped by a header that carries it) is
 * replaced.
 */
function groupOf(group: string, secret: string | undefined, limits: RecordLimits): string {
  return secret !== undefined && group.includes(secret) ? REDACTED : truncate(group, limits.maxValueLength);
}

/** The traffic section of a decision (frozen); `undefined` when no policy covered the request. */
export function trafficSection(
  decision: TrafficDecision,
  secret: string | undefined,
  limits: RecordLimits,
): TransactionTraffic | undefined {
  const standings = decision.standings;
  if (standings.length === 0) return undefined;
  const policies: TransactionTrafficPolicy[] = [];
  let warnings: string[] | undefined;
  for (let i = 0; i < standings.length; i++) {
    const s = standings[i]!;
    const policy: TransactionTrafficPolicy = {
      policy: s.policy,
      mode: s.mode,
      metric: s.metric,
      group: groupOf(s.group, secret, limits),
      limit: s.limit,
      remaining: s.remaining,
      exceeded: s.exceeded,
    };
    if (s.windowSeconds !== undefined) policy.windowSeconds = s.windowSeconds;
    policies.push(Object.freeze(policy));
    if (s.exceeded && s.mode === 'warningOnly') (warnings ??= []).push(s.policy);
  }
  const section: TransactionTraffic = { result: decision.result, policies: Object.freeze(policies) as TransactionTrafficPolicy[] };
  const by = decision.limitedBy;
  if (decision.result === 'limited' && by !== undefined) {
    section.policy = by.policy;
    section.group = groupOf(by.group, secret, limits);
  }
  if (decision.storeUnavailable && decision.fallback !== undefined) section.storeUnavailable = decision.fallback;
  if (warnings !== undefined) section.warnings = Object.freeze(warnings) as string[];
  return Object.freeze(section);
}
