/**
 * Policies compiled: every issue reported with its path, defaults applied, the operations filter,
 * and the groups: labels as consoles show them, store hashes of a fixed size whatever is sent.
 */
import { expect } from 'chai';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { TrafficControlError } from '../../src/traffic/errors.js';
import type { TrafficPolicy } from '../../src/traffic/schema.js';
import { facts } from './helpers.js';

const perClient: TrafficPolicy = { name: 'per-client', metric: 'requests', limit: 100, windowSeconds: 60, groupBy: ['clientId'] };

function issuesOf(run: () => unknown): string[] {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(TrafficControlError);
    expect((err as TrafficControlError).code).to.equal('ERR_TRAFFIC_CONTROL_INVALID');
    return (err as TrafficControlError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  expect.fail('no error');
}

describe('compileTrafficPolicies', () => {
  it('reports every issue of both lists with its path', () => {
    const issues = issuesOf(() =>
      compileTrafficPolicies(
        [
          { name: 'a', metric: 'requests', limit: 0, windowSeconds: 60 },
          { name: 'b', metric: 'requests', limit: 5 },
        ],
        [{ name: 'c', metric: 'concurrentRequests', limit: 2, windowSeconds: 5, groupBy: ['header:Authorization'] }],
        { api: 'Ente/PetStore/v1', apiPath: 'apis[0].trafficControl.policies' },
      ),
    );
    expect(issues).to.deep.equal([
      'trafficControl.policies[0].limit: must be a positive integer',
      'apis[0].trafficControl.policies[0].groupBy[0]: may not name authorization: its values are credentials',
      'apis[0].trafficControl.policies[0].windowSeconds: has no meaning for concurrentRequests',
    ]);
    expect(issuesOf(() => compileTrafficPolicies([{ name: 'b', metric: 'requests', limit: 5 }]))).to.deep.equal([
      'trafficControl.policies[0].windowSeconds: is required for a requests policy',
    ]);
  });

  it('refuses an API policy named like a top-level one, and an operation the API does not have', () => {
    const issues = issuesOf(() =>
      compileTrafficPolicies([perClient], [{ ...perClient, operations: ['getPet', 'nope'] }], {
        api: 'Ente/PetStore/v1',
        apiOperations: ['getPet'],
        apiPath: 'apis[2].trafficControl.policies',
      }),
    );
    expect(issues).to.deep.equal(['apis[2].trafficControl.policies[0].name: "per-client" is already the name of another policy']);
    const unknownOperation = issuesOf(() =>
      compileTrafficPolicies(undefined, [{ ...perClient, operations: ['getPet', 'nope'] }], {
        api: 'Ente/PetStore/v1',
        apiOperations: ['getPet'],
        apiPath: 'apis[2].trafficControl.policies',
      }),
    );
    expect(unknownOperation).to.deep.equal(['apis[2].trafficControl.policies[0].operations[1]: "nope" is not an operation of this API']);
  });

  it('applies the defaults, and picks the policies of an operation', () => {
    const set = compileTrafficPolicies(
      [perClient, { name: 'in-flight', metric: 'concurrentRequests', limit: 3 }],
      [
        {
          name: 'updates',
          metric: 'requests',
          limit: 10,
          windowSeconds: 1,
          window: 'fixed',
          operations: ['updatePet'],
          mode: 'warningOnly',
        },
      ],
      { api: 'Ente/PetStore/v1' },
    );
    const [a, b, c] = set.all;
    expect([a!.window, a!.mode, a!.scope, a!.storeName]).to.deep.equal(['sliding', 'enforce', '', 'per-client:s']);
    expect([b!.window, b!.windowSeconds, b!.storeName]).to.deep.equal([undefined, undefined, 'in-flight:c']);
    expect([c!.window, c!.mode, c!.scope, c!.storeName]).to.deep.equal(['fixed', 'warningOnly', 'Ente/PetStore/v1', 'updates:f1']);
    expect(set.covering('updatePet').map((p) => p.name)).to.deep.equal(['per-client', 'in-flight', 'updates']);
    expect(set.covering('getPet').map((p) => p.name)).to.deep.equal(['per-client', 'in-flight']);
    expect(set.covering(undefined).map((p) => p.name)).to.deep.equal(['per-client', 'in-flight']);
  });
});

describe('traffic policy groups', () => {
  function groupOf(groupBy: string[], f = facts(), scope?: string) {
    const set =
      scope === undefined
        ? compileTrafficPolicies([{ ...perClient, groupBy }])
        : compileTrafficPolicies(undefined, [{ ...perClient, groupBy }], { api: scope });
    return set.all[0]!.group(f);
  }

  it('labels a group by its facts, `*` without groupBy, `-` for a missing fact', () => {
    const f = facts({ clientId: 'client1', operation: 'getPet', subject: 'alice', issuer: 'https://idp', clientAddress: '10.0.0.1' });
    expect(groupOf(['clientId', 'operation'], f).label).to.equal('clientId=client1, operation=getPet');
    expect(groupOf(['subject', 'issuer', 'clientAddress', 'api'], f).label).to.equal(
      'subject=alice, issuer=https://idp, clientAddress=10.0.0.1, api=Ente/PetStore/v1',
    );
    expect(groupOf([], f).label).to.equal('*');
    expect(groupOf(['clientId'], facts()).label).to.equal('clientId=-');
    // Requests without the fact share one counter, apart from a client that sends "-".
    expect(groupOf(['header:x-tenant'], facts()).hash).to.equal(groupOf(['header:x-tenant'], facts({ clientId: 'x' })).hash);
    expect(groupOf(['header:x-tenant'], facts({}, { 'X-Tenant': '-' })).hash).to.not.equal(groupOf(['header:x-tenant'], facts()).hash);
  });

  it('reads headers by their lower-case name, claims by dotted names, non-string claims as JSON', () => {
    expect(groupOf(['header:X-Tenant'], facts({}, { 'x-tenant': 'acme' })).label).to.equal('header:X-Tenant=acme');
    const claims = { tenant: { id: 'acme', tier: 3 }, roles: ['a', 'b'], 'https://example.org/org': 'ex' };
    expect(groupOf(['claim:tenant.id', 'claim:tenant.tier', 'claim:roles'], facts({ claims })).label).to.equal(
      'claim:tenant.id=acme, claim:tenant.tier=3, claim:roles=["a","b"]',
    );
    expect(groupOf(['claim:https://example.org/org'], facts({ claims })).label).to.equal('claim:https://example.org/org=ex');
    // Inherited members are not claims.
    expect(groupOf(['claim:constructor', 'claim:tenant.__proto__'], facts({ claims })).label).to.equal(
      'claim:constructor=-, claim:tenant.__proto__=-',
    );
  });

  it('keeps values apart that concatenate alike, and the same policy name in two scopes apart', () => {
    const ab = groupOf(['header:a', 'header:b'], facts({}, { a: 'x,', b: 'y' }));
    const ab2 = groupOf(['header:a', 'header:b'], facts({}, { a: 'x', b: ',y' }));
    expect(ab.hash).to.not.equal(ab2.hash);
    expect(groupOf(['clientId'], facts({ clientId: 'c' }), 'Ente/A/v1').hash).to.not.equal(
      groupOf(['clientId'], facts({ clientId: 'c' }), 'Ente/B/v1').hash,
    );
    // A lone surrogate is not the replacement character UTF-8 would write for it.
    expect(groupOf(['claim:x'], facts({ claims: { x: '\uD800' } })).hash).to.not.equal(
      groupOf(['claim:x'], facts({ claims: { x: '\uFFFD' } })).hash,
    );
    expect(groupOf(['clientId'], facts({ clientId: 'c' }), 'Ente/A/v1').hash).to.equal(
      groupOf(['clientId'], facts({ clientId: 'c', subject: 'other' }), 'Ente/A/v1').hash,
    );
  });

  it('a one-fact policy gives a value seen before the group it gave then, past its memory of groups too', () => {
    const group = compileTrafficPolicies([{ ...perClient, groupBy: ['header:x-tenant'] }]).all[0]!.group;
    const values = [undefined, '-', 'acme', 'x'.repeat(300), ...Array.from({ length: 5000 }, (_, i) => `tenant-${i}`)];
    const first = values.map((value) => group(facts({}, value === undefined ? {} : { 'x-tenant': value })));
    for (const [i, value] of values.entries()) {
      const again = group(facts({}, value === undefined ? {} : { 'x-tenant': value }));
      expect(again).to.deep.equal(first[i]);
      expect(again).to.deep.equal(groupOf(['header:x-tenant'], facts({}, value === undefined ? {} : { 'x-tenant': value })));
    }
    expect(new Set(first.map((key) => key.hash)).size).to.equal(values.length);
  });

  it('gives hostile values a hash of the same fixed length and a short, printable label', () => {
    const huge = 'x'.repeat(1024 * 1024);
    const claims = { note: 'line1\nline2\r\u2028\u0000', big: { deep: huge } };
    const plain = groupOf(['header:x-a', 'claim:note'], facts({}, { 'x-a': 'a' }));
    const hostile = groupOf(['header:x-a', 'claim:note'], facts({ claims }, { 'x-a': huge }));
    expect(hostile.hash)
      .to.have.length(43)
      .and.match(/^[A-Za-z0-9_-]+$/);
    expect(plain.hash).to.have.length(43);
    expect(hostile.label).to.equal(`header:x-a=${'x'.repeat(64)}, claim:note=line1\uFFFDline2\uFFFD\uFFFD\uFFFD`);
    const emoji = groupOf(['header:x-a'], facts({}, { 'x-a': `${'y'.repeat(63)}😀tail` }));
    expect(emoji.label).to.equal(`header:x-a=${'y'.repeat(63)}`);
  });
});
