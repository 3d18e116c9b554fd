/** Hostile and invalid documents: rejected quickly with XacmlSyntaxError, never a hang or a crash. */
import assert from 'node:assert/strict';
import { createPdp, parseRequest, XacmlSyntaxError } from '../../src/xacml/index.js';
import { NS, apply, condition, designator, policy, rule, throwsSyntax, val } from './helpers.js';

const ok = policy('p', 'first-applicable', rule('r', 'Permit'));
const CTX = 'urn:oasis:names:tc:xacml:2.0:context:schema:os';

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<Policy xmlns="${NS}" PolicyId="&lol9;" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable"><Target/></Policy>`;

const hostile: Array<[string, string, string]> = [
  ['a DOCTYPE', `<!DOCTYPE Policy SYSTEM "file:///etc/passwd">${ok}`, 'DOCTYPE'],
  ['the billion laughs', billionLaughs, 'DOCTYPE'],
  ['an ENTITY declaration without DOCTYPE', `<!ENTITY x "y">${ok}`, 'ENTITY'],
  ['an undeclared entity reference', ok.replace('PolicyId="p"', 'PolicyId="&xxe;"'), 'entities are not supported'],
  ['deep nesting', `<Policy xmlns="${NS}">${'<a>'.repeat(100_000)}${'</a>'.repeat(100_000)}</Policy>`, 'nesting deeper than 64'],
  ['an oversize document', `${ok}<!--${'x'.repeat(4 * 1024 * 1024)}-->`, 'larger than'],
  ['malformed XML', '<Policy><Rule></Policy>', 'Malformed XML'],
  ['4 MiB of unterminated tags', '<a'.repeat(2 * 1024 * 1024 - 10), 'Malformed XML'],
  ['4 MiB of unterminated comments', '<!--'.repeat(1024 * 1024 - 10), 'Malformed XML'],
  ['4 MiB of unterminated quotes', `<Policy xmlns="${NS}">${'<a b="'.repeat(600_000)}`, 'Malformed XML'],
  [
    '300,000 attributes on one element',
    `<Policy xmlns="${NS}" ${Array.from({ length: 300_000 }, (_, i) => `a${i}="1"`).join(' ')}/>`,
    'without PolicyId',
  ],
  ['two root elements', `${ok}${ok}`, 'root'],
];

describe('xacml safety', () => {
  for (const [name, xml, message] of hostile) {
    it(`rejects ${name} in a policy`, () => throwsSyntax(() => createPdp({ policies: [xml] }), message));
  }

  it('rejects a DOCTYPE or deep nesting in a request: parseRequest throws, evaluate answers Indeterminate syntax-error', () => {
    const pdp = createPdp({ policies: [ok] });
    for (const xml of [
      `<!DOCTYPE Request [<!ENTITY a "b">]><Request xmlns="${CTX}"/>`,
      `<Request xmlns="${CTX}">${'<Subject>'.repeat(1000)}${'</Subject>'.repeat(1000)}</Request>`,
    ]) {
      assert.throws(() => parseRequest(xml), XacmlSyntaxError);
      const r = pdp.evaluate(xml).results[0]!;
      assert.equal(r.decision, 'Indeterminate');
      assert.equal(r.status.code, 'urn:oasis:names:tc:xacml:1.0:status:syntax-error');
    }
  });

  it('decodes the five XML entities and character references, nothing else', () => {
    const req = parseRequest(
      `<Request xmlns="${CTX}"><Subject><Attribute AttributeId="a&amp;b" DataType="x"><AttributeValue>&lt;&#65;&#x42;&quot;&apos;&gt;</AttributeValue></Attribute></Subject><Environment/></Request>`,
    );
    assert.deepEqual(req.subjects[0]!.attributes[0], { attributeId: 'a&b', dataType: 'x', values: [`<AB"'>`] });
  });

  it('honours custom limits', () => {
    throwsSyntax(() => createPdp({ policies: [ok], limits: { maxSize: 100 } }), 'larger than 100');
    throwsSyntax(() => createPdp({ policies: [ok], limits: { maxDepth: 1 } }), 'nesting deeper than 1');
  });

  it('reads a request with ResourceContent for selectors, keeping its namespaces', () => {
    const req = parseRequest(
      `<Request xmlns="${CTX}" xmlns:md="urn:md"><Resource><ResourceContent><md:r a="1">t</md:r></ResourceContent></Resource><Action/><Environment/></Request>`,
    );
    const content = req.resources[0]!.resourceContent!;
    assert.match(
      content,
      /^<ResourceContent xmlns="urn:oasis:names:tc:xacml:2.0:context:schema:os" xmlns:md="urn:md"><md:r a="1">t<\/md:r><\/ResourceContent>$/,
    );
  });

  it('rejects an invalid request attribute with its path', () => {
    throwsSyntax(
      () =>
        parseRequest(
          `<Request xmlns="${CTX}"><Subject/><Action><Attribute DataType="x"><AttributeValue>v</AttributeValue></Attribute></Action></Request>`,
        ),
      '<Attribute> without AttributeId',
      '/Request/Action/Attribute[1]',
    );
  });

  describe('invalid policies name the offending element', () => {
    const set = (body: string): string =>
      `<PolicySet xmlns="${NS}" PolicySetId="x" PolicyCombiningAlgId="urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:first-applicable"><Target/>${body}</PolicySet>`;
    const inner = (cond: string): string =>
      policy('p1', 'first-applicable', rule('r', 'Permit', condition(cond))).replace(/ xmlns="[^"]*"/, '');
    it('a non-boolean Condition', () => {
      throwsSyntax(
        () => createPdp({ policies: [set(`${inner(val('x'))}`)] }),
        'must be a boolean expression',
        '/PolicySet[@PolicySetId="x"]/Policy[@PolicyId="p1"]/Rule[@RuleId="r"]/Condition',
      );
    });
    it('a Policy without PolicyId, second of its siblings', () => {
      const noId = inner(apply('and')).replace(' PolicyId="p1"', '');
      throwsSyntax(
        () => createPdp({ policies: [set(inner(apply('and')) + noId)] }),
        'without PolicyId',
        '/PolicySet[@PolicySetId="x"]/Policy[2]',
      );
    });
    it('a wrong argument type deep in a Condition', () => {
      throwsSyntax(
        () => createPdp({ policies: [set(inner(apply('and', apply('integer-equal', val('1', 'integer'), val('1')))))] }),
        'Argument 2 of urn:oasis:names:tc:xacml:1.0:function:integer-equal must be integer, not string',
        '/PolicySet[@PolicySetId="x"]/Policy[@PolicyId="p1"]/Rule[@RuleId="r"]/Condition/Apply[1]/Apply[1]',
      );
    });
    it('a designator without AttributeId, an unknown element, a bad Effect', () => {
      throwsSyntax(
        () =>
          createPdp({
            policies: [
              policy('p', 'first-applicable', rule('r', 'Permit', condition(apply('string-is-in', val('a'), designator('Subject', ''))))),
            ],
          }),
        'without AttributeId',
        '/Policy[@PolicyId="p"]/Rule[@RuleId="r"]/Condition/Apply[1]/SubjectAttributeDesignator[1]',
      );
      throwsSyntax(
        () => createPdp({ policies: [policy('p', 'first-applicable', '<Bogus/>')] }),
        'Unexpected <Bogus>',
        '/Policy[@PolicyId="p"]/Bogus[1]',
      );
      throwsSyntax(
        () => createPdp({ policies: [policy('p', 'first-applicable', rule('r', 'Maybe' as 'Permit'))] }),
        'Effect must be Permit or Deny',
      );
    });
  });
});
