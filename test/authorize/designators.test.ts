/**
 * The `org:gateway:` designators a policy names that the request builder never fills, and the hint
 * for a policy given as a file's path instead of its text.
 */
import { expect } from 'chai';
import { isKnownGatewayAttribute, unknownGatewayDesignators } from '../../src/authorize/designators.js';
import { XacmlAttributes } from '../../src/authorize/attributes.js';
import { XacmlPolicySource } from '../../src/authorize/policy-source.js';
import { xacmlAuthorize } from '../../src/authorize/xacml-authorize/index.js';

const policyWith = (...ids: string[]): string => `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="p"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="r" Effect="Permit"><Condition>
    ${ids.map((id) => `<SubjectAttributeDesignator AttributeId="${id}" DataType="http://www.w3.org/2001/XMLSchema#string"/>`).join('\n    ')}
  </Condition></Rule>
</Policy>`;

describe('designators the gateway never fills', () => {
  it('names each unknown org:gateway id once, with the nearest known one', () => {
    const found = unknownGatewayDesignators(
      policyWith('org:gateway:subject:token:clientID', 'org:gateway:subject:token:clientID', 'org:gateway:action:token:scopes'),
    );
    expect(found).to.deep.equal([
      { attributeId: 'org:gateway:subject:token:clientID', nearest: XacmlAttributes.tokenClientId },
      { attributeId: 'org:gateway:action:token:scopes', nearest: XacmlAttributes.scope },
    ]);
  });

  it('accepts every id the request builder produces, prefixed ones completed by a name, and ids of other namespaces', () => {
    expect(unknownGatewayDesignators(policyWith(XacmlAttributes.tokenClientId, XacmlAttributes.role, 'urn:example:own'))).to.deep.equal([]);
    expect(isKnownGatewayAttribute(`${XacmlAttributes.headerPrefix}x-tenant`)).to.equal(true);
    expect(isKnownGatewayAttribute(XacmlAttributes.headerPrefix)).to.equal(false);
    expect(unknownGatewayDesignators(policyWith('org:gateway:action:transport:headers:x-tenant'))[0]?.nearest).to.equal(
      XacmlAttributes.headerPrefix,
    );
  });
});

describe('a policy given as a file path', () => {
  const hint = "looks like a file path; pass the document's text (readFileSync) or use the configuration file's `policy` path";

  it('xacmlAuthorize says so instead of a syntax error', () => {
    expect(() => xacmlAuthorize({ xacmlPolicy: 'policies/petstore.xml' })).to.throw(TypeError, hint);
    expect(() => xacmlAuthorize({ xacmlPolicy: ['petstore.xml'] })).to.throw(
      /options\.xacmlPolicy is "petstore\.xml", which looks like a file path/,
    );
  });

  it('XacmlPolicySource says so too; a text that is not XML and not a path is not given the hint', () => {
    expect(() => new XacmlPolicySource({ policy: 'C:\\policies\\petstore.xml' })).to.throw(TypeError, hint);
    expect(() => new XacmlPolicySource({ policy: 'not xml at all' }))
      .to.throw()
      .that.satisfies((err: Error) => !err.message.includes(hint));
  });
});
