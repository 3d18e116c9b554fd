/** The PDP as a user sees it: scenario policy, repository semantics, references, attribute sources, clock, hierarchy, index, response XML. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DOMParser } from '@xmldom/xmldom';
import { createPdp, parseRequest, toResponseXml, XacmlProcessingError, XacmlSyntaxError } from '../../src/xacml/index.js';
import type { RequestContext } from '../../src/xacml/index.js';
import {
  RESOURCE_ID,
  XS,
  apply,
  attr,
  condition,
  designator,
  policy,
  policySet,
  request,
  rule,
  target1,
  throwsSyntax,
  typed,
  val,
} from './helpers.js';

const scenario = readFileSync(new URL('./fixtures/scenario-policy.xml', import.meta.url), 'utf8');
const AUDIENCE = 'org:gateway:action:token:audience';
const CLIENT = 'org:gateway:subject:token:clientId';
const gatewayRequest = (clientId: string, audience = ['test-tool-app']): RequestContext =>
  request({
    subject: [attr(CLIENT, clientId)],
    action: [attr(AUDIENCE, ...audience)],
    resource: [attr(RESOURCE_ID, '/gw/Ente/PetStore/v1/pets')],
  });

describe('xacml PDP', () => {
  describe('the scenario policy', () => {
    it('permits a listed client with the right audience, denies others', () => {
      const pdp = createPdp({ policies: [scenario] });
      assert.equal(pdp.evaluate(gatewayRequest('client1')).results[0]!.decision, 'Permit');
      assert.equal(pdp.evaluate(gatewayRequest('client2', ['other', 'test-tool-app'])).results[0]!.decision, 'Permit');
      assert.equal(pdp.evaluate(gatewayRequest('client1', ['other'])).results[0]!.decision, 'Deny');
      const denied = pdp.evaluate(gatewayRequest('client3')).results[0]!;
      assert.deepEqual(denied, { decision: 'Deny', status: { code: 'urn:oasis:names:tc:xacml:1.0:status:ok' }, obligations: [] });
    });
    it('gives Permit to the unlisted client once it is added to the bag', () => {
      const updated = scenario.replace(
        '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>',
        '$&<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client3</AttributeValue>',
      );
      assert.notEqual(updated, scenario);
      assert.equal(createPdp({ policies: [scenario] }).evaluate(gatewayRequest('client3')).results[0]!.decision, 'Deny');
      assert.equal(createPdp({ policies: [updated] }).evaluate(gatewayRequest('client3')).results[0]!.decision, 'Permit');
    });
    it('evaluates the same request as XML and as a RequestContext', () => {
      const xml = `<Request xmlns="urn:oasis:names:tc:xacml:2.0:context:schema:os">
        <Subject><Attribute AttributeId="${CLIENT}" DataType="${XS}string"><AttributeValue>client1</AttributeValue></Attribute></Subject>
        <Resource/><Action><Attribute AttributeId="${AUDIENCE}" DataType="${XS}string"><AttributeValue>test-tool-app</AttributeValue></Attribute></Action>
        <Environment/></Request>`;
      const pdp = createPdp({ policies: [scenario] });
      assert.equal(pdp.evaluate(xml).results[0]!.decision, 'Permit');
      assert.deepEqual(pdp.evaluate(parseRequest(xml)), pdp.evaluate(xml));
    });
  });

  describe('several top-level policies (repository semantics)', () => {
    const forAction = (id: string, action: string, effect: 'Permit' | 'Deny'): string =>
      policy(
        id,
        'first-applicable',
        rule(`${id}-r`, effect),
        target1('Action', 'string-equal', action, 'urn:oasis:names:tc:xacml:1.0:action:action-id'),
      );
    const pdp = createPdp({
      policies: [forAction('read', 'read', 'Permit'), forAction('write', 'write', 'Deny'), forAction('write2', 'write', 'Permit')],
    });
    const act = (a: string): RequestContext => request({ action: [attr('urn:oasis:names:tc:xacml:1.0:action:action-id', a)] });
    it('the one whose target matches decides', () => assert.equal(pdp.evaluate(act('read')).results[0]!.decision, 'Permit'));
    it('none applicable gives NotApplicable', () => assert.equal(pdp.evaluate(act('delete')).results[0]!.decision, 'NotApplicable'));
    it('more than one applicable gives Indeterminate (processing-error) naming them', () => {
      const r = pdp.evaluate(act('write')).results[0]!;
      assert.equal(r.decision, 'Indeterminate');
      assert.equal(r.status.code, 'urn:oasis:names:tc:xacml:1.0:status:processing-error');
      assert.match(r.status.message!, /More than one top-level policy is applicable: "write" and "write2"/);
    });
  });

  describe('references', () => {
    const leaf = (id: string, effect: 'Permit' | 'Deny', version = '1.0'): string =>
      policy(id, 'first-applicable', rule('r', effect)).replace('<Policy ', `<Policy Version="${version}" `);
    const root = (refs: string): string => policySet('root', 'first-applicable', refs);
    it('resolves PolicyIdReference and PolicySetIdReference from references', () => {
      const set = policySet('set1', 'first-applicable', '<PolicyIdReference>leaf</PolicyIdReference>');
      const pdp = createPdp({
        policies: [root('<PolicySetIdReference>set1</PolicySetIdReference>')],
        references: [set, leaf('leaf', 'Deny')],
      });
      assert.equal(pdp.evaluate(request()).results[0]!.decision, 'Deny');
    });
    it('an unreferenced invalid or unreadable reference does no harm', () => {
      const broken = policy('bad', 'first-applicable', rule('r', 'Permit', condition(apply('no-such-function'))));
      const pdp = createPdp({
        policies: [root('<PolicyIdReference>leaf</PolicyIdReference>')],
        references: [broken, '<not xml', leaf('leaf', 'Permit')],
      });
      assert.equal(pdp.evaluate(request()).results[0]!.decision, 'Permit');
    });
    it('a referenced invalid policy is Indeterminate (syntax-error) only where the evaluation reaches it', () => {
      const broken = policy('bad', 'first-applicable', rule('r', 'Permit', condition(apply('no-such-function'))));
      const pdp = createPdp({
        policies: [
          policySet('root', 'first-applicable', `<PolicyIdReference>leaf</PolicyIdReference><PolicyIdReference>bad</PolicyIdReference>`),
        ],
        references: [
          broken,
          policy(
            'leaf',
            'first-applicable',
            rule('r', 'Permit', condition(apply('string-is-in', val('yes'), designator('Subject', 'go')))),
          ),
        ],
      });
      assert.equal(
        pdp.evaluate(request({ subject: [{ attributeId: 'go', dataType: `${XS}string`, values: ['yes'] }] })).results[0]!.decision,
        'Permit',
      );
      const reached = pdp.evaluate(request()).results[0]!;
      assert.equal(reached.decision, 'Indeterminate');
      assert.equal(reached.status.code, 'urn:oasis:names:tc:xacml:1.0:status:syntax-error');
      assert.match(
        reached.status.message!,
        /Referenced Policy "bad" is invalid: Unknown function .* \(referenced at \/PolicySet\[@PolicySetId="root"\]\/PolicyIdReference\[2\]\)/,
      );
    });
    it('a missing reference and a circular one are rejected', () => {
      throwsSyntax(() => createPdp({ policies: [root('<PolicyIdReference>nope</PolicyIdReference>')] }), 'No Policy "nope"');
      const loop = policySet('loop', 'first-applicable', '<PolicySetIdReference>loop</PolicySetIdReference>');
      throwsSyntax(
        () => createPdp({ policies: [root('<PolicySetIdReference>loop</PolicySetIdReference>')], references: [loop] }),
        'Circular reference',
      );
    });
    it('picks the latest version that the Version pattern allows', () => {
      const refs = [leaf('v', 'Deny', '1.0'), leaf('v', 'Permit', '1.2'), leaf('v', 'Deny', '2.0')];
      const decide = (ref: string): string =>
        createPdp({ policies: [root(ref)], references: refs }).evaluate(request()).results[0]!.decision;
      assert.equal(decide('<PolicyIdReference Version="1.+">v</PolicyIdReference>'), 'Permit');
      assert.equal(decide('<PolicyIdReference>v</PolicyIdReference>'), 'Deny');
      assert.equal(decide('<PolicyIdReference LatestVersion="1.5">v</PolicyIdReference>'), 'Permit');
    });
  });

  describe('attribute sources and the clock', () => {
    it('asks attributeFinder for attributes the request lacks, not for those it has', () => {
      const asked: string[] = [];
      const pdp = createPdp({
        policies: [
          policy(
            'p',
            'first-applicable',
            rule('r', 'Permit', condition(apply('string-is-in', val('doctor'), designator('Subject', 'role')))),
          ),
        ],
        attributeFinder: (q) => {
          asked.push(`${q.category} ${q.attributeId} ${q.subjectCategory}`);
          return ['doctor'];
        },
      });
      assert.equal(pdp.evaluate(request()).results[0]!.decision, 'Permit');
      assert.deepEqual(asked, ['subject role urn:oasis:names:tc:xacml:1.0:subject-category:access-subject']);
      assert.equal(pdp.evaluate(request({ subject: [attr('role', 'nurse')] })).results[0]!.decision, 'NotApplicable');
      assert.equal(asked.length, 1);
    });
    it('a failing attributeFinder gives Indeterminate, not an exception', () => {
      const pdp = createPdp({
        policies: [
          policy('p', 'first-applicable', rule('r', 'Permit', condition(apply('string-is-in', val('x'), designator('Subject', 'role'))))),
        ],
        attributeFinder: () => {
          throw new Error('directory down');
        },
      });
      const r = pdp.evaluate(request()).results[0]!;
      assert.equal(r.decision, 'Indeterminate');
      assert.match(r.status.message!, /directory down/);
    });
    it('supplies current-time/date/dateTime once per request, never overriding the request', () => {
      let reads = 0;
      const instant = new Date('2030-01-02T10:00:00Z');
      const ENV = 'urn:oasis:names:tc:xacml:1.0:environment:';
      const dt = designator('Environment', `${ENV}current-dateTime`, 'dateTime');
      const cond = apply(
        'and',
        apply('dateTime-equal', apply('dateTime-one-and-only', dt), apply('dateTime-one-and-only', dt)),
        apply('integer-equal', apply('date-bag-size', designator('Environment', `${ENV}current-date`, 'date')), val('1', 'integer')),
        apply(
          'date-greater-than',
          apply('date-one-and-only', designator('Environment', `${ENV}current-date`, 'date')),
          val('2029-12-31', 'date'),
        ),
      );
      const pdp = createPdp({
        policies: [policy('p', 'first-applicable', rule('r', 'Permit', condition(cond)))],
        now: () => {
          reads++;
          return instant;
        },
      });
      assert.equal(pdp.evaluate(request()).results[0]!.decision, 'Permit');
      assert.equal(reads, 1);
      // The request's own current-date wins over the clock.
      const own = pdp.evaluate(request({ environment: [typed(`${ENV}current-date`, 'date', '2000-01-01')] })).results[0]!;
      assert.equal(own.decision, 'NotApplicable');
    });
  });

  describe('hierarchical resources', () => {
    const tree: Record<string, string[]> = { a: ['a/1', 'a/2'], 'a/1': ['a/1/x'], 'a/2': [], 'a/1/x': [] };
    const pdp = createPdp({
      policies: [
        policy(
          'p',
          'first-applicable',
          rule('r', 'Permit', condition(apply('not', apply('string-is-in', val('a/2'), designator('Resource', RESOURCE_ID))))) +
            rule('d', 'Deny'),
        ),
      ],
      resourceChildren: (id) => tree[id] ?? [],
    });
    const scoped = (scope: string): RequestContext =>
      request({ resource: [attr(RESOURCE_ID, 'a'), attr('urn:oasis:names:tc:xacml:1.0:resource:scope', scope)] });
    it('Descendants gives one Result per node (depth-first) with its ResourceId', () => {
      const r = pdp.evaluate(scoped('Descendants')).results;
      assert.deepEqual(
        r.map((x) => [x.resourceId, x.decision]),
        [
          ['a', 'Permit'],
          ['a/1', 'Permit'],
          ['a/1/x', 'Permit'],
          ['a/2', 'Deny'],
        ],
      );
    });
    it('Children and Immediate', () => {
      assert.deepEqual(
        pdp.evaluate(scoped('Children')).results.map((x) => x.resourceId),
        ['a', 'a/1', 'a/2'],
      );
      assert.deepEqual(
        pdp.evaluate(scoped('Immediate')).results.map((x) => x.resourceId),
        ['a'],
      );
    });
    it('a scope without resourceChildren is Indeterminate', () => {
      const plain = createPdp({ policies: [policy('p', 'first-applicable', rule('r', 'Permit'))] });
      const r = plain.evaluate(scoped('Descendants')).results;
      assert.equal(r.length, 1);
      assert.equal(r[0]!.decision, 'Indeterminate');
    });
  });

  describe('a PolicySet of 1,000 policies indexed by resource-id', () => {
    const children = (n: number): string =>
      Array.from({ length: n }, (_, i) =>
        policy(
          `p${i}`,
          'first-applicable',
          rule('r', i % 2 ? 'Deny' : 'Permit'),
          target1('Resource', 'string-equal', `/r/${i % 500}`, RESOURCE_ID),
        ).replace(/ xmlns="[^"]*"/, ''),
      ).join('');
    const other = policy(
      'catch-all',
      'first-applicable',
      rule('r', 'Deny', condition(apply('string-is-in', val('/r/7'), designator('Resource', RESOURCE_ID)))),
    ).replace(/ xmlns="[^"]*"/, '');
    const indexed = createPdp({
      policies: [policySet('big', 'first-applicable', children(400) + other + children(1000).replace(/p(\d+)"/g, 'q$1"'))],
    });
    // The same decisions without the index: a tiny set is never indexed, so compare with direct evaluation.
    const expected = (id: string): string => {
      const n = Number(id.slice(3));
      if (n < 400) return n % 2 ? 'Deny' : 'Permit';
      if (n === 7) return 'Deny';
      return n % 2 ? 'Deny' : 'Permit';
    };
    it('keeps first-applicable order across indexed and other children', () => {
      for (const id of ['/r/0', '/r/1', '/r/7', '/r/450', '/r/499', '/r/399']) {
        assert.equal(indexed.evaluate(request({ resource: [attr(RESOURCE_ID, id)] })).results[0]!.decision, expected(id), id);
      }
      assert.equal(indexed.evaluate(request({ resource: [attr(RESOURCE_ID, '/nothing')] })).results[0]!.decision, 'NotApplicable');
    });
    it('handles several resource-id values and an absent one', () => {
      assert.equal(indexed.evaluate(request({ resource: [attr(RESOURCE_ID, '/nothing', '/r/3')] })).results[0]!.decision, 'Deny');
      assert.equal(indexed.evaluate(request()).results[0]!.decision, 'NotApplicable');
    });
    it('only-one-applicable still sees two applicable policies', () => {
      const set = createPdp({ policies: [policySet('s', 'only-one-applicable', children(1000))] });
      assert.equal(set.evaluate(request({ resource: [attr(RESOURCE_ID, '/r/3')] })).results[0]!.decision, 'Indeterminate');
    });
  });

  describe('response XML', () => {
    it('serializes decision, status, ResourceId and obligations in the 2.0 namespaces', () => {
      const xml = toResponseXml({
        results: [
          {
            resourceId: 'a&b',
            decision: 'Permit',
            status: { code: 'urn:oasis:names:tc:xacml:1.0:status:ok', message: '<ok>' },
            obligations: [{ id: 'ob', fulfillOn: 'Permit', assignments: [{ attributeId: 'x', dataType: `${XS}string`, value: 'v<1>' }] }],
          },
        ],
      });
      const doc = new DOMParser().parseFromString(xml, 'text/xml');
      const result = doc.getElementsByTagNameNS('urn:oasis:names:tc:xacml:2.0:context:schema:os', 'Result')[0]!;
      assert.equal(result.getAttribute('ResourceId'), 'a&b');
      assert.equal(doc.getElementsByTagNameNS('urn:oasis:names:tc:xacml:2.0:context:schema:os', 'Decision')[0]!.textContent, 'Permit');
      assert.equal(doc.getElementsByTagNameNS('urn:oasis:names:tc:xacml:2.0:context:schema:os', 'StatusMessage')[0]!.textContent, '<ok>');
      const a = doc.getElementsByTagNameNS('urn:oasis:names:tc:xacml:2.0:policy:schema:os', 'AttributeAssignment')[0]!;
      assert.equal(a.textContent, 'v<1>');
    });
  });

  describe('options', () => {
    it('are validated at createPdp', () => {
      assert.throws(() => createPdp({ policies: [] }), TypeError);
      assert.throws(() => createPdp({ policies: [scenario], now: 1 as never }), /options\.now/);
      assert.throws(() => createPdp({ policies: [scenario], attributeFinder: 'x' as never }), /attributeFinder/);
      const cases: Array<[unknown, string]> = [
        [undefined, 'createPdp: options must be an object'],
        [{ policies: 'x' }, 'createPdp: options.policies must be a non-empty array of XML strings'],
        [{ policies: [scenario], references: [1] }, 'createPdp: options.references must be an array of XML strings'],
        [{ policies: [scenario], resourceChildren: {} }, 'createPdp: options.resourceChildren must be a function'],
        [{ policies: [scenario], now: 1 }, 'createPdp: options.now must be a function'],
        [{ policies: [scenario], limits: 5 }, 'createPdp: options.limits must be an object'],
        [{ policies: [scenario], limits: { maxSize: 0.5 } }, 'createPdp: options.limits.maxSize must be a positive integer'],
        [{ policies: [scenario], maxXPathAttributes: 1.5 }, 'createPdp: options.maxXPathAttributes must be a non-negative integer'],
      ];
      for (const [options, message] of cases) {
        assert.throws(
          () => createPdp(options as never),
          (e: unknown) => e instanceof TypeError && e.message === message && (e as { code?: string }).code === 'ERR_INVALID_OPTION',
          message,
        );
      }
    });
    it('a non-XACML document is rejected', () => {
      throwsSyntax(
        () => createPdp({ policies: ['<Policy PolicyId="x" RuleCombiningAlgId="y"/>'] }),
        'not in the XACML 2.0 policy namespace',
      );
      assert.ok(new XacmlSyntaxError('m', '/p') instanceof Error);
    });
    it('errors carry stable codes', () => {
      assert.throws(
        () => createPdp({ policies: ['<Policy/>'] }),
        (e: unknown) => e instanceof XacmlSyntaxError && e.code === 'ERR_XACML_SYNTAX',
      );
      assert.equal(new XacmlSyntaxError('m').code, 'ERR_XACML_SYNTAX');
      assert.equal(new XacmlProcessingError('m').code, 'ERR_XACML_PROCESSING');
      assert.equal(new XacmlProcessingError('m').name, 'XacmlProcessingError');
    });
  });
});
