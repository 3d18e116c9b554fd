import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { buildXacmlRequest } from '../../src/authorize/request-builder.js';
import { toRequestXml } from '../../src/xacml/request-xml.js';
import { XacmlAttributes as A } from '../../src/authorize/attributes.js';
import { createTokenContext } from '../../src/context.js';
import type { RequestAttribute, RequestContext } from '../../src/xacml/request-context.js';
import { SAMPLE_TOKEN, sampleContext, sampleInvocation } from './sample-invocation.js';

const fixture = new URL('../fixtures/authorize/sample-request.xml', import.meta.url);

function attribute(request: RequestContext, id: string): RequestAttribute | undefined {
  const all = [
    ...request.subjects.flatMap((s) => s.attributes),
    ...request.resources.flatMap((r) => r.attributes),
    ...request.action.attributes,
    ...request.environment.attributes,
  ];
  return all.find((a) => a.attributeId === id);
}

describe('buildXacmlRequest', () => {
  it('builds the request XML of the sample invocation exactly as the fixture', async () => {
    const xml = toRequestXml(buildXacmlRequest(sampleInvocation(), sampleContext()));
    expect(xml).to.equal(await readFile(fixture, 'utf8'));
  });

  it('never puts the token in the request: Authorization, access_token and copies are left out', () => {
    const request = buildXacmlRequest(sampleInvocation(), sampleContext());
    expect(JSON.stringify(request)).not.to.include(SAMPLE_TOKEN);
    expect(attribute(request, `${A.headerPrefix}authorization`)).to.equal(undefined);
    expect(attribute(request, `${A.urlParameterPrefix}access_token`)).to.equal(undefined);
    expect(attribute(request, A.url)?.values).to.deep.equal([
      'http://127.0.0.1:8080/gateway/Ente/PetStore/v1/pet?status=available&tag=a&tag=b',
    ]);
  });

  it('types every gateway attribute as xs:string and multi-valued items as bags', () => {
    const request = buildXacmlRequest(sampleInvocation(), sampleContext());
    const nonEnvironment = [...request.subjects[0]!.attributes, ...request.resources[0]!.attributes, ...request.action.attributes];
    expect(nonEnvironment.every((a) => a.dataType === 'http://www.w3.org/2001/XMLSchema#string')).to.equal(true);
    expect(attribute(request, A.audience)?.values).to.deep.equal(['petstore-api', 'other-api']);
    expect(attribute(request, A.scope)?.values).to.deep.equal(['read', 'write']);
    expect(attribute(request, `${A.urlParameterPrefix}tag`)?.values).to.deep.equal(['a', 'b']);
  });

  it('takes clientId from azp, else client_id, and audience from a string aud', () => {
    const token = createTokenContext('t0k3n-value-xyz', 'header');
    token.introspection = { active: true, client_id: 'from-client-id', aud: 'single-aud' };
    const request = buildXacmlRequest({ ...sampleInvocation(), subject: {} }, { token });
    expect(attribute(request, A.tokenClientId)?.values).to.deep.equal(['from-client-id']);
    expect(attribute(request, A.audience)?.values).to.deep.equal(['single-aud']);
    token.introspection = { ...token.introspection, azp: 'from-azp' };
    expect(attribute(buildXacmlRequest(sampleInvocation(), { token }), A.tokenClientId)?.values).to.deep.equal(['from-azp']);
  });

  it('uses the normalized token info when the validating middleware set it', () => {
    const token = createTokenContext('t0k3n-value-xyz', 'header');
    token.introspection = { active: true, azp: 'claim-client' };
    token.info = {
      clientId: 'info-client',
      subject: 'alice',
      username: 'alice.r',
      audience: ['a1'],
      scopes: ['s1'],
      roles: ['r1'],
      userInfo: {},
    };
    const request = buildXacmlRequest(sampleInvocation(), { token });
    expect(attribute(request, A.tokenClientId)?.values).to.deep.equal(['info-client']);
    expect(attribute(request, A.credential)?.values).to.deep.equal(['alice.r']);
    expect(attribute(request, A.role)?.values).to.deep.equal(['r1']);
    expect(attribute(request, A.subjectId)?.values).to.deep.equal(['alice']);
  });

  it('keeps a path that starts with // as a path (resource-id)', () => {
    const request = buildXacmlRequest({ ...sampleInvocation(), url: '//evil.example/x?y=1' });
    expect(attribute(request, A.resourceId)?.values).to.deep.equal(['//evil.example/x']);
  });

  it('leaves out the headers the options exclude', () => {
    const request = buildXacmlRequest(sampleInvocation(), sampleContext(), { excludeHeaders: ['Accept'] });
    expect(attribute(request, `${A.headerPrefix}accept`)).to.equal(undefined);
    expect(attribute(request, `${A.headerPrefix}host`)?.values).to.deep.equal(['127.0.0.1:8080']);
  });
});
