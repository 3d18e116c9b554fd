/** toRequestXml: the request context as XACML 2.0 request XML, read back the same by parseRequest. */
import assert from 'node:assert/strict';
import { ACCESS_SUBJECT, parseRequest, toRequestXml, XS_STRING } from '../../src/xacml/index.js';
import type { RequestContext } from '../../src/xacml/index.js';

describe('toRequestXml', () => {
  const request: RequestContext = {
    subjects: [
      {
        subjectCategory: ACCESS_SUBJECT,
        attributes: [{ attributeId: 'urn:oasis:names:tc:xacml:1.0:subject:subject-id', dataType: XS_STRING, values: ['client1'] }],
      },
      { subjectCategory: 'urn:example:intermediary', attributes: [] },
    ],
    resources: [
      { attributes: [{ attributeId: 'urn:oasis:names:tc:xacml:1.0:resource:resource-id', dataType: XS_STRING, values: ['/pet/1'] }] },
    ],
    action: {
      attributes: [
        { attributeId: 'org:gateway:action:transport:header:x-note', dataType: XS_STRING, issuer: 'a"b', values: ['<&>', 'two'] },
      ],
    },
    environment: { attributes: [] },
  };

  it('writes the XACML 2.0 context namespace once, escapes values, and reads back as the same context', () => {
    const xml = toRequestXml(request);
    assert.match(xml, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<Request xmlns="urn:oasis:names:tc:xacml:2\.0:context:schema:os">/);
    assert.ok(xml.includes('<AttributeValue>&lt;&amp;&gt;</AttributeValue>'));
    assert.ok(xml.includes('Issuer="a&quot;b"'));
    assert.ok(xml.includes('<Subject SubjectCategory="urn:example:intermediary"/>'));
    const back = parseRequest(xml);
    assert.deepEqual(
      back.subjects.map((s) => [s.subjectCategory, s.attributes]),
      request.subjects.map((s) => [s.subjectCategory, s.attributes]),
    );
    assert.deepEqual(back.resources[0]!.attributes, request.resources[0]!.attributes);
    assert.deepEqual(back.action.attributes, request.action.attributes);
    assert.deepEqual(back.environment.attributes, []);
  });
});
