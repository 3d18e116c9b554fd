/**
 * The configuration console's edits of traffic control, as pure functions of the document: the
 * top-level settings replaced, a policy added, changed or removed (at the top or in one API), and
 * what changed between two documents, field by field, for the audit log. Whether the result is a
 * valid configuration is the save's check (the file's own), not theirs.
 *
 * @module
 */
import type { ApiConfig, GatewayConfig, TrafficControlConfig } from '../config/types.js';
import type { TrafficPolicyDefinition as TrafficPolicyConfig } from '../traffic/types.js';

/** The top-level settings an edit of the settings replaces (the policies are edited one by one). */
export const TRAFFIC_SETTINGS = ['maxConcurrentRequests', 'store', 'onStoreUnavailable', 'headers'] as const;

/** The policies of an edit: the top-level list (`api` undefined) or one API's. */
export interface PolicyPlace {
  /** The API, for its own list; `undefined`: the top-level list (every API). */
  readonly api?: ApiConfig | undefined;
}

/**
 * Replaces the top-level settings with `settings` (a key absent, `null` or `undefined`: the setting
 * removed, its default applies), keeping the policies. Keys other than the settings are kept in the
 * document as given, for the save's check to name.
 */
export function withTrafficSettings(document: GatewayConfig, settings: Record<string, unknown>): void {
  const section: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) if (value !== null && value !== undefined) section[key] = value;
  const policies = document.trafficControl?.policies;
  if (policies !== undefined) section['policies'] = policies;
  if (Object.keys(section).length === 0) delete document.trafficControl;
  else document.trafficControl = section as TrafficControlConfig;
}

function listOf(document: GatewayConfig, place: PolicyPlace): TrafficPolicyConfig[] {
  return (place.api === undefined ? document.trafficControl?.policies : place.api.trafficControl?.policies) ?? [];
}

function setList(document: GatewayConfig, place: PolicyPlace, policies: TrafficPolicyConfig[]): void {
  if (place.api !== undefined) {
    // An API's section holds only its policies: no policy, no section.
    if (policies.length === 0) delete place.api.trafficControl;
    else place.api.trafficControl = { policies };
    return;
  }
  const section: TrafficControlConfig = { ...(document.trafficControl ?? {}) };
  if (policies.length === 0) delete section.policies;
  else section.policies = policies;
  if (Object.keys(section).length === 0) delete document.trafficControl;
  else document.trafficControl = section;
}

/**
 * Puts `policy` in the list in place of the policy named `name` (a rename when its name differs),
 * or at the end when there is none of that name. Returns whether it was added.
 */
export function withTrafficPolicy(document: GatewayConfig, place: PolicyPlace, name: string, policy: TrafficPolicyConfig): boolean {
  const policies = [...listOf(document, place)];
  const at = policies.findIndex((p) => p?.name === name);
  if (at === -1) policies.push(policy);
  else policies[at] = policy;
  setList(document, place, policies);
  return at === -1;
}

/** Removes the policy named `name`. Returns whether there was one. */
export function withoutTrafficPolicy(document: GatewayConfig, place: PolicyPlace, name: string): boolean {
  const policies = listOf(document, place);
  const kept = policies.filter((p) => p?.name !== name);
  if (kept.length === policies.length) return false;
  setList(document, place, kept);
  return true;
}

/** A value as the audit log shows it: JSON, cut to 60 characters; `(none)` when absent. */
function shown(value: unknown): string {
  if (value === undefined) return '(none)';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** `key a → b` for each key whose value differs between two objects. */
function fieldChanges(before: Record<string, unknown>, after: Record<string, unknown>, keys?: readonly string[]): string[] {
  const all = keys ?? [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return all
    .filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]))
    .map((key) => `${key} ${shown(before[key])} → ${shown(after[key])}`);
}

function policyChanges(before: readonly TrafficPolicyConfig[], after: readonly TrafficPolicyConfig[], label: string): string[] {
  const parts: string[] = [];
  const old = new Map(before.map((p) => [p.name, p]));
  const now = new Set(after.map((p) => p.name));
  for (const policy of after) {
    const was = old.get(policy.name);
    if (was === undefined) parts.push(`${label} ${policy.name} added`);
    else {
      const fields = fieldChanges({ ...was }, { ...policy });
      if (fields.length > 0) parts.push(`${label} ${policy.name} changed (${fields.join(', ')})`);
    }
  }
  for (const policy of before) if (!now.has(policy.name)) parts.push(`${label} ${policy.name} removed`);
  return parts;
}

/**
 * What changed in traffic control between two valid documents: the top-level settings and each
 * policy (added, removed, or changed with each field's old and new value), at the top and in the
 * APIs both documents have. `apiKey` names an API.
 */
export function trafficChanges(before: GatewayConfig, after: GatewayConfig, apiKey: (api: ApiConfig) => string): string[] {
  const parts: string[] = [];
  const settings = fieldChanges({ ...(before.trafficControl ?? {}) }, { ...(after.trafficControl ?? {}) }, TRAFFIC_SETTINGS);
  if (settings.length > 0) parts.push(`traffic control settings changed (${settings.join(', ')})`);
  parts.push(...policyChanges(before.trafficControl?.policies ?? [], after.trafficControl?.policies ?? [], 'traffic policy'));
  const old = new Map((before.apis ?? []).map((api) => [apiKey(api), api]));
  for (const api of after.apis ?? []) {
    const was = old.get(apiKey(api));
    if (was === undefined) continue;
    parts.push(
      ...policyChanges(was.trafficControl?.policies ?? [], api.trafficControl?.policies ?? [], `API ${apiKey(api)} traffic policy`),
    );
  }
  return parts;
}
