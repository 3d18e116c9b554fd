/**
 * Documents an operator (or a vendor) can hand the configuration console that cost seconds of CPU:
 * a policy of thousands of large regular expressions, an OpenAPI document whose references double
 * at each level, one of thousands of operations.
 */

const S = 'http://www.w3.org/2001/XMLSchema#string';
const F = 'urn:oasis:names:tc:xacml:1.0:function:';

/**
 * A valid policy with `count` distinct `string-regexp-match` patterns of about 1,200 automaton
 * instructions each, six to a rule, all matched against the `X-Tenant` header: some 200 bytes a
 * pattern, so 6,000 of them are about 1.2 MB.
 */
export function regexHeavyPolicy(count = 6000): string {
  const applies: string[] = [];
  for (let i = 0; i < count; i++) {
    applies.push(
      `<Apply FunctionId="${F}string-regexp-match"><AttributeValue DataType="${S}">^x${i}[a-z]{1,600}$</AttributeValue><VariableReference VariableId="tenant"/></Apply>`,
    );
  }
  const rules: string[] = [];
  for (let i = 0; i < applies.length; i += 6) {
    rules.push(
      `<Rule RuleId="r${i}" Effect="Permit"><Condition><Apply FunctionId="${F}and">${applies.slice(i, i + 6).join('')}</Apply></Condition></Rule>`,
    );
  }
  return (
    `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="heavy" RuleCombiningAlgId="${F.replace('function', 'rule-combining-algorithm')}first-applicable">` +
    `<Target/><VariableDefinition VariableId="tenant"><Apply FunctionId="${F}string-one-and-only">` +
    `<ActionAttributeDesignator AttributeId="org:gateway:action:transport:header:x-tenant" DataType="${S}"/></Apply></VariableDefinition>` +
    `${rules.join('')}<Rule RuleId="otherwise" Effect="Deny"/></Policy>`
  );
}

/** A small valid policy: permits everyone. */
export const PERMIT_ALL = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="open" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable"><Target/><Rule RuleId="all" Effect="Permit"/></Policy>`;

/**
 * An OpenAPI 3.0 document of a few kilobytes whose schema `s0` refers twice to `s1`, which refers
 * twice to `s2`, and so on for `levels` levels: 2^levels paths through the references.
 */
export function doublingRefsOpenApi(levels = 32): string {
  const schemas: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) {
    const next = { $ref: `#/components/schemas/s${i + 1}` };
    schemas[`s${i}`] = { type: 'object', properties: { l: next, r: next } };
  }
  schemas[`s${levels}`] = { type: 'string' };
  const ok = { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/s0' } } } };
  return JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'Doubling', version: '1' },
    paths: {
      '/tree': {
        get: { operationId: 'getTree', responses: { '200': ok } },
        post: { operationId: 'postTree', requestBody: { content: ok.content }, responses: { '200': ok } },
      },
    },
    components: { schemas },
  });
}

/** An OpenAPI 3.0 document of `count` operations on distinct templated paths (about 1 MB for 6,000). */
export function manyOperationsOpenApi(count = 6000): string {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    paths[`/resource${i}/{id}/items`] = {
      get: {
        operationId: `listItemsOfResource${i}`,
        summary: `Items of resource ${i}`,
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'the items of the resource' } },
      },
    };
  }
  return JSON.stringify({ openapi: '3.0.3', info: { title: 'Many', version: '1' }, paths });
}
