/**
 * Internal runtime representations shared by the compiler and the combining algorithms:
 * decisions as small integers, results as (mostly shared) immutable objects, and the
 * Indeterminate signal thrown inside expression evaluation.
 *
 * @module
 */
import { STATUS_OK, STATUS_PROCESSING_ERROR } from './constants.js';
import { XacmlProcessingError } from './errors.js';
import { DataTypeError } from './datatypes/types.js';
import type { XacmlDecision } from './response.js';

/** Decision codes. */
export const PERMIT = 0;
/** See {@link PERMIT}. */
export const DENY = 1;
/** See {@link PERMIT}. */
export const NOT_APPLICABLE = 2;
/** See {@link PERMIT}. */
export const INDETERMINATE = 3;
/** A decision code. */
export type DecisionCode = 0 | 1 | 2 | 3;

/** Decision names, indexed by code. */
export const DECISION_NAMES = ['Permit', 'Deny', 'NotApplicable', 'Indeterminate'] as const satisfies readonly XacmlDecision[];

/** A status: code URI and optional message. */
export interface Status {
  readonly code: string;
  readonly message?: string;
}

/** An obligation returned with a decision. */
export interface Obligation {
  /** `ObligationId`. */
  readonly id: string;
  /** `FulfillOn`. */
  readonly fulfillOn: 'Permit' | 'Deny';
  /** The `<AttributeAssignment>` elements. */
  readonly assignments: ReadonlyArray<{ readonly attributeId: string; readonly dataType: string; readonly value: string }>;
}

/** The result of evaluating a rule, policy or policy set. */
export interface Result {
  readonly decision: DecisionCode;
  /** Set for Indeterminate. */
  readonly status?: Status;
  /** Obligations to return with a Permit or Deny. */
  readonly obligations?: readonly Obligation[];
}

/** Shared results without obligations. */
export const PERMIT_RESULT: Result = Object.freeze({ decision: PERMIT });
/** See {@link PERMIT_RESULT}. */
export const DENY_RESULT: Result = Object.freeze({ decision: DENY });
/** See {@link PERMIT_RESULT}. */
export const NA_RESULT: Result = Object.freeze({ decision: NOT_APPLICABLE });
/** Status ok, shared. */
export const OK_STATUS: Status = Object.freeze({ code: STATUS_OK });

/**
 * Thrown (not an `Error`: no stack trace is captured on this path) when an expression or a
 * target evaluates to Indeterminate.
 */
export class Indeterminate {
  constructor(
    readonly code: string,
    readonly message: string,
  ) {}

  /** This as an Indeterminate {@link Result}. */
  result(): Result {
    return { decision: INDETERMINATE, status: { code: this.code, message: this.message } };
  }
}

/** An Indeterminate result with the given status. */
export function indeterminate(status: Status): Result {
  return { decision: INDETERMINATE, status };
}

/** Turns whatever an evaluation threw into an {@link Indeterminate} (fail closed). */
export function toIndeterminate(e: unknown, where: string): Indeterminate {
  if (e instanceof Indeterminate) return e;
  if (e instanceof XacmlProcessingError || e instanceof DataTypeError) {
    return new Indeterminate(STATUS_PROCESSING_ERROR, `${e.message} (at ${where})`);
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new Indeterminate(STATUS_PROCESSING_ERROR, `Unexpected error: ${msg} (at ${where})`);
}

/** Target match outcomes: {@link MATCH}, {@link NO_MATCH}, or an {@link Indeterminate}. */
export const MATCH = 0;
/** See {@link MATCH}. */
export const NO_MATCH = 1;
/** A target/match evaluation outcome. */
export type MatchOutcome = 0 | 1 | Indeterminate;
