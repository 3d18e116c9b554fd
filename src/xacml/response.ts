/**
 * The evaluator's response type and its XACML 2.0 `<Response>` serialization.
 *
 * @module
 */
import { CONTEXT_NS, POLICY_NS } from './constants.js';
import { escapeXml } from './xml.js';

/** An XACML decision: only `Permit` grants access. */
export type XacmlDecision = 'Permit' | 'Deny' | 'NotApplicable' | 'Indeterminate';

/** An obligation returned with a Permit or Deny. */
export interface XacmlObligation {
  /** `ObligationId`. */
  id: string;
  /** `FulfillOn`: the decision it comes with. */
  fulfillOn: 'Permit' | 'Deny';
  /** `<AttributeAssignment>`s, values in their lexical form. */
  assignments: Array<{
    /** `AttributeId` of the assignment. */
    attributeId: string;
    /** `DataType` URI, for example `http://www.w3.org/2001/XMLSchema#string`. */
    dataType: string;
    /** The value in its lexical form. */
    value: string;
  }>;
}

/** One `<Result>`. */
export interface XacmlResult {
  /** Set for hierarchical requests (one result per resource). */
  resourceId?: string;
  /** The decision. */
  decision: XacmlDecision;
  /** Status code URI (`urn:oasis:names:tc:xacml:1.0:status:ok` …) and a message saying where. */
  status: {
    /** Status code URI, for example `urn:oasis:names:tc:xacml:1.0:status:ok` or `…:status:processing-error`. */
    code: string;
    /** Status message saying what went wrong and where, when there is one. */
    message?: string;
  };
  /** Obligations to fulfil with the decision (empty for NotApplicable/Indeterminate). */
  obligations: XacmlObligation[];
}

/** The response of {@link Pdp.evaluate}. */
export interface XacmlResponse {
  /** One result, or one per resource for hierarchical requests. */
  results: XacmlResult[];
}

/**
 * Serializes a response as an XACML 2.0 `<Response>` document (context namespace; obligations
 * in the policy namespace).
 *
 * @example
 * ```ts
 * console.log(toResponseXml(pdp.evaluate(requestXml)));
 * ```
 */
export function toResponseXml(response: XacmlResponse): string {
  let s = `<?xml version="1.0" encoding="UTF-8"?>\n<Response xmlns="${CONTEXT_NS}">\n`;
  for (const r of response.results) {
    s += r.resourceId !== undefined ? `  <Result ResourceId="${escapeXml(r.resourceId)}">\n` : '  <Result>\n';
    s += `    <Decision>${r.decision}</Decision>\n`;
    s += `    <Status>\n      <StatusCode Value="${escapeXml(r.status.code)}"/>\n`;
    if (r.status.message) s += `      <StatusMessage>${escapeXml(r.status.message)}</StatusMessage>\n`;
    s += '    </Status>\n';
    if (r.obligations.length > 0) {
      s += `    <Obligations xmlns="${POLICY_NS}">\n`;
      for (const o of r.obligations) {
        s += `      <Obligation ObligationId="${escapeXml(o.id)}" FulfillOn="${o.fulfillOn}">\n`;
        for (const a of o.assignments) {
          s += `        <AttributeAssignment AttributeId="${escapeXml(a.attributeId)}" DataType="${escapeXml(a.dataType)}">${escapeXml(a.value)}</AttributeAssignment>\n`;
        }
        s += '      </Obligation>\n';
      }
      s += '    </Obligations>\n';
    }
    s += '  </Result>\n';
  }
  return `${s}</Response>\n`;
}
