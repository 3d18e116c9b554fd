/**
 * The decision text of the 403 detail and of diagnostics.
 *
 * @module
 */
import type { XacmlExplanation } from '../xacml/explain.js';
import type { XacmlDecision } from '../xacml/response.js';

/** The parts of an XACML result the decision text is made of. */
export interface DecisionResult {
  /** The XACML decision. */
  decision: XacmlDecision;
  /** The XACML status: its code URI and, when the PDP gave one, its message. */
  status: {
    /** Status code URI, for example `urn:oasis:names:tc:xacml:1.0:status:ok`. */
    code: string;
    /** Status message, when the PDP gave one. */
    message?: string;
  };
}

const DECISION_NAMES: Readonly<Record<DecisionResult['decision'], string>> = {
  Permit: 'PERMIT',
  Deny: 'DENY',
  NotApplicable: 'NOT_APPLICABLE',
  Indeterminate: 'INDETERMINATE',
};

/**
 * The decision text of a response, one `result-<n> <DECISION> code:<status code>` per result,
 * joined by a space: `result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok`.
 * With `withMessages`, each status message is appended as ` message:<text>` (for diagnostics).
 */
export function decisionText(results: readonly DecisionResult[], withMessages = false): string {
  const only = results.length === 1 ? results[0]! : undefined;
  // The usual single result, without the map and join (this runs for every request).
  if (only !== undefined && !(withMessages && only.status.message))
    return `result-1 ${DECISION_NAMES[only.decision]} code:${only.status.code}`;
  return results
    .map((result, i) => {
      const base = `result-${i + 1} ${DECISION_NAMES[result.decision]} code:${result.status.code}`;
      return withMessages && result.status.message ? `${base} message:${result.status.message}` : base;
    })
    .join(' ');
}

/**
 * One line saying why: `decided by rule "ko" of policy "urn:gateway:policy:petstore"; rule "ok"
 * not applicable: condition false: string-at-least-one-member-of(...)` (for diagnostics).
 */
export function explanationText(explanation: XacmlExplanation): string {
  const parts: string[] = [];
  const by = explanation.decidedBy;
  if (by?.rule !== undefined) parts.push(`decided by rule "${by.rule}"${by.policy === undefined ? '' : ` of policy "${by.policy}"`}`);
  else if (by !== undefined) parts.push(`decided by ${by.path.map((p) => `${p.kind} "${p.id}"`).join(' > ')}`);
  else parts.push('no policy or rule applied');
  for (const step of explanation.steps) {
    const failure = step.failure;
    if (failure === undefined) continue;
    const what = failure.part === 'target' ? 'target did not match' : 'condition false';
    const state = step.decision === 'NotApplicable' ? 'not applicable' : step.decision;
    parts.push(
      `${step.kind.toLowerCase()} "${step.id}" ${state}: ${what}: ${failure.failed.join('; ')}${failure.message === undefined ? '' : ` (${failure.message})`}`,
    );
  }
  return parts.join('; ');
}
