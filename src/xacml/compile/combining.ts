/**
 * The rule- and policy-combining algorithms of XACML 2.0 appendix C, including their
 * Indeterminate rules and the collection of obligations.
 *
 * @module
 */
import { STATUS_PROCESSING_ERROR } from '../constants.js';
import type { EvalContext } from '../eval-context.js';
import {
  DENY,
  DENY_RESULT,
  INDETERMINATE,
  MATCH,
  NA_RESULT,
  NOT_APPLICABLE,
  NO_MATCH,
  PERMIT,
  PERMIT_RESULT,
  indeterminate,
} from '../runtime.js';
import type { DecisionCode, MatchOutcome, Obligation, Result, Status } from '../runtime.js';

/** Something a combining algorithm combines: a rule, a policy or a policy set. */
export interface Combinable {
  /** Full evaluation (target, then body). */
  evaluate(ctx: EvalContext): Result;
  /** Target only (for only-one-applicable). */
  match(ctx: EvalContext): MatchOutcome;
  /** Evaluation once the target is known to match. */
  body(ctx: EvalContext): Result;
  /** A rule's Effect (for the rule algorithms' Indeterminate handling). */
  readonly effect?: DecisionCode;
  /** Id, for messages. */
  readonly id: string;
  /** What an explanation reads (see `explain.ts`); never used by the evaluation itself. */
  readonly info?: ElementInfo;
}

/** One section of a target (Subjects, Resources, Actions, Environments), for explanations. */
export interface TargetSectionInfo {
  /** `Subjects`, `Resources`, `Actions` or `Environments`. */
  readonly section: string;
  /** Its alternatives and matches as text. */
  readonly text: string;
  /** The section's own test. */
  readonly test: (ctx: EvalContext) => MatchOutcome;
}

/** One argument of a condition's top-level `and` (or the whole condition), for explanations. */
export interface ConditionPartInfo {
  /** The expression as text. */
  readonly text: string;
  /** Its evaluation (a boolean; throws Indeterminate). */
  readonly ev: (ctx: EvalContext) => unknown;
}

/** What a compiled rule, policy or policy set is, for explanations (compiled once, read only when explaining). */
export interface ElementInfo {
  readonly kind: 'PolicySet' | 'Policy' | 'Rule';
  /** The target's sections; none for an empty target. */
  readonly target: readonly TargetSectionInfo[];
  /** A rule's condition: the arguments of its top-level `and`, or the whole condition. */
  readonly condition?: readonly ConditionPartInfo[];
  /** A policy's rules or a policy set's children, in document order. */
  readonly children?: readonly Combinable[];
}

/** A combining algorithm. */
export type Combiner = (items: readonly Combinable[], ctx: EvalContext) => Result;

function withObligations(decision: DecisionCode, obligations: Obligation[] | undefined): Result {
  if (!obligations || obligations.length === 0) return decision === PERMIT ? PERMIT_RESULT : DENY_RESULT;
  return { decision, obligations };
}

function collect(into: Obligation[] | undefined, r: Result): Obligation[] | undefined {
  if (!r.obligations || r.obligations.length === 0) return into;
  if (!into) return [...r.obligations];
  into.push(...r.obligations);
  return into;
}

const ruleDenyOverrides: Combiner = (items, ctx) => {
  let potentialDeny: Status | undefined;
  let error: Status | undefined;
  let permit = false;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const r = it.evaluate(ctx);
    switch (r.decision) {
      case DENY:
        return r;
      case PERMIT:
        permit = true;
        break;
      case INDETERMINATE:
        if (it.effect === DENY) potentialDeny ??= r.status;
        else error ??= r.status;
        break;
      default:
    }
  }
  if (potentialDeny) return indeterminate(potentialDeny);
  if (permit) return PERMIT_RESULT;
  if (error) return indeterminate(error);
  return NA_RESULT;
};

const rulePermitOverrides: Combiner = (items, ctx) => {
  let potentialPermit: Status | undefined;
  let error: Status | undefined;
  let deny = false;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const r = it.evaluate(ctx);
    switch (r.decision) {
      case PERMIT:
        return r;
      case DENY:
        deny = true;
        break;
      case INDETERMINATE:
        if (it.effect === PERMIT) potentialPermit ??= r.status;
        else error ??= r.status;
        break;
      default:
    }
  }
  if (potentialPermit) return indeterminate(potentialPermit);
  if (deny) return DENY_RESULT;
  if (error) return indeterminate(error);
  return NA_RESULT;
};

const firstApplicable: Combiner = (items, ctx) => {
  for (let i = 0; i < items.length; i++) {
    const r = items[i]!.evaluate(ctx);
    if (r.decision !== NOT_APPLICABLE) return r;
  }
  return NA_RESULT;
};

const policyDenyOverrides: Combiner = (items, ctx) => {
  let permit = false;
  let obligations: Obligation[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const r = items[i]!.evaluate(ctx);
    switch (r.decision) {
      case DENY:
        return r;
      case PERMIT:
        permit = true;
        obligations = collect(obligations, r);
        break;
      case INDETERMINATE:
        // XACML 2.0 C.2: an Indeterminate policy gives Deny.
        return DENY_RESULT;
      default:
    }
  }
  return permit ? withObligations(PERMIT, obligations) : NA_RESULT;
};

const policyPermitOverrides: Combiner = (items, ctx) => {
  let deny = false;
  let error: Status | undefined;
  let obligations: Obligation[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const r = items[i]!.evaluate(ctx);
    switch (r.decision) {
      case PERMIT:
        return r;
      case DENY:
        deny = true;
        obligations = collect(obligations, r);
        break;
      case INDETERMINATE:
        error ??= r.status;
        break;
      default:
    }
  }
  if (deny) return withObligations(DENY, obligations);
  if (error) return indeterminate(error);
  return NA_RESULT;
};

/** only-one-applicable, also the semantics of several top-level policies. */
export const onlyOneApplicable: Combiner = (items, ctx) => {
  let selected: Combinable | undefined;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const m = it.match(ctx);
    if (m === NO_MATCH) continue;
    if (m !== MATCH) return m.result();
    if (selected) {
      return indeterminate({ code: STATUS_PROCESSING_ERROR, message: `More than one applicable policy: "${selected.id}" and "${it.id}"` });
    }
    selected = it;
  }
  return selected ? selected.body(ctx) : NA_RESULT;
};

const R1 = 'urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:';
const R11 = 'urn:oasis:names:tc:xacml:1.1:rule-combining-algorithm:';
const P1 = 'urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:';
const P11 = 'urn:oasis:names:tc:xacml:1.1:policy-combining-algorithm:';

/** Rule-combining algorithms by URI (ordered-* in both the 1.0 and 1.1 namespaces). */
export const ruleCombiners: ReadonlyMap<string, Combiner> = new Map([
  [`${R1}deny-overrides`, ruleDenyOverrides],
  [`${R1}permit-overrides`, rulePermitOverrides],
  [`${R1}first-applicable`, firstApplicable],
  // Our evaluation order is always the document order, so ordered-* equal the plain ones.
  [`${R1}ordered-deny-overrides`, ruleDenyOverrides],
  [`${R11}ordered-deny-overrides`, ruleDenyOverrides],
  [`${R1}ordered-permit-overrides`, rulePermitOverrides],
  [`${R11}ordered-permit-overrides`, rulePermitOverrides],
]);

/** Policy-combining algorithms by URI. */
export const policyCombiners: ReadonlyMap<string, Combiner> = new Map([
  [`${P1}deny-overrides`, policyDenyOverrides],
  [`${P1}permit-overrides`, policyPermitOverrides],
  [`${P1}first-applicable`, firstApplicable],
  [`${P1}only-one-applicable`, onlyOneApplicable],
  [`${P1}ordered-deny-overrides`, policyDenyOverrides],
  [`${P11}ordered-deny-overrides`, policyDenyOverrides],
  [`${P1}ordered-permit-overrides`, policyPermitOverrides],
  [`${P11}ordered-permit-overrides`, policyPermitOverrides],
]);
