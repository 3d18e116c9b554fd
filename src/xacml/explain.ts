/**
 * Explaining a decision: which policy and rule decided, and for the elements that did not apply
 * which target section or condition failed. A second, explaining evaluation over the compiled
 * policies' descriptions (`Combinable.info`): the evaluation itself carries no tracing, so a
 * caller that explains only what is not a Permit pays nothing on the Permit path.
 *
 * @module
 */
import type { Combinable } from './compile/combining.js';
import type { EvalContext } from './eval-context.js';
import type { XacmlDecision } from './response.js';
import { DECISION_NAMES, INDETERMINATE, Indeterminate, MATCH, NOT_APPLICABLE, NO_MATCH, OK_STATUS, toIndeterminate } from './runtime.js';
import type { Result } from './runtime.js';

/** The kind of a policy element. */
export type XacmlElementKind = 'PolicySet' | 'Policy' | 'Rule';

/** What failed in an element that did not apply (NotApplicable) or could not be evaluated (Indeterminate). */
export interface XacmlExplanationFailure {
  /** `target`: a section of its target did not match; `condition`: the rule's condition was false. */
  part: 'target' | 'condition';
  /**
   * The parts that failed, as text: target sections as `Subjects: string-equal("alice", subject
   * urn:…:subject-id)`, or the arguments of the condition's top-level `and` that were false (the
   * whole condition when it is not an `and`).
   */
  failed: string[];
  /** The status message of an Indeterminate part (a missing attribute, a processing error). */
  message?: string;
}

/** One element evaluated while explaining, with its own result. */
export interface XacmlExplanationStep {
  /** Policy set, policy or rule. */
  kind: XacmlElementKind;
  /** `PolicySetId`, `PolicyId` or `RuleId`. */
  id: string;
  /** Ids of the enclosing policy sets and policy, outermost first. */
  parents: string[];
  /** The element's own result. */
  decision: XacmlDecision;
  /** A rule's `Effect`. */
  effect?: 'Permit' | 'Deny';
  /** For a NotApplicable or Indeterminate element, what failed. */
  failure?: XacmlExplanationFailure;
}

/** The explanation of one result. */
export interface XacmlExplanation {
  /** The decision (the same as the evaluation's). */
  decision: XacmlDecision;
  /** Its status code and message. */
  status: {
    /** Status code URI. */
    code: string;
    /** Status message, when there is one. */
    message?: string;
  };
  /**
   * What gave the decision, absent for NotApplicable: the elements from the top-level policy (set)
   * down to the one that decided (for a Permit or Deny, the rule whose Effect it is), and the ids
   * of that rule and of its policy.
   */
  decidedBy?: {
    /** The elements from the top down, outermost first. */
    path: Array<{
      /** Policy set, policy or rule. */
      kind: XacmlElementKind;
      /** Its id. */
      id: string;
    }>;
    /** The innermost policy on the path. */
    policy?: string;
    /** The rule that decided, when one did. */
    rule?: string;
  };
  /**
   * The elements evaluated, in document order (each policy set and policy before its children),
   * at most 64; a NotApplicable one says which target section or
   * condition failed. The children of an element whose target did not match are not listed.
   */
  steps: XacmlExplanationStep[];
  /** How many steps were left out past the 64 listed. */
  omittedSteps?: number;
  /** Set for hierarchical requests (one result per resource). */
  resourceId?: string;
}

/** Most steps an explanation lists. */
export const MAX_EXPLANATION_STEPS = 64;

type PathEntry = { kind: XacmlElementKind; id: string };

interface Walk {
  readonly ctx: EvalContext;
  readonly steps: XacmlExplanationStep[];
  omitted: number;
}

/** Explains the evaluation of `top` (the top-level policies, combined as `decide` does) on `ctx`. */
export function explainEvaluation(top: readonly Combinable[], decide: (ctx: EvalContext) => Result, ctx: EvalContext): XacmlExplanation {
  let overall: Result;
  try {
    overall = decide(ctx);
  } catch (e) {
    overall = toIndeterminate(e, 'the policies').result();
  }
  const walk: Walk = { ctx, steps: [], omitted: 0 };
  let path: PathEntry[] | undefined;
  for (const item of top) {
    const found = explainItem(item, walk, []);
    if (path === undefined && overall.decision !== NOT_APPLICABLE && found.result.decision === overall.decision) path = found.path;
  }
  const status = overall.status ?? OK_STATUS;
  const explanation: XacmlExplanation = {
    decision: DECISION_NAMES[overall.decision],
    status: status.message === undefined ? { code: status.code } : { code: status.code, message: status.message },
    steps: walk.steps,
  };
  if (path !== undefined && path.length > 0) {
    const decidedBy: NonNullable<XacmlExplanation['decidedBy']> = { path };
    const policy = [...path].reverse().find((p) => p.kind === 'Policy');
    if (policy !== undefined) decidedBy.policy = policy.id;
    const last = path[path.length - 1]!;
    if (last.kind === 'Rule') decidedBy.rule = last.id;
    explanation.decidedBy = decidedBy;
  }
  if (walk.omitted > 0) explanation.omittedSteps = walk.omitted;
  return explanation;
}

/** Evaluates one element and its children; returns its result and the path to what decided it. */
function explainItem(item: Combinable, walk: Walk, parents: string[]): { result: Result; path?: PathEntry[] } {
  const { ctx } = walk;
  let result: Result;
  try {
    result = item.evaluate(ctx);
  } catch (e) {
    result = toIndeterminate(e, item.id).result();
  }
  const info = item.info;
  const kind: XacmlElementKind = info?.kind ?? 'Policy';
  const self: PathEntry = { kind, id: item.id };
  const step: XacmlExplanationStep = { kind, id: item.id, parents, decision: DECISION_NAMES[result.decision] };
  if (item.effect !== undefined && kind === 'Rule') step.effect = DECISION_NAMES[item.effect] as 'Permit' | 'Deny';
  if (walk.steps.length < MAX_EXPLANATION_STEPS) walk.steps.push(step);
  else walk.omitted++;
  if (info === undefined) return result.decision === NOT_APPLICABLE ? { result } : { result, path: [self] };

  // The target first: an element whose target does not match is NotApplicable, its children unread.
  const failedSections: string[] = [];
  let targetError: string | undefined;
  for (const section of info.target) {
    const m = section.test(ctx);
    if (m === MATCH) continue;
    failedSections.push(`${section.section}: ${section.text}`);
    if (m !== NO_MATCH) targetError ??= m.message;
  }
  if (failedSections.length > 0) {
    step.failure = { part: 'target', failed: failedSections };
    if (targetError !== undefined) step.failure.message = targetError;
    return result.decision === NOT_APPLICABLE ? { result } : { result, path: [self] };
  }

  if (kind === 'Rule') {
    if (info.condition !== undefined && (result.decision === NOT_APPLICABLE || result.decision === INDETERMINATE)) {
      const failed: string[] = [];
      let message: string | undefined;
      for (const part of info.condition) {
        try {
          if (part.ev(ctx) !== true) failed.push(part.text);
        } catch (e) {
          failed.push(part.text);
          message ??= (e instanceof Indeterminate ? e : toIndeterminate(e, item.id)).message;
        }
      }
      step.failure = { part: 'condition', failed };
      if (message !== undefined) step.failure.message = message;
      else if (result.status?.message !== undefined) step.failure.message = result.status.message;
    }
    return result.decision === NOT_APPLICABLE ? { result } : { result, path: [self] };
  }

  const inner = [...parents, item.id];
  let decided: PathEntry[] | undefined;
  let indeterminate: PathEntry[] | undefined;
  for (const child of info.children ?? []) {
    const found = explainItem(child, walk, inner);
    if (found.path === undefined) continue;
    if (decided === undefined && found.result.decision === result.decision) decided = found.path;
    if (indeterminate === undefined && found.result.decision === INDETERMINATE) indeterminate = found.path;
  }
  if (result.decision === NOT_APPLICABLE) return { result };
  // A deny-overrides policy set turns an Indeterminate policy into Deny: that policy decided.
  const below = decided ?? indeterminate;
  return { result, path: below === undefined ? [self] : [self, ...below] };
}
