/** Small builders of XACML 2.0 XML for the evaluator's tests. */
import assert from 'node:assert/strict';
import { XacmlSyntaxError } from '../../src/xacml/index.js';
import type { RequestAttribute, RequestContext } from '../../src/xacml/index.js';

export const NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';
export const XS = 'http://www.w3.org/2001/XMLSchema#';
export const FN = 'urn:oasis:names:tc:xacml:1.0:function:';
export const FN2 = 'urn:oasis:names:tc:xacml:2.0:function:';
export const RULE_ALG = 'urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:';
export const POLICY_ALG = 'urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:';
export const RESOURCE_ID = 'urn:oasis:names:tc:xacml:1.0:resource:resource-id';
export const SUBJECT_ID = 'urn:oasis:names:tc:xacml:1.0:subject:subject-id';
export const ACTION_ID = 'urn:oasis:names:tc:xacml:1.0:action:action-id';

/** `<AttributeValue>`. */
export const val = (v: string, type = 'string'): string => `<AttributeValue DataType="${XS}${type}">${v}</AttributeValue>`;
/** `<Apply>`. */
export const apply = (fn: string, ...args: string[]): string =>
  `<Apply FunctionId="${fn.includes(':') ? fn : FN + fn}">${args.join('')}</Apply>`;
/** A designator of a category. */
export const designator = (cat: 'Subject' | 'Resource' | 'Action' | 'Environment', id: string, type = 'string', extra = ''): string =>
  `<${cat}AttributeDesignator AttributeId="${id}" DataType="${XS}${type}"${extra}/>`;
/** `<Rule>`. */
export const rule = (id: string, effect: 'Permit' | 'Deny', body = ''): string => `<Rule RuleId="${id}" Effect="${effect}">${body}</Rule>`;
/** `<Condition>`. */
export const condition = (expr: string): string => `<Condition>${expr}</Condition>`;
/** `<Policy>`. */
export const policy = (id: string, alg: string, body: string, target = '<Target/>'): string =>
  `<Policy xmlns="${NS}" PolicyId="${id}" RuleCombiningAlgId="${alg.includes(':') ? alg : RULE_ALG + alg}">${target}${body}</Policy>`;
/** `<PolicySet>`. */
export const policySet = (id: string, alg: string, body: string, target = '<Target/>'): string =>
  `<PolicySet xmlns="${NS}" PolicySetId="${id}" PolicyCombiningAlgId="${alg.includes(':') ? alg : POLICY_ALG + alg}">${target}${body}</PolicySet>`;
/** A target with one match in one section. */
export const target1 = (
  cat: 'Subject' | 'Resource' | 'Action' | 'Environment',
  fn: string,
  value: string,
  id: string,
  type = 'string',
): string =>
  `<Target><${cat}s><${cat}><${cat}Match MatchId="${FN}${fn}">${val(value, type)}${designator(cat, id, type)}</${cat}Match></${cat}></${cat}s></Target>`;

/** A string attribute. */
export const attr = (attributeId: string, ...values: string[]): RequestAttribute => ({ attributeId, dataType: `${XS}string`, values });
/** A typed attribute. */
export const typed = (attributeId: string, type: string, ...values: string[]): RequestAttribute => ({
  attributeId,
  dataType: `${XS}${type}`,
  values,
});

/** A request context. */
export function request(
  p: { subject?: RequestAttribute[]; resource?: RequestAttribute[]; action?: RequestAttribute[]; environment?: RequestAttribute[] } = {},
): RequestContext {
  return {
    subjects: [{ subjectCategory: 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject', attributes: p.subject ?? [] }],
    resources: [{ attributes: p.resource ?? [] }],
    action: { attributes: p.action ?? [] },
    environment: { attributes: p.environment ?? [] },
  };
}

/** Asserts that `fn` throws an XacmlSyntaxError whose message includes `part` (and whose path is `path`). */
export function throwsSyntax(fn: () => unknown, part: string, path?: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof XacmlSyntaxError, `expected an XacmlSyntaxError, got ${String(e)}`);
    assert.ok(e.message.includes(part), `message ${JSON.stringify(e.message)} should include ${JSON.stringify(part)}`);
    if (path !== undefined) assert.equal(e.path, path);
    return true;
  });
}

/** Asserts that `actual` has these properties with these values. */
export function assertIncludes(actual: object, expected: Record<string, unknown>): void {
  const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, (actual as Record<string, unknown>)[k]]));
  assert.deepEqual(picked, expected);
}
