/** Combining algorithms, including the ordered-* ones the suite does not exercise, and obligations. */
import assert from 'node:assert/strict';
import { createPdp } from '../../src/xacml/index.js';
import { apply, condition, designator, policy, policySet, request, rule, throwsSyntax, val } from './helpers.js';

/** Rules with a known outcome. */
const R = {
  P: (id: string) => rule(id, 'Permit'),
  D: (id: string) => rule(id, 'Deny'),
  N: (id: string) => rule(id, 'Permit', condition(apply('string-equal', val('a'), val('b')))),
  IP: (id: string) =>
    rule(id, 'Permit', condition(apply('string-equal', apply('string-one-and-only', designator('Subject', 'none')), val('x')))),
  ID: (id: string) =>
    rule(id, 'Deny', condition(apply('string-equal', apply('string-one-and-only', designator('Subject', 'none')), val('x')))),
};
type Kind = keyof typeof R;

/** A policy whose single rule gives that outcome, to combine policies. */
const P = (kind: Kind, id: string): string => policy(id, 'first-applicable', R[kind](`${id}-r`)).replace(/ xmlns="[^"]*"/, '');

function ruleDecision(alg: string, kinds: Kind[]): string {
  const pdp = createPdp({ policies: [policy('p', alg, kinds.map((k, i) => R[k](`r${i}`)).join(''))] });
  return pdp.evaluate(request()).results[0]!.decision;
}
function policyDecision(alg: string, kinds: Kind[]): string {
  const pdp = createPdp({ policies: [policySet('s', alg, kinds.map((k, i) => P(k, `p${i}`)).join(''))] });
  return pdp.evaluate(request()).results[0]!.decision;
}

const R10 = 'urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:';
const R11 = 'urn:oasis:names:tc:xacml:1.1:rule-combining-algorithm:';
const P10 = 'urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:';
const P11 = 'urn:oasis:names:tc:xacml:1.1:policy-combining-algorithm:';

describe('xacml combining algorithms', () => {
  const ruleCases: Array<[Kind[], string, string]> = [
    // kinds, deny-overrides, permit-overrides
    [['P', 'D'], 'Deny', 'Permit'],
    [['N', 'N'], 'NotApplicable', 'NotApplicable'],
    [['P', 'N'], 'Permit', 'Permit'],
    [['ID', 'P'], 'Indeterminate', 'Permit'], // Indeterminate of a Deny rule beats Permit under deny-overrides
    [['IP', 'P'], 'Permit', 'Permit'], // Indeterminate of a Permit rule does not
    [['IP', 'N'], 'Indeterminate', 'Indeterminate'],
    [['IP', 'D'], 'Deny', 'Indeterminate'], // Indeterminate of a Permit rule beats Deny under permit-overrides
    [['ID', 'D'], 'Deny', 'Deny'],
    [['ID', 'N'], 'Indeterminate', 'Indeterminate'],
  ];
  for (const [ns, label] of [
    [R10, '1.0'],
    [R11, '1.1'],
  ] as const) {
    for (const [kinds, deny, permit] of ruleCases) {
      it(`rule ordered-deny-overrides (${label}) ${kinds.join(',')} → ${deny}`, () =>
        assert.equal(ruleDecision(`${ns}ordered-deny-overrides`, kinds), deny));
      it(`rule ordered-permit-overrides (${label}) ${kinds.join(',')} → ${permit}`, () =>
        assert.equal(ruleDecision(`${ns}ordered-permit-overrides`, kinds), permit));
    }
  }
  for (const [kinds, deny, permit] of ruleCases) {
    it(`rule deny-overrides ${kinds.join(',')} → ${deny}`, () => assert.equal(ruleDecision(`${R10}deny-overrides`, kinds), deny));
    it(`rule permit-overrides ${kinds.join(',')} → ${permit}`, () => assert.equal(ruleDecision(`${R10}permit-overrides`, kinds), permit));
  }
  it('rule first-applicable', () => {
    assert.equal(ruleDecision(`${R10}first-applicable`, ['N', 'D', 'P']), 'Deny');
    assert.equal(ruleDecision(`${R10}first-applicable`, ['N', 'IP', 'P']), 'Indeterminate');
    assert.equal(ruleDecision(`${R10}first-applicable`, ['N']), 'NotApplicable');
  });

  const policyCases: Array<[Kind[], string, string]> = [
    [['P', 'D'], 'Deny', 'Permit'],
    [['IP', 'P'], 'Deny', 'Permit'], // policy deny-overrides: an Indeterminate child gives Deny
    [['IP', 'N'], 'Deny', 'Indeterminate'],
    [['IP', 'D'], 'Deny', 'Deny'],
    [['N', 'N'], 'NotApplicable', 'NotApplicable'],
  ];
  for (const [kinds, deny, permit] of policyCases) {
    for (const [ns, label] of [
      [P10, '1.0'],
      [P11, '1.1'],
    ] as const) {
      it(`policy ordered-deny-overrides (${label}) ${kinds.join(',')} → ${deny}`, () =>
        assert.equal(policyDecision(`${ns}ordered-deny-overrides`, kinds), deny));
      it(`policy ordered-permit-overrides (${label}) ${kinds.join(',')} → ${permit}`, () =>
        assert.equal(policyDecision(`${ns}ordered-permit-overrides`, kinds), permit));
    }
    it(`policy deny-overrides ${kinds.join(',')} → ${deny}`, () => assert.equal(policyDecision(`${P10}deny-overrides`, kinds), deny));
    it(`policy permit-overrides ${kinds.join(',')} → ${permit}`, () =>
      assert.equal(policyDecision(`${P10}permit-overrides`, kinds), permit));
  }

  it('policy only-one-applicable: one applicable decides, two give Indeterminate', () => {
    assert.equal(policyDecision(`${P10}only-one-applicable`, ['D']), 'Deny');
    assert.equal(policyDecision(`${P10}only-one-applicable`, ['D', 'P']), 'Indeterminate');
  });

  it('an unknown algorithm, or a policy algorithm on rules, is rejected at createPdp', () => {
    throwsSyntax(
      () => createPdp({ policies: [policy('p', `${P10}only-one-applicable`, R.P('r'))] }),
      'Unknown rule-combining algorithm',
      '/Policy[@PolicyId="p"]',
    );
  });

  describe('obligations', () => {
    const obligations = (fulfillOn: 'Permit' | 'Deny', id: string): string =>
      `<Obligations><Obligation ObligationId="${id}" FulfillOn="${fulfillOn}"><AttributeAssignment AttributeId="a" DataType="http://www.w3.org/2001/XMLSchema#string">${id}-v</AttributeAssignment></Obligation></Obligations>`;
    const withOb = (kind: Kind, id: string, fulfillOn: 'Permit' | 'Deny'): string =>
      P(kind, id).replace('</Policy>', `${obligations(fulfillOn, `ob-${id}`)}</Policy>`);

    it("returns the obligations of the policies that gave the decision, plus the set's own", () => {
      const own = obligations('Deny', 'ob-set').replace(
        '</Obligations>',
        `${obligations('Permit', 'ob-set-permit').slice('<Obligations>'.length)}`,
      );
      const set = policySet(
        's',
        'permit-overrides',
        withOb('D', 'a', 'Deny') + withOb('D', 'b', 'Deny') + withOb('N', 'c', 'Deny') + withOb('D', 'd', 'Permit'),
      ).replace('</PolicySet>', `${own}</PolicySet>`);
      const r = createPdp({ policies: [set] }).evaluate(request()).results[0]!;
      assert.equal(r.decision, 'Deny');
      assert.deepEqual(
        r.obligations.map((o) => o.id),
        ['ob-a', 'ob-b', 'ob-set'],
      );
      assert.deepEqual(r.obligations[0], {
        id: 'ob-a',
        fulfillOn: 'Deny',
        assignments: [{ attributeId: 'a', dataType: 'http://www.w3.org/2001/XMLSchema#string', value: 'ob-a-v' }],
      });
    });
    it('returns none with NotApplicable or Indeterminate', () => {
      const r = createPdp({ policies: [policy('a', 'first-applicable', R.IP('r') + obligations('Permit', 'ob-a'))] }).evaluate(request())
        .results[0]!;
      assert.equal(r.decision, 'Indeterminate');
      assert.deepEqual(r.obligations, []);
    });
  });
});
