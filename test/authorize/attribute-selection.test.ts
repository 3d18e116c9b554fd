import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import express from 'express';
import supertest from 'supertest';
import { XacmlAttributes as A } from '../../src/authorize/attributes.js';
import { assembleXacmlRequest, attributeSelection, excludedHeaders, tokenAttributes } from '../../src/authorize/request-builder.js';
import type { XacmlInvocation } from '../../src/authorize/request-builder.js';
import { xacmlAuthorize } from '../../src/authorize/xacml-authorize/index.js';
import { createTokenContext } from '../../src/context.js';
import { createPdp } from '../../src/xacml/pdp.js';
import type { Pdp } from '../../src/xacml/pdp.js';
import type { RequestContext } from '../../src/xacml/request-context.js';
import { sampleContext, sampleInvocation } from './sample-invocation.js';

const NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';
const FN = 'urn:oasis:names:tc:xacml:1.0:function:';
const STRING = 'http://www.w3.org/2001/XMLSchema#string';
const scenarioPolicy = new URL('../../examples/petstore/policies/petstore.xml', import.meta.url);

function policy(id: string, rules: string, target = '<Target/>', otherwise = '<Rule RuleId="default" Effect="Deny"/>'): string {
  return `<Policy xmlns="${NS}" PolicyId="${id}" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">${target}${rules}${otherwise}</Policy>`;
}

function isIn(designator: string, values: string[]): string {
  const bag = values.map((v) => `<AttributeValue DataType="${STRING}">${v}</AttributeValue>`).join('');
  return `<Apply FunctionId="${FN}string-at-least-one-member-of">${designator}<Apply FunctionId="${FN}string-bag">${bag}</Apply></Apply>`;
}

const action = (id: string): string => `<ActionAttributeDesignator AttributeId="${id}" DataType="${STRING}"/>`;
const subject = (id: string): string => `<SubjectAttributeDesignator AttributeId="${id}" DataType="${STRING}"/>`;

const headerPolicy = policy(
  'header-only',
  `<Rule RuleId="tenant" Effect="Permit"><Condition>${isIn(action(`${A.headerPrefix}x-tenant`), ['acme'])}</Condition></Rule>`,
);

// Designators of many kinds: a URL parameter, a header, an introspection claim (nested, flattened),
// scope, role, UserInfo claim, action-id, resource-id in a Target, and the current date.
const manyKindsPolicy = `<PolicySet xmlns="${NS}" PolicySetId="many" PolicyCombiningAlgId="urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:first-applicable"><Target/>
  ${policy(
    'kinds',
    `<Rule RuleId="all" Effect="Permit"><Condition><Apply FunctionId="${FN}and">
      ${isIn(action(`${A.urlParameterPrefix}status`), ['available'])}
      ${isIn(action(`${A.headerPrefix}accept`), ['application/json'])}
      ${isIn(action(`${A.introspectionClaimPrefix}org:example:tenant`), ['acme'])}
      ${isIn(action(A.scope), ['write'])}
      ${isIn(subject(A.userInfoEMail), ['mario@example.org'])}
      ${isIn(action(A.actionId), ['PUT /pet'])}
      <Apply FunctionId="${FN}date-greater-than"><Apply FunctionId="${FN}date-one-and-only"><EnvironmentAttributeDesignator AttributeId="${A.currentDate}" DataType="http://www.w3.org/2001/XMLSchema#date"/></Apply><AttributeValue DataType="http://www.w3.org/2001/XMLSchema#date">2001-01-01Z</AttributeValue></Apply>
    </Apply></Condition></Rule>`,
    `<Target><Resources><Resource><ResourceMatch MatchId="${FN}string-regexp-match"><AttributeValue DataType="${STRING}">^/gateway/</AttributeValue><ResourceAttributeDesignator AttributeId="${A.resourceId}" DataType="${STRING}"/></ResourceMatch></Resource></Resources></Target>`,
    '', // not applicable when its rule is not: the referenced policy decides
  )}
  <PolicyIdReference>referenced</PolicyIdReference>
</PolicySet>`;
const referencedPolicy = policy(
  'referenced',
  `<Rule RuleId="role" Effect="Permit"><Condition>${isIn(subject(A.role), ['pet-writer'])}</Condition></Rule>`,
);

function invocationWith(changes: Partial<XacmlInvocation>): XacmlInvocation {
  const base = sampleInvocation();
  return { ...base, ...changes, headers: { ...base.headers, ...(changes.headers ?? {}) } };
}

/** The decision on the full request and on the request with only the referenced attributes. */
function decisions(pdp: Pdp, invocation: XacmlInvocation): { full: unknown; selected: unknown; selectedRequest: RequestContext } {
  const context = sampleContext();
  const token = context.token;
  const part = tokenAttributes(token);
  const excluded = excludedHeaders();
  const selection = attributeSelection(pdp.references);
  expect(selection).not.to.equal(undefined);
  const full = pdp.evaluate(assembleXacmlRequest(invocation, token?.raw, part, excluded));
  const selectedRequest = assembleXacmlRequest(invocation, token?.raw, part, excluded, selection);
  return { full, selected: pdp.evaluate(selectedRequest), selectedRequest };
}

function count(request: RequestContext): number {
  return (
    request.subjects[0]!.attributes.length +
    request.resources[0]!.attributes.length +
    request.action.attributes.length +
    request.environment.attributes.length
  );
}

describe('requests with only the attributes the policy references', () => {
  it('Pdp.references lists the designators of the policies and of the policies they reference', () => {
    const pdp = createPdp({ policies: [manyKindsPolicy], references: [referencedPolicy] });
    expect(pdp.references.selectors).to.equal(false);
    const ids = pdp.references.designators.map((d) => `${d.category} ${d.attributeId}`);
    expect(ids).to.include.members([
      `action ${A.urlParameterPrefix}status`,
      `action ${A.headerPrefix}accept`,
      `subject ${A.userInfoEMail}`,
      `subject ${A.role}`,
      `resource ${A.resourceId}`,
      `environment ${A.currentDate}`,
    ]);
    const role = pdp.references.designators.find((d) => d.attributeId === A.role);
    expect(role).to.deep.equal({
      category: 'subject',
      attributeId: A.role,
      dataType: STRING,
      subjectCategory: 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject',
    });
  });

  it('says when a policy reads the whole request (AttributeSelector, XPath function): then the full request is built', () => {
    const selector = policy(
      'sel',
      `<Rule RuleId="r" Effect="Permit"><Condition><Apply FunctionId="${FN}string-is-in"><AttributeValue DataType="${STRING}">x</AttributeValue><AttributeSelector RequestContextPath="//text()" DataType="${STRING}"/></Apply></Condition></Rule>`,
    );
    const xpath = policy(
      'xp',
      `<Rule RuleId="r" Effect="Permit"><Condition><Apply FunctionId="${FN}integer-greater-than"><Apply FunctionId="${FN}xpath-node-count"><AttributeValue DataType="${STRING}">//*</AttributeValue></Apply><AttributeValue DataType="http://www.w3.org/2001/XMLSchema#integer">0</AttributeValue></Apply></Condition></Rule>`,
    );
    for (const xml of [selector, xpath]) {
      const pdp = createPdp({ policies: [xml] });
      expect(pdp.references.selectors).to.equal(true);
      expect(attributeSelection(pdp.references)).to.equal(undefined);
    }
    expect(createPdp({ policies: [headerPolicy] }).references.selectors).to.equal(false);
  });

  it('counts what a selector reads by id as referenced: only that attribute is built', () => {
    const path = `//ctx:Action/ctx:Attribute[@AttributeId='${A.headerPrefix}x-tenant']/ctx:AttributeValue`;
    const selector = policy(
      'sel-by-id',
      `<Rule RuleId="tenant" Effect="Permit"><Condition><Apply FunctionId="${FN}string-is-in"><AttributeValue DataType="${STRING}">acme</AttributeValue><AttributeSelector xmlns:ctx="urn:oasis:names:tc:xacml:2.0:context:schema:os" RequestContextPath="${path}" DataType="${STRING}"/></Apply></Condition></Rule>`,
    );
    const pdp = createPdp({ policies: [selector] });
    expect(pdp.references.selectors).to.equal(false);
    expect(pdp.references.selected).to.deep.equal([{ category: 'action', attributeId: `${A.headerPrefix}x-tenant` }]);
    for (const [tenant, decision] of [
      ['acme', 'Permit'],
      ['other', 'Deny'],
    ] as const) {
      const seen = decisions(pdp, invocationWith({ headers: { 'x-tenant': tenant } }));
      expect(seen.selected).to.deep.equal(seen.full);
      expect((seen.selected as { results: Array<{ decision: string }> }).results[0]!.decision).to.equal(decision);
      expect(seen.selectedRequest.action.attributes.map((a) => a.attributeId)).to.deep.equal([`${A.headerPrefix}x-tenant`]);
    }
  });

  it('a policy that references only a header attribute still sees it', () => {
    const pdp = createPdp({ policies: [headerPolicy] });
    const permitted = decisions(pdp, invocationWith({ headers: { 'x-tenant': 'acme' } }));
    expect(permitted.selected).to.deep.equal(permitted.full);
    expect((permitted.selected as { results: Array<{ decision: string }> }).results[0]!.decision).to.equal('Permit');
    // Only the header and the resource id were built.
    expect(permitted.selectedRequest.action.attributes.map((a) => a.attributeId)).to.deep.equal([`${A.headerPrefix}x-tenant`]);
    expect(count(permitted.selectedRequest)).to.equal(2);
    const denied = decisions(pdp, invocationWith({ headers: { 'x-tenant': 'other' } }));
    expect((denied.selected as { results: Array<{ decision: string }> }).results[0]!.decision).to.equal('Deny');
    expect(denied.selected).to.deep.equal(denied.full);
  });

  it('decides as on the full request, for a policy using many attribute kinds', () => {
    const pdp = createPdp({ policies: [manyKindsPolicy], references: [referencedPolicy] });
    const cases: Array<[Partial<XacmlInvocation>, string]> = [
      [{}, 'Permit'],
      [{ url: 'http://127.0.0.1:8080/gateway/Ente/PetStore/v1/pet?status=sold' }, 'Permit'], // the referenced policy's role rule
      [{ url: 'http://127.0.0.1:8080/other/pet?status=available' }, 'Permit'], // target misses, the role rule permits
      [{ operation: 'GET /pet' }, 'Permit'],
      [{ headers: { accept: 'text/plain' } }, 'Permit'],
      [{ subject: { roles: ['nobody'] } }, 'Permit'],
      [{ subject: { roles: ['nobody'] }, operation: 'GET /pet' }, 'Deny'],
      [{ subject: { roles: ['nobody'] }, headers: { accept: 'text/plain' } }, 'Deny'],
    ];
    for (const [changes, expected] of cases) {
      const { full, selected, selectedRequest } = decisions(pdp, invocationWith(changes));
      expect(selected, JSON.stringify(changes)).to.deep.equal(full);
      expect((selected as { results: Array<{ decision: string }> }).results[0]!.decision, JSON.stringify(changes)).to.equal(expected);
      expect(count(selectedRequest)).to.be.lessThan(
        count(
          assembleXacmlRequest(
            invocationWith(changes),
            sampleContext().token?.raw,
            tokenAttributes(sampleContext().token),
            excludedHeaders(),
          ),
        ),
      );
    }
  });

  it('decides as on the full request, for the scenario policy', async () => {
    const pdp = createPdp({ policies: [await readFile(scenarioPolicy, 'utf8')] });
    for (const [azp, aud, expected] of [
      ['client1', ['petstore-api'], 'Permit'],
      ['client2', ['other-api', 'petstore-api'], 'Permit'],
      ['client3', ['petstore-api'], 'Deny'],
      ['client1', ['other-api'], 'Deny'],
    ] as const) {
      const token = createTokenContext('scenario-token-value', 'header');
      token.introspection = { active: true, azp, aud: [...aud], scope: 'read' };
      const invocation = invocationWith({ subject: {} });
      const part = tokenAttributes(token);
      const full = pdp.evaluate(assembleXacmlRequest(invocation, token.raw, part, excludedHeaders()));
      const selected = pdp.evaluate(
        assembleXacmlRequest(invocation, token.raw, part, excludedHeaders(), attributeSelection(pdp.references)),
      );
      expect(selected).to.deep.equal(full);
      expect(selected.results[0]!.decision).to.equal(expected);
    }
  });

  it('xacmlAuthorize: the header-only policy permits on the header; onRequest still gets the full request', async () => {
    const seen: RequestContext[] = [];
    const build = (withHook: boolean): express.Express => {
      const app = express();
      app.get(
        '/pet/:id',
        xacmlAuthorize({
          xacmlPolicy: headerPolicy,
          serviceName: 'PetStore',
          serviceVersion: 1,
          providerName: 'Ente',
          ...(withHook ? { onRequest: (r: RequestContext) => void seen.push(r) } : {}),
        }),
        (_req, res) => void res.send('ok'),
      );
      app.use(
        (err: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
          void res.status(err.status ?? 500).end(),
      );
      return app;
    };
    for (const withHook of [false, true]) {
      await supertest(build(withHook)).get('/pet/1').set('X-Tenant', 'acme').set('X-Other', 'y').expect(200);
      await supertest(build(withHook)).get('/pet/1').set('X-Tenant', 'nope').expect(403);
    }
    expect(seen).to.have.length(2);
    const ids = seen[0]!.action.attributes.map((a) => a.attributeId);
    expect(ids).to.include.members([A.actionId, A.url, `${A.headerPrefix}x-tenant`, `${A.headerPrefix}x-other`]);
    expect(seen[0]!.environment.attributes).to.have.length(3);
  });
});
