/** Expressions beyond the conformance suite: variables, Environments, 2.0 functions, non-eager functions. */
import assert from 'node:assert/strict';
import { createPdp } from '../../src/xacml/index.js';
import type { RequestContext } from '../../src/xacml/index.js';
import {
  ACTION_ID,
  FN,
  FN2,
  SUBJECT_ID,
  apply,
  assertIncludes,
  attr,
  condition,
  designator,
  policy,
  request,
  rule,
  target1,
  throwsSyntax,
  typed,
  val,
} from './helpers.js';

/** The decision of a one-rule Permit policy with this condition. */
function decide(cond: string, req: RequestContext = request(), extra = ''): { decision: string; code: string; message?: string } {
  const pdp = createPdp({ policies: [policy('p', 'deny-overrides', `${extra}${rule('r', 'Permit', condition(cond))}`)] });
  const r = pdp.evaluate(req).results[0]!;
  return { decision: r.decision, code: r.status.code.replace(/.*:/, ''), ...(r.status.message ? { message: r.status.message } : {}) };
}

const T = apply('string-equal', val('a'), val('a'));
const F = apply('string-equal', val('a'), val('b'));
/** An expression that is Indeterminate (one-and-only of an empty bag). */
const ERR = apply('string-equal', apply('string-one-and-only', designator('Subject', 'nope')), val('x'));

describe('xacml expressions', () => {
  describe('VariableDefinition / VariableReference', () => {
    const defs =
      `<VariableDefinition VariableId="isAdmin">${apply('string-is-in', val('admin'), designator('Subject', 'role'))}</VariableDefinition>` +
      `<VariableDefinition VariableId="adminReading">${apply('and', '<VariableReference VariableId="isAdmin"/>', apply('string-is-in', val('read'), designator('Action', ACTION_ID)))}</VariableDefinition>`;

    it('evaluates a reference, also through another variable', () => {
      const req = (role: string): RequestContext => request({ subject: [attr('role', role)], action: [attr(ACTION_ID, 'read')] });
      assert.equal(decide('<VariableReference VariableId="adminReading"/>', req('admin'), defs).decision, 'Permit');
      assert.equal(decide('<VariableReference VariableId="adminReading"/>', req('user'), defs).decision, 'NotApplicable');
    });

    it('rejects an undefined variable and a cycle with the element path', () => {
      throwsSyntax(
        () => decide('<VariableReference VariableId="nope"/>'),
        'undefined variable "nope"',
        '/Policy[@PolicyId="p"]/Rule[@RuleId="r"]/Condition/VariableReference[1]',
      );
      const cyc = `<VariableDefinition VariableId="a"><VariableReference VariableId="b"/></VariableDefinition><VariableDefinition VariableId="b"><VariableReference VariableId="a"/></VariableDefinition>`;
      throwsSyntax(() => decide('<VariableReference VariableId="a"/>', request(), cyc), 'refers to itself');
    });

    it('type-checks the use of a variable', () => {
      const bagVar = `<VariableDefinition VariableId="roles">${designator('Subject', 'role')}</VariableDefinition>`;
      throwsSyntax(
        () => decide('<VariableReference VariableId="roles"/>', request(), bagVar),
        'must be a boolean expression, not bag of string',
      );
    });
  });

  describe('Environments in Target', () => {
    const pdp = createPdp({
      policies: [policy('p', 'first-applicable', rule('r', 'Permit', target1('Environment', 'string-equal', 'office', 'location')))],
    });
    it('matches an environment attribute', () => {
      assert.equal(pdp.evaluate(request({ environment: [attr('location', 'office')] })).results[0]!.decision, 'Permit');
      assert.equal(pdp.evaluate(request({ environment: [attr('location', 'home')] })).results[0]!.decision, 'NotApplicable');
      assert.equal(pdp.evaluate(request()).results[0]!.decision, 'NotApplicable');
    });
  });

  describe('XACML 2.0 functions', () => {
    it('time-in-range', () => {
      const cond = apply(`${FN2}time-in-range`, val('10:00:00Z', 'time'), val('09:00:00Z', 'time'), val('17:00:00Z', 'time'));
      assert.equal(decide(cond).decision, 'Permit');
      const late = apply(`${FN2}time-in-range`, val('18:00:00Z', 'time'), val('09:00:00Z', 'time'), val('17:00:00Z', 'time'));
      assert.equal(decide(late).decision, 'NotApplicable');
    });
    it('uri-string-concatenate and anyURI-regexp-match', () => {
      const cond = apply(
        'anyURI-equal',
        apply(`${FN2}uri-string-concatenate`, val('http://a/', 'anyURI'), val('b')),
        val('http://a/b', 'anyURI'),
      );
      assert.equal(decide(cond).decision, 'Permit');
      assert.equal(decide(apply(`${FN2}anyURI-regexp-match`, val('^http://a/'), val('http://a/x', 'anyURI'))).decision, 'Permit');
    });
    it('ipAddress and dnsName data types', () => {
      const IP = 'urn:oasis:names:tc:xacml:2.0:data-type:ipAddress';
      const DNS = 'urn:oasis:names:tc:xacml:2.0:data-type:dnsName';
      const cond = apply(
        'and',
        apply(
          `${FN2}ipAddress-is-in`,
          `<AttributeValue DataType="${IP}">10.0.0.1</AttributeValue>`,
          `<SubjectAttributeDesignator AttributeId="ip" DataType="${IP}"/>`,
        ),
        apply(
          `${FN2}dnsName-regexp-match`,
          val('example\\.org$'),
          `<Apply FunctionId="${FN2}dnsName-one-and-only"><SubjectAttributeDesignator AttributeId="host" DataType="${DNS}"/></Apply>`,
        ),
      );
      const req = request({
        subject: [
          { attributeId: 'ip', dataType: IP, values: ['10.0.0.1'] },
          { attributeId: 'host', dataType: DNS, values: ['www.example.org'] },
        ],
      });
      assert.equal(decide(cond, req).decision, 'Permit');
    });
  });

  describe('and / or / n-of / not', () => {
    it('and stops at the first False (a later error does not matter), or at the first True', () => {
      assert.equal(decide(apply('and', F, ERR)).decision, 'NotApplicable');
      assert.equal(decide(apply('and', T, ERR)).decision, 'Indeterminate');
      assert.equal(decide(apply('or', T, ERR)).decision, 'Permit');
      assert.equal(decide(apply('or', F, ERR)).decision, 'Indeterminate');
      assert.equal(decide(apply('and')).decision, 'Permit');
      assert.equal(decide(apply('or')).decision, 'NotApplicable');
    });
    it('n-of stops once n arguments are True; too few arguments is a processing error', () => {
      assert.equal(decide(apply('n-of', val('2', 'integer'), T, T, ERR)).decision, 'Permit');
      assert.equal(decide(apply('n-of', val('2', 'integer'), T, F, F)).decision, 'NotApplicable');
      assert.equal(decide(apply('n-of', val('0', 'integer'))).decision, 'Permit');
      assertIncludes(decide(apply('n-of', val('3', 'integer'), T, T)), { decision: 'Indeterminate', code: 'processing-error' });
    });
    it('not', () => {
      assert.equal(decide(apply('not', F)).decision, 'Permit');
      throwsSyntax(() => decide(apply('not', val('x'))), 'must be boolean, not string');
    });
  });

  describe('higher-order bag functions', () => {
    const bag = (...v: string[]): string => apply('string-bag', ...v.map((x) => val(x)));
    const fn = (name: string): string => `<Function FunctionId="${FN}${name}"/>`;
    const cases: Array<[string, string, boolean]> = [
      ['any-of', apply('any-of', fn('string-equal'), val('b'), bag('a', 'b')), true],
      ['any-of (none)', apply('any-of', fn('string-equal'), val('c'), bag('a', 'b')), false],
      ['all-of', apply('all-of', fn('string-less-than'), val('a'), bag('b', 'c')), true],
      ['all-of (not all)', apply('all-of', fn('string-less-than'), val('b'), bag('b', 'c')), false],
      ['any-of-any', apply('any-of-any', fn('string-equal'), bag('x', 'c'), bag('a', 'c')), true],
      ['all-of-any', apply('all-of-any', fn('string-equal'), bag('a', 'c'), bag('a', 'b', 'c')), true],
      ['all-of-any (one missing)', apply('all-of-any', fn('string-equal'), bag('a', 'd'), bag('a', 'b', 'c')), false],
      ['any-of-all', apply('any-of-all', fn('string-greater-than'), bag('a', 'z'), bag('b', 'c')), true],
      ['all-of-all', apply('all-of-all', fn('string-greater-than'), bag('x', 'z'), bag('b', 'c')), true],
      ['all-of-all (not all)', apply('all-of-all', fn('string-greater-than'), bag('a', 'z'), bag('b', 'c')), false],
      ['all-of over an empty bag', apply('all-of', fn('string-equal'), val('a'), apply('string-bag')), true],
      ['map', apply('string-set-equals', apply('map', fn('string-normalize-to-lower-case'), bag('A', 'b')), bag('a', 'b')), true],
      [
        'map with integer-abs',
        apply(
          'integer-equal',
          apply('integer-one-and-only', apply('map', fn('integer-abs'), apply('integer-bag', val('-3', 'integer')))),
          val('3', 'integer'),
        ),
        true,
      ],
      ['not as the function', apply('boolean-one-and-only', apply('map', fn('not'), apply('boolean-bag', val('false', 'boolean')))), true],
    ];
    for (const [name, expr, expected] of cases) {
      it(`${name} → ${expected}`, () => assert.equal(decide(expr).decision, expected ? 'Permit' : 'NotApplicable'));
    }
    it('checks the function argument statically', () => {
      throwsSyntax(() => decide(apply('any-of', fn('integer-equal'), val('a'), bag('a'))), 'must be integer, not string');
      throwsSyntax(
        () => decide(apply('any-of', `<Function FunctionId="${FN2}string-concatenate"/>`, val('a'), bag('a'))),
        'must return a boolean',
      );
      throwsSyntax(() => decide(apply('any-of', val('a'), val('a'), bag('a'))), 'must be a <Function>');
      throwsSyntax(() => decide(apply('any-of', fn('string-equal'), bag('a'), bag('a'))), 'must be a single value');
      throwsSyntax(() => decide(apply('map', fn('string-bag'), bag('a'))), 'must return a single value');
    });
    it('propagates an error of the applied function as Indeterminate', () => {
      const r = decide(
        apply(
          'any-of',
          fn('integer-equal'),
          apply('integer-divide', val('1', 'integer'), val('0', 'integer')),
          apply('integer-bag', val('1', 'integer')),
        ),
      );
      assertIncludes(r, { decision: 'Indeterminate', code: 'processing-error' });
    });
  });

  describe('static type checks at createPdp', () => {
    const path = '/Policy[@PolicyId="p"]/Rule[@RuleId="r"]/Condition/Apply[1]';
    it('a bag where a single value is needed', () => {
      throwsSyntax(
        () => decide(apply('string-equal', designator('Subject', SUBJECT_ID), val('x'))),
        'Argument 1 of urn:oasis:names:tc:xacml:1.0:function:string-equal must be string, not bag of string',
        path,
      );
    });
    it('wrong argument count, unknown function, unknown data type', () => {
      throwsSyntax(() => decide(apply('string-equal', val('x'))), 'takes 2 argument(s), got 1');
      throwsSyntax(() => decide(apply(`${FN}no-such-function`, val('x'))), 'Unknown function', path);
      throwsSyntax(() => decide(apply('string-equal', val('x', 'nope'), val('x'))), 'Unknown data type', `${path}/AttributeValue[1]`);
    });
    it('an invalid constant', () => {
      throwsSyntax(() => decide(apply('integer-equal', val('x1', 'integer'), val('1', 'integer'))), 'Invalid integer value');
    });
    it('a constant expression that fails is a runtime processing error, not a load error', () => {
      assertIncludes(
        decide(apply('integer-equal', apply('integer-divide', val('1', 'integer'), val('0', 'integer')), val('1', 'integer'))),
        { decision: 'Indeterminate', code: 'processing-error' },
      );
    });
  });

  describe('designators', () => {
    it('MustBePresent gives missing-attribute with a message saying where', () => {
      const r = decide(apply('string-is-in', val('a'), designator('Subject', 'group', 'string', ' MustBePresent="true"')));
      assertIncludes(r, { decision: 'Indeterminate', code: 'missing-attribute' });
      assert.ok(String(r.message).includes('group'));
      assert.ok(String(r.message).includes('/Policy[@PolicyId="p"]/Rule[@RuleId="r"]/Condition/Apply[1]/SubjectAttributeDesignator[1]'));
    });
    it('Issuer and SubjectCategory select the attributes', () => {
      const cond = apply('string-is-in', val('a'), designator('Subject', 'g', 'string', ' Issuer="idp" SubjectCategory="urn:x:cat"'));
      const req: RequestContext = {
        ...request(),
        subjects: [
          { subjectCategory: 'urn:x:cat', attributes: [{ ...attr('g', 'a'), issuer: 'other' }] },
          {
            subjectCategory: 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject',
            attributes: [{ ...attr('g', 'a'), issuer: 'idp' }],
          },
        ],
      };
      assert.equal(decide(cond, req).decision, 'NotApplicable');
      req.subjects.push({ subjectCategory: 'urn:x:cat', attributes: [{ ...attr('g', 'a'), issuer: 'idp' }] });
      assert.equal(decide(cond, req).decision, 'Permit');
    });
    it('an invalid request value is a syntax error of the request', () => {
      const cond = apply('integer-is-in', val('1', 'integer'), designator('Subject', 'n', 'integer'));
      assertIncludes(decide(cond, request({ subject: [typed('n', 'integer', 'one')] })), {
        decision: 'Indeterminate',
        code: 'syntax-error',
      });
    });
    it('a large request section is indexed and still merges bags', () => {
      const many = Array.from({ length: 50 }, (_, i) => attr(`a${i}`, `v${i}`));
      const cond = apply('integer-equal', apply('string-bag-size', designator('Subject', 'a7')), val('2', 'integer'));
      assert.equal(decide(cond, request({ subject: [...many, attr('a7', 'again')] })).decision, 'Permit');
    });
  });
});
