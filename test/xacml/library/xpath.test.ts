import assert from 'node:assert/strict';
import { XacmlProcessingError } from '../../../src/xacml/functions/index.js';
import type { RequestContext } from '../../../src/xacml/request-context.js';
import {
  requestDocument,
  requestXml,
  selectValues,
  xpathNodeCount,
  xpathNodeEqual,
  xpathNodeMatch,
} from '../../../src/xacml/xpath.js';

const S = 'http://www.w3.org/2001/XMLSchema#string';
const CTX = 'urn:oasis:names:tc:xacml:2.0:context:schema:os';
const MD = 'http://www.medico.com/schemas/record';

// The request of conformance tests IIIF001/IIIG006 (ResourceContent as the request parser keeps
// it: the element with the namespaces in scope declared on it).
const request: RequestContext = {
  subjects: [
    {
      subjectCategory: 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject',
      attributes: [
        { attributeId: 'urn:oasis:names:tc:xacml:1.0:subject:subject-id', dataType: S, values: ['Julius Hibbert'] },
        { attributeId: 'urn:oasis:names:tc:xacml:2.0:conformance-test:some-attribute', dataType: S, values: ['riddle me this'] },
      ],
    },
  ],
  resources: [
    {
      resourceContent:
        `<ResourceContent xmlns="${CTX}" xmlns:md="${MD}"><md:record>` +
        '<md:hospital_info><md:name>ABC Hospital</md:name></md:hospital_info>' +
        '<md:patient_info><md:name>Bart Simpson</md:name><md:age>60</md:age></md:patient_info>' +
        '<md:diagnosis_info><md:diagnosis><md:item type="primary">Gastric Cancer</md:item>' +
        '<md:item type="secondary">Hyper tension</md:item></md:diagnosis>' +
        '<md:pathological_diagnosis><md:malignancy type="yes"/></md:pathological_diagnosis></md:diagnosis_info>' +
        '</md:record></ResourceContent>',
      attributes: [
        {
          attributeId: 'urn:oasis:names:tc:xacml:1.0:resource:resource-id',
          dataType: 'http://www.w3.org/2001/XMLSchema#anyURI',
          values: ['http://medico.com/record/patient/BartSimpson'],
        },
      ],
    },
  ],
  action: { attributes: [{ attributeId: 'urn:oasis:names:tc:xacml:1.0:action:action-id', dataType: S, values: ['read'] }] },
  environment: { attributes: [] },
};

const ns = { 'xacml-context': CTX, md: MD };
const ATTRIBUTES = `//*[local-name()='Attribute'][namespace-uri()='${CTX}']`;
const SUBJECT_ATTRIBUTES = `//*[local-name()='Subject'][namespace-uri()='${CTX}']/*[local-name()='Attribute'][namespace-uri()='${CTX}']`;

describe('xacml XPath over the request context', () => {
  const doc = requestDocument(request);

  it('serializes the request as an XACML 2.0 context document, escaping values', () => {
    const xml = requestXml({
      subjects: [{ subjectCategory: 'c', attributes: [{ attributeId: 'a"<', dataType: S, issuer: 'me', values: ['x&y', '<z>'] }] }],
      resources: [],
      action: { attributes: [] },
      environment: { attributes: [] },
    });
    assert.equal(xml, `<Request xmlns="${CTX}"><Subject SubjectCategory="c"><Attribute AttributeId="a&quot;&lt;" DataType="${S}" Issuer="me">` +
        '<AttributeValue>x&amp;y</AttributeValue><AttributeValue>&lt;z&gt;</AttributeValue></Attribute></Subject>' +
        '<Action></Action><Environment></Environment></Request>');
  });

  it('selects text nodes and attributes with absolute paths and policy prefixes (IIIF001)', () => {
    assert.deepEqual(selectValues(doc, '//md:record/md:patient_info/md:name/text()', ns), ['Bart Simpson']);
    assert.deepEqual(selectValues(doc, '//md:record/md:diagnosis_info/md:pathological_diagnosis/md:malignancy/@type', ns), ['yes']);
    assert.deepEqual(selectValues(doc, '//md:record/md:diagnosis_info/md:diagnosis/md:item/text()', ns), [
      'Gastric Cancer',
      'Hyper tension',
    ]);
    assert.deepEqual(selectValues(doc, '//md:nothing/text()', ns), []);
  });

  it('evaluates relative paths with <Request> as the context node (IIIF007)', () => {
    const base = './xacml-context:Resource/xacml-context:ResourceContent/md:record';
    assert.deepEqual(selectValues(doc, `${base}/md:patient_info/md:name/text()`, ns), ['Bart Simpson']);
    assert.deepEqual(selectValues(doc, 'xacml-context:Action/xacml-context:Attribute/xacml-context:AttributeValue', ns), ['read']);
    assert.deepEqual(selectValues(doc, `${base}/md:patient_info`, ns), ['Bart Simpson60']); // element text
    assert.deepEqual(selectValues(doc, `count(${base}//md:name)`, ns), ['2']);
  });

  it('xpath-node-count counts the selected nodes (IIIG001, IIIG006)', () => {
    assert.equal(xpathNodeCount(doc, ATTRIBUTES, ns), 4n);
    assert.equal(xpathNodeCount(doc, './xacml-context:Resource/xacml-context:ResourceContent/md:record//md:name', ns), 2n);
    assert.throws(() => xpathNodeCount(doc, 'count(//md:name)', ns), (e: unknown) => e instanceof XacmlProcessingError && /does not select nodes/.test(e.message));
  });

  it('xpath-node-equal is node identity between the two node-sets (IIIG002, IIIG006)', () => {
    assert.equal(xpathNodeEqual(doc, ATTRIBUTES, SUBJECT_ATTRIBUTES, ns), true);
    assert.equal(xpathNodeEqual(doc, './xacml-context:Resource/xacml-context:ResourceContent/md:record', '//md:record', ns), true);
    assert.equal(xpathNodeEqual(doc, '//xacml-context:Subject', SUBJECT_ATTRIBUTES, ns), false);
  });

  it('xpath-node-match also accepts descendants and their attributes (IIIG004, IIIG005, IIIG006)', () => {
    assert.equal(xpathNodeMatch(doc, '/', SUBJECT_ATTRIBUTES, ns), true);
    assert.equal(xpathNodeMatch(doc, `//*[local-name()='Resource'][namespace-uri()='${CTX}']`, SUBJECT_ATTRIBUTES, ns), false);
    assert.equal(xpathNodeMatch(doc, '.', './xacml-context:Resource/xacml-context:ResourceContent/md:record', ns), true);
    assert.equal(xpathNodeMatch(doc, '//md:diagnosis_info', '//md:item/@type', ns), true);
    assert.equal(xpathNodeMatch(doc, '//md:malignancy', '//md:malignancy/@type', ns), true);
    // a//* selects elements only: a text node below a is not matched.
    assert.equal(xpathNodeMatch(doc, '//md:patient_info', '//md:patient_info/md:name/text()', ns), false);
    assert.equal(xpathNodeMatch(doc, '//md:patient_info', '//md:diagnosis_info//md:item', ns), false);
  });

  it('reports syntax errors, unknown prefixes and malformed content as processing errors (IIIF005)', () => {
    assert.throws(() => selectValues(doc, '//md:record[', ns), (e: unknown) => e instanceof XacmlProcessingError && /invalid XPath expression/.test(e.message));
    assert.throws(() => selectValues(doc, '//zz:record', ns), (e: unknown) => e instanceof XacmlProcessingError && /zz/.test(e.message));
    const broken: RequestContext = { ...request, resources: [{ attributes: [], resourceContent: '<ResourceContent><a></ResourceContent>' }] };
    assert.throws(() => requestDocument(broken), (e: unknown) => e instanceof XacmlProcessingError && /well-formed/.test(e.message));
  });

  it('reuses the parsed expression for the same namespace map', () => {
    const fixed = { md: MD };
    assert.deepEqual(selectValues(doc, '//md:age/text()', fixed), ['60']);
    assert.deepEqual(selectValues(doc, '//md:age/text()', fixed), ['60']);
    assert.deepEqual(selectValues(requestDocument({ ...request, resources: [] }), '//md:age/text()', fixed), []);
  });
});
