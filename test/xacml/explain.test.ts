/** Explaining decisions: the policy and rule that decided, and the target section or condition that failed. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createPdp } from '../../src/xacml/index.js';
import type { RequestContext } from '../../src/xacml/index.js';
import {
  ACTION_ID,
  RESOURCE_ID,
  SUBJECT_ID,
  apply,
  attr,
  condition,
  designator,
  policy,
  policySet,
  request,
  rule,
  target1,
  val,
} from './helpers.js';

const scenario = readFileSync(new URL('../../examples/petstore/policies/petstore.xml', import.meta.url), 'utf8');
const AUDIENCE = 'org:gateway:action:token:audience';
const CLIENT = 'org:gateway:subject:token:clientId';
const gatewayRequest = (clientId: string, audience = ['petstore-api']): RequestContext =>
  request({ subject: [attr(CLIENT, clientId)], action: [attr(AUDIENCE, ...audience)], resource: [attr(RESOURCE_ID, '/pet')] });

describe('xacml explanations', () => {
  const pdp = createPdp({ policies: [scenario] });

  it('names rule "ko" of the scenario policy for client3, and the part of rule "ok" that was false', () => {
    const [explanation] = pdp.explain!(gatewayRequest('client3'));
    assert.equal(explanation!.decision, 'Deny');
    assert.deepEqual(explanation!.status, { code: 'urn:oasis:names:tc:xacml:1.0:status:ok' });
    assert.deepEqual(explanation!.decidedBy, {
      path: [
        { kind: 'Policy', id: 'urn:gateway:policy:petstore' },
        { kind: 'Rule', id: 'ko' },
      ],
      policy: 'urn:gateway:policy:petstore',
      rule: 'ko',
    });
    const ok = explanation!.steps.find((s) => s.id === 'ok')!;
    assert.deepEqual(ok, {
      kind: 'Rule',
      id: 'ok',
      parents: ['urn:gateway:policy:petstore'],
      decision: 'NotApplicable',
      effect: 'Permit',
      // Only the argument of the "and" that was false: the audience check passed.
      failure: { part: 'condition', failed: [`string-at-least-one-member-of(subject ${CLIENT}, string-bag("client1", "client2"))`] },
    });
    assert.deepEqual(
      explanation!.steps.map((s) => [s.kind, s.id, s.decision]),
      [
        ['Policy', 'urn:gateway:policy:petstore', 'Deny'],
        ['Rule', 'ok', 'NotApplicable'],
        ['Rule', 'ko', 'Deny'],
      ],
    );
  });

  it('lists both checks when the audience is wrong too, and names rule "ok" for a Permit', () => {
    const [denied] = pdp.explain!(gatewayRequest('client3', ['other-api']));
    assert.equal(denied!.steps.find((s) => s.id === 'ok')!.failure!.failed.length, 2);
    const [permitted] = pdp.explain!(gatewayRequest('client1'));
    assert.equal(permitted!.decision, 'Permit');
    assert.equal(permitted!.decidedBy!.rule, 'ok');
    assert.equal(permitted!.steps.find((s) => s.id === 'ok')!.failure, undefined);
  });

  it('gives the same decisions as evaluate, for every request', () => {
    for (const [client, audience] of [
      ['client1', 'petstore-api'],
      ['client2', 'x'],
      ['client3', 'petstore-api'],
      ['', ''],
    ] as const) {
      const req = gatewayRequest(client, [audience]);
      assert.equal(pdp.explain!(req)[0]!.decision, pdp.evaluate(req).results[0]!.decision);
    }
  });

  it('says which target section failed, through a policy set, for a NotApplicable', () => {
    const set = policySet(
      'set',
      'first-applicable',
      [
        policy('admins', 'permit-overrides', rule('admin-ok', 'Permit'), target1('Subject', 'string-equal', 'admin', SUBJECT_ID)),
        policy('readers', 'permit-overrides', rule('read-ok', 'Permit'), target1('Action', 'string-equal', 'read', ACTION_ID)),
      ].join(''),
    );
    const explainer = createPdp({ policies: [set] });
    const [na] = explainer.explain!(request({ subject: [attr(SUBJECT_ID, 'bob')], action: [attr(ACTION_ID, 'write')] }));
    assert.equal(na!.decision, 'NotApplicable');
    assert.equal(na!.decidedBy, undefined);
    const admins = na!.steps.find((s) => s.id === 'admins')!;
    assert.deepEqual(admins.failure, { part: 'target', failed: [`Subjects: string-equal("admin", subject ${SUBJECT_ID})`] });
    assert.deepEqual(admins.parents, ['set']);
    assert.deepEqual(na!.steps.find((s) => s.id === 'readers')!.failure, {
      part: 'target',
      failed: [`Actions: string-equal("read", action ${ACTION_ID})`],
    });
    // The rules of a policy whose target did not match are not listed.
    assert.equal(
      na!.steps.some((s) => s.kind === 'Rule'),
      false,
    );

    const [permit] = explainer.explain!(request({ subject: [attr(SUBJECT_ID, 'bob')], action: [attr(ACTION_ID, 'read')] }));
    assert.deepEqual(permit!.decidedBy, {
      path: [
        { kind: 'PolicySet', id: 'set' },
        { kind: 'Policy', id: 'readers' },
        { kind: 'Rule', id: 'read-ok' },
      ],
      policy: 'readers',
      rule: 'read-ok',
    });
  });

  it('names the rule and the message of an Indeterminate condition', () => {
    const must = policy(
      'p',
      'deny-overrides',
      rule(
        'needs-role',
        'Deny',
        condition(
          apply(
            'string-equal',
            apply('string-one-and-only', designator('Subject', 'role', 'string', ' MustBePresent="true"')),
            val('guest'),
          ),
        ),
      ),
    );
    const [explanation] = createPdp({ policies: [must] }).explain!(request());
    assert.equal(explanation!.decision, 'Indeterminate');
    assert.deepEqual(explanation!.decidedBy, {
      path: [
        { kind: 'Policy', id: 'p' },
        { kind: 'Rule', id: 'needs-role' },
      ],
      policy: 'p',
      rule: 'needs-role',
    });
    const step = explanation!.steps.find((s) => s.id === 'needs-role')!;
    assert.equal(step.failure!.part, 'condition');
    assert.match(step.failure!.message!, /role/);
  });

  it('keeps at most 64 steps and says how many it left out', () => {
    const rules = Array.from({ length: 100 }, (_, i) =>
      rule(
        `r${i}`,
        'Permit',
        condition(apply('string-equal', apply('string-one-and-only', designator('Subject', SUBJECT_ID)), val(`user${i}`))),
      ),
    ).join('');
    const [explanation] = createPdp({ policies: [policy('many', 'first-applicable', rules)] }).explain!(
      request({ subject: [attr(SUBJECT_ID, 'nobody')] }),
    );
    assert.equal(explanation!.decision, 'NotApplicable');
    assert.equal(explanation!.steps.length, 64);
    assert.equal(explanation!.omittedSteps, 101 - 64);
  });

  it('explains an invalid request as Indeterminate, as evaluate does', () => {
    const [explanation] = pdp.explain!('<not-a-request/>');
    assert.equal(explanation!.decision, 'Indeterminate');
    assert.match(explanation!.status.code, /syntax-error/);
    assert.deepEqual(explanation!.steps, []);
  });
});
