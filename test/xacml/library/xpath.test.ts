import { expect } from 'chai';
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
    expect(xml).to.equal(
      `<Request xmlns="${CTX}"><Subject SubjectCategory="c"><Attribute AttributeId="a&quot;&lt;" DataType="${S}" Issuer="me">` +
        '<AttributeValue>x&amp;y</AttributeValue><AttributeValue>&lt;z&gt;</AttributeValue></Attribute></Subject>' +
        '<Action></Action><Environment></Environment></Request>',
    );
  });

  it('selects text nodes and attributes with absolute paths and policy prefixes (IIIF001)', () => {
    expect(selectValues(doc, '//md:record/md:patient_info/md:name/text()', ns)).to.deep.equal(['Bart Simpson']);
    expect(selectValues(doc, '//md:record/md:diagnosis_info/md:pathological_diagnosis/md:malignancy/@type', ns)).to.deep.equal(['yes']);
    expect(selectValues(doc, '//md:record/md:diagnosis_info/md:diagnosis/md:item/text()', ns)).to.deep.equal([
      'Gastric Cancer',
      'Hyper tension',
    ]);
    expect(selectValues(doc, '//md:nothing/text()', ns)).to.deep.equal([]);
  });

  it('evaluates relative paths with <Request> as the context node (IIIF007)', () => {
    const base = './xacml-context:Resource/xacml-context:ResourceContent/md:record';
    expect(selectValues(doc, `${base}/md:patient_info/md:name/text()`, ns)).to.deep.equal(['Bart Simpson']);
    expect(selectValues(doc, 'xacml-context:Action/xacml-context:Attribute/xacml-context:AttributeValue', ns)).to.deep.equal(['read']);
    expect(selectValues(doc, `${base}/md:patient_info`, ns)).to.deep.equal(['Bart Simpson60']); // element text
    expect(selectValues(doc, `count(${base}//md:name)`, ns)).to.deep.equal(['2']);
  });

  it('xpath-node-count counts the selected nodes (IIIG001, IIIG006)', () => {
    expect(xpathNodeCount(doc, ATTRIBUTES, ns)).to.equal(4n);
    expect(xpathNodeCount(doc, './xacml-context:Resource/xacml-context:ResourceContent/md:record//md:name', ns)).to.equal(2n);
    expect(() => xpathNodeCount(doc, 'count(//md:name)', ns)).to.throw(XacmlProcessingError, /does not select nodes/);
  });

  it('xpath-node-equal is node identity between the two node-sets (IIIG002, IIIG006)', () => {
    expect(xpathNodeEqual(doc, ATTRIBUTES, SUBJECT_ATTRIBUTES, ns)).to.equal(true);
    expect(xpathNodeEqual(doc, './xacml-context:Resource/xacml-context:ResourceContent/md:record', '//md:record', ns)).to.equal(true);
    expect(xpathNodeEqual(doc, '//xacml-context:Subject', SUBJECT_ATTRIBUTES, ns)).to.equal(false);
  });

  it('xpath-node-match also accepts descendants and their attributes (IIIG004, IIIG005, IIIG006)', () => {
    expect(xpathNodeMatch(doc, '/', SUBJECT_ATTRIBUTES, ns)).to.equal(true);
    expect(xpathNodeMatch(doc, `//*[local-name()='Resource'][namespace-uri()='${CTX}']`, SUBJECT_ATTRIBUTES, ns)).to.equal(false);
    expect(xpathNodeMatch(doc, '.', './xacml-context:Resource/xacml-context:ResourceContent/md:record', ns)).to.equal(true);
    expect(xpathNodeMatch(doc, '//md:diagnosis_info', '//md:item/@type', ns)).to.equal(true);
    expect(xpathNodeMatch(doc, '//md:malignancy', '//md:malignancy/@type', ns)).to.equal(true);
    // a//* selects elements only: a text node below a is not matched.
    expect(xpathNodeMatch(doc, '//md:patient_info', '//md:patient_info/md:name/text()', ns)).to.equal(false);
    expect(xpathNodeMatch(doc, '//md:patient_info', '//md:diagnosis_info//md:item', ns)).to.equal(false);
  });

  it('reports syntax errors, unknown prefixes and malformed content as processing errors (IIIF005)', () => {
    expect(() => selectValues(doc, '//md:record[', ns)).to.throw(XacmlProcessingError, /invalid XPath expression/);
    expect(() => selectValues(doc, '//zz:record', ns)).to.throw(XacmlProcessingError, /zz/);
    const broken: RequestContext = { ...request, resources: [{ attributes: [], resourceContent: '<ResourceContent><a></ResourceContent>' }] };
    expect(() => requestDocument(broken)).to.throw(XacmlProcessingError, /well-formed/);
  });

  it('reuses the parsed expression for the same namespace map', () => {
    const fixed = { md: MD };
    expect(selectValues(doc, '//md:age/text()', fixed)).to.deep.equal(['60']);
    expect(selectValues(doc, '//md:age/text()', fixed)).to.deep.equal(['60']);
    expect(selectValues(requestDocument({ ...request, resources: [] }), '//md:age/text()', fixed)).to.deep.equal([]);
  });
});
