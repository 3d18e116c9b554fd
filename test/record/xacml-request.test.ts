/** A recorded XACML request read back for the evaluator, and refused when it is not one. */
import { expect } from 'chai';
import { toXacmlRequest, xacmlRequestOf, type RecordedXacmlRequest } from '../../src/index.js';
import { ACCESS_SUBJECT } from '../../src/xacml/index.js';

describe('xacmlRequestOf', () => {
  it('gives back the request context: types, issuers and subject categories kept', () => {
    const recorded: RecordedXacmlRequest = {
      subject: [
        { id: 'org:gateway:subject:token:clientId', values: ['client3'] },
        { id: 'role', values: ['a', 'b'], subjectCategory: 'urn:example:intermediary', issuer: 'idp' },
      ],
      resource: [{ id: 'urn:oasis:names:tc:xacml:1.0:resource:resource-id', values: ['/pet'] }],
      action: [],
      environment: [
        {
          id: 'urn:oasis:names:tc:xacml:1.0:environment:current-time',
          values: ['10:00:00Z'],
          dataType: 'http://www.w3.org/2001/XMLSchema#time',
        },
      ],
    };
    const request = xacmlRequestOf({ authorization: { decision: 'Deny', statusCode: 'ok', text: 'x', request: recorded } })!;
    expect(request.subjects.map((s) => s.subjectCategory)).to.deep.equal([ACCESS_SUBJECT, 'urn:example:intermediary']);
    expect(request.subjects[1]!.attributes).to.deep.equal([
      { attributeId: 'role', dataType: 'http://www.w3.org/2001/XMLSchema#string', values: ['a', 'b'], issuer: 'idp' },
    ]);
    expect(request.environment.attributes[0]!.dataType).to.equal('http://www.w3.org/2001/XMLSchema#time');
    expect(request.resources).to.deep.equal([
      {
        attributes: [
          {
            attributeId: 'urn:oasis:names:tc:xacml:1.0:resource:resource-id',
            dataType: 'http://www.w3.org/2001/XMLSchema#string',
            values: ['/pet'],
          },
        ],
      },
    ]);
  });

  it('is undefined without a recorded request (a Permit, no authorization)', () => {
    expect(xacmlRequestOf({})).to.equal(undefined);
    expect(xacmlRequestOf({ authorization: { decision: 'Permit', statusCode: 'ok', text: 'x' } })).to.equal(undefined);
  });

  it('refuses what is not a recorded request, naming the field', () => {
    expect(() => toXacmlRequest({ subject: [{ id: 'x', values: [1] }] } as unknown as RecordedXacmlRequest)).to.throw(
      TypeError,
      'request.subject[0].values must be an array of strings',
    );
    expect(() => toXacmlRequest({ action: 'x' } as unknown as RecordedXacmlRequest)).to.throw(TypeError, 'request.action must be an array');
    expect(() => toXacmlRequest(null as unknown as RecordedXacmlRequest)).to.throw(TypeError);
  });
});
