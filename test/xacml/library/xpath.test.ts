import assert from 'node:assert/strict';
import { XacmlProcessingError } from '../../../src/xacml/errors.js';
import type { RequestContext } from '../../../src/xacml/request-context.js';
import { createPdp } from '../../../src/xacml/pdp.js';
import {
  directSelector,
  requestDocument,
  requestXml,
  selectAttributeValues,
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
    assert.equal(
      xml,
      `<Request xmlns="${CTX}"><Subject SubjectCategory="c"><Attribute AttributeId="a&quot;&lt;" DataType="${S}" Issuer="me">` +
        '<AttributeValue>x&amp;y</AttributeValue><AttributeValue>&lt;z&gt;</AttributeValue></Attribute></Subject>' +
        '<Action></Action><Environment></Environment></Request>',
    );
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
    assert.throws(
      () => xpathNodeCount(doc, 'count(//md:name)', ns),
      (e: unknown) => e instanceof XacmlProcessingError && /does not select nodes/.test(e.message),
    );
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
    assert.throws(
      () => selectValues(doc, '//md:record[', ns),
      (e: unknown) => e instanceof XacmlProcessingError && /invalid XPath expression/.test(e.message),
    );
    assert.throws(
      () => selectValues(doc, '//zz:record', ns),
      (e: unknown) => e instanceof XacmlProcessingError && /zz/.test(e.message),
    );
    const broken: RequestContext = {
      ...request,
      resources: [{ attributes: [], resourceContent: '<ResourceContent><a></ResourceContent>' }],
    };
    assert.throws(
      () => requestDocument(broken),
      (e: unknown) => e instanceof XacmlProcessingError && /well-formed/.test(e.message),
    );
  });

  it('reuses the parsed expression for the same namespace map', () => {
    const fixed = { md: MD };
    assert.deepEqual(selectValues(doc, '//md:age/text()', fixed), ['60']);
    assert.deepEqual(selectValues(doc, '//md:age/text()', fixed), ['60']);
    assert.deepEqual(selectValues(requestDocument({ ...request, resources: [] }), '//md:age/text()', fixed), []);
  });

  it('answers the selectors of one attribute by id without a document, exactly as the document would', () => {
    const attr = (attributeId: string, ...values: string[]) => ({ attributeId, dataType: S, values });
    const big: RequestContext = {
      subjects: [
        { subjectCategory: 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject', attributes: [attr('id', 's1'), attr('x', 'a')] },
        { subjectCategory: 'urn:example:other', attributes: [attr('id', 's2', '')] },
      ],
      resources: [{ attributes: [attr('id', 'r1'), attr('y', 'z')] }, { attributes: [attr('id', 'r2')] }],
      action: { attributes: [attr('id', 'a1', 'a&<"2'), attr('w'), attr('id', 'a3')] },
      environment: { attributes: [attr('id', 'e1\r\n\t')] },
    };
    const paths = [
      "/xacml-context:Request/xacml-context:Subject/xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
      "./xacml-context:Resource/xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
      'xacml-context:Action/xacml-context:Attribute[@AttributeId="id"]/xacml-context:AttributeValue',
      "//xacml-context:Environment/xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
      "//xacml-context:Attribute[ @AttributeId = 'id' ]/xacml-context:AttributeValue",
      "//xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue/text()",
      "//c:Subject/c:Attribute[@AttributeId='id']/c:AttributeValue/text()",
      "//xacml-context:Attribute[@AttributeId='none']/xacml-context:AttributeValue",
    ];
    const both = { ...ns, c: CTX };
    const document = requestDocument(big);
    for (const path of paths) {
      const direct = directSelector(path, both);
      assert.ok(direct, path);
      assert.deepEqual(selectAttributeValues(big, direct), selectValues(document, path, both), path);
    }
    assert.deepEqual(selectAttributeValues(big, directSelector(paths[4]!, both)!), [
      's1',
      's2',
      '',
      'r1',
      'r2',
      'a1',
      'a&<"2',
      'a3',
      'e1\r\n\t',
    ]);
    // A `//` path may also find such elements inside ResourceContent: only the document can tell.
    assert.equal(selectAttributeValues(request, directSelector(paths[4]!, both)!), undefined);
    assert.deepEqual(selectAttributeValues(request, directSelector(paths[0]!, both)!), []);
  });

  it('leaves every other path to the document', () => {
    for (const path of [
      "//xacml-context:Attribute[starts-with(@AttributeId, 'id')]/xacml-context:AttributeValue",
      "//xacml-context:Attribute[@AttributeId='id'][1]/xacml-context:AttributeValue",
      "//xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue[2]",
      "//xacml-context:Attribute[@AttributeId='id']",
      "xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
      "/xacml-context:Request//xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
      "//md:Attribute[@AttributeId='id']/md:AttributeValue", // another namespace
      "//zz:Attribute[@AttributeId='id']/zz:AttributeValue", // an unbound prefix: the document's error
      "//Attribute[@AttributeId='id']/AttributeValue", // no namespace
      "//xacml-context:Other/xacml-context:Attribute[@AttributeId='id']/xacml-context:AttributeValue",
    ]) {
      assert.equal(directSelector(path, ns), undefined, path);
    }
  });

  it('gives a document of many attributes in document order, and refuses one over the limit', () => {
    const attributes = Array.from({ length: 1500 }, (_, i) => ({ attributeId: `h${i}`, dataType: S, values: [String(i)] }));
    const many: RequestContext = { ...request, resources: [], action: { attributes } };
    assert.throws(
      () => requestDocument(many),
      (e: unknown) => e instanceof XacmlProcessingError && /1502 attribute values, more than the 256/.test(e.message),
    );
    const values = selectValues(
      requestDocument(many, 2000),
      'xacml-context:Action/xacml-context:Attribute/xacml-context:AttributeValue',
      ns,
    );
    assert.deepEqual(
      values,
      attributes.map((a) => a.values[0]),
    );
    // Through createPdp: an XPath selector is Indeterminate past maxXPathAttributes; one by id is not.
    const selectorPolicy = (path: string): string =>
      `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" xmlns:xacml-context="${CTX}" PolicyId="p" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">` +
      `<Target/><Rule RuleId="r" Effect="Permit"><Condition><Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-is-in">` +
      `<AttributeValue DataType="${S}">1499</AttributeValue><AttributeSelector DataType="${S}" RequestContextPath="${path}"/></Apply></Condition></Rule></Policy>`;
    const byId = "//xacml-context:Action/xacml-context:Attribute[@AttributeId='h1499']/xacml-context:AttributeValue";
    const other = "//xacml-context:Attribute[starts-with(@AttributeId, 'h1499')]/xacml-context:AttributeValue";
    assert.equal(createPdp({ policies: [selectorPolicy(byId)] }).evaluate(many).results[0]!.decision, 'Permit');
    const refused = createPdp({ policies: [selectorPolicy(other)] }).evaluate(many).results[0]!;
    assert.equal(refused.decision, 'Indeterminate');
    assert.equal(refused.status.code, 'urn:oasis:names:tc:xacml:1.0:status:processing-error');
    assert.match(refused.status.message ?? '', /more than the 256 an XPath expression may read \(maxXPathAttributes\)/);
    assert.equal(createPdp({ policies: [selectorPolicy(other)], maxXPathAttributes: 2000 }).evaluate(many).results[0]!.decision, 'Permit');
    assert.throws(() => createPdp({ policies: [selectorPolicy(other)], maxXPathAttributes: -1 }), TypeError);
  });
});
