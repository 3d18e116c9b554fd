/**
 * XACML evaluator benchmark (standalone: `npx tsx bench/xacml.ts`).
 *
 * Prints decisions/second of the evaluator and of a hand-written JavaScript function taking the
 * same decision directly, and their ratio, for:
 *  1. the example's scenario policy, evaluated on a RequestContext object;
 *  2. a PolicySet of 1,000 policies with distinct resource-id targets;
 *  3. a policy matching a header with `string-regexp-match` (the evaluator's linear-time
 *     automaton against JavaScript's backtracking RegExp by hand);
 *  4. a policy reading a header with an AttributeSelector, on a request of 1,500 headers.
 * Targets: (1) evaluator ≥ 1/4 of hand-written; (2) ≥ 200,000 decisions/s; (3) ≥ 1,000,000
 * decisions/s (the pattern compiled once, with the policy); (4) ≥ 1,000 decisions/s (the time
 * of a request must not grow with its headers to the point of delaying others).
 */
import { readFileSync } from 'node:fs';
import { createPdp } from 'express-access-gateway/xacml';
import type { RequestAttribute, RequestContext } from 'express-access-gateway/xacml';

const XS_STRING = 'http://www.w3.org/2001/XMLSchema#string';
const ACCESS_SUBJECT = 'urn:oasis:names:tc:xacml:1.0:subject-category:access-subject';
const RESOURCE_ID = 'urn:oasis:names:tc:xacml:1.0:resource:resource-id';
const AUDIENCE = 'org:gateway:action:token:audience';
const CLIENT = 'org:gateway:subject:token:clientId';
const NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';

const str = (attributeId: string, ...values: string[]): RequestAttribute => ({ attributeId, dataType: XS_STRING, values });

/** A request shaped like the gateway's (docs/xacml-attributes.md): a dozen action attributes, several subject ones. */
function gatewayRequest(clientId: string, resource: string): RequestContext {
  return {
    subjects: [
      {
        subjectCategory: ACCESS_SUBJECT,
        attributes: [
          str('urn:oasis:names:tc:xacml:1.0:subject:subject-id', 'user-1'),
          str('org:gateway:subject:token:issuer', 'http://127.0.0.1:9000'),
          str('org:gateway:subject:token:subject', 'user-1'),
          str('org:gateway:subject:token:username', 'mario'),
          str(CLIENT, clientId),
          str('org:gateway:subject:organization', 'Ente'),
          str('org:gateway:subject:credential', 'user-1'),
          str('org:gateway:subject:role', 'reader', 'writer'),
        ],
      },
    ],
    resources: [{ attributes: [str(RESOURCE_ID, resource)] }],
    action: {
      attributes: [
        str('urn:oasis:names:tc:xacml:1.0:action:action-id', 'GET'),
        str('org:gateway:action:provider', 'Ente'),
        str('org:gateway:action:service', 'gw/PetStore'),
        str('org:gateway:action:action', 'findPets'),
        str('org:gateway:action:url', `http://127.0.0.1:8080${resource}`),
        str('org:gateway:action:token:scope', 'read', 'write'),
        str('org:gateway:action:token:introspection:claim:active', 'true'),
        str('org:gateway:action:token:introspection:claim:sub', 'user-1'),
        str('org:gateway:action:transport:header:accept', 'application/json'),
        str('org:gateway:action:transport:header:user-agent', 'bench'),
        str('org:gateway:action:protocol', 'rest'),
        str(AUDIENCE, 'petstore', 'test-tool-app'),
      ],
    },
    environment: { attributes: [] },
  };
}

/** Scenario (1) by hand: the same two membership checks, straight over the request object. */
const ALLOWED_AUDIENCE = new Set(['test-tool-app']);
const ALLOWED_CLIENTS = new Set(['client1', 'client2']);
function handScenario(ctx: RequestContext): 'Permit' | 'Deny' {
  let audience = false;
  for (const a of ctx.action.attributes) {
    if (a.attributeId === AUDIENCE && a.dataType === XS_STRING) for (const v of a.values) if (ALLOWED_AUDIENCE.has(v)) audience = true;
  }
  if (!audience) return 'Deny';
  for (const s of ctx.subjects) {
    if (s.subjectCategory !== ACCESS_SUBJECT) continue;
    for (const a of s.attributes) {
      if (a.attributeId === CLIENT && a.dataType === XS_STRING) for (const v of a.values) if (ALLOWED_CLIENTS.has(v)) return 'Permit';
    }
  }
  return 'Deny';
}

/** Scenario (2): 1,000 policies, policy i permits resource /api/i when i is even, denies it otherwise. */
const N = 1000;
function bigPolicySet(): string {
  const policies = Array.from(
    { length: N },
    (_, i) => `
  <Policy PolicyId="p${i}" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
    <Target><Resources><Resource><ResourceMatch MatchId="urn:oasis:names:tc:xacml:1.0:function:string-equal">
      <AttributeValue DataType="${XS_STRING}">/api/${i}</AttributeValue>
      <ResourceAttributeDesignator AttributeId="${RESOURCE_ID}" DataType="${XS_STRING}"/>
    </ResourceMatch></Resource></Resources></Target>
    <Rule RuleId="r" Effect="${i % 2 === 0 ? 'Permit' : 'Deny'}"/>
  </Policy>`,
  ).join('');
  return `<PolicySet xmlns="${NS}" PolicySetId="big" PolicyCombiningAlgId="urn:oasis:names:tc:xacml:1.0:policy-combining-algorithm:first-applicable"><Target/>${policies}</PolicySet>`;
}
const handTable = new Map<string, string>(Array.from({ length: N }, (_, i) => [`/api/${i}`, i % 2 === 0 ? 'Permit' : 'Deny'] as const));
function handBig(ctx: RequestContext): string {
  for (const r of ctx.resources) {
    for (const a of r.attributes) {
      if (a.attributeId !== RESOURCE_ID || a.dataType !== XS_STRING) continue;
      for (const v of a.values) {
        const d = handTable.get(v);
        if (d) return d;
      }
    }
  }
  return 'NotApplicable';
}

/** Scenario (3): permit when the X-Tenant header is a tenant name (a pattern of ordinary policies). */
const TENANT = 'org:gateway:action:transport:header:x-tenant';
const TENANT_PATTERN = '^[a-z][a-z0-9-]{2,30}$';
const F1 = 'urn:oasis:names:tc:xacml:1.0:function:';
function regexPolicy(): string {
  return `<Policy xmlns="${NS}" PolicyId="tenant" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="tenant" Effect="Permit"><Condition>
    <Apply FunctionId="${F1}string-regexp-match">
      <AttributeValue DataType="${XS_STRING}">${TENANT_PATTERN}</AttributeValue>
      <Apply FunctionId="${F1}string-one-and-only"><ActionAttributeDesignator AttributeId="${TENANT}" DataType="${XS_STRING}"/></Apply>
    </Apply>
  </Condition></Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;
}
function withTenant(ctx: RequestContext, tenant: string, extraHeaders = 0): RequestContext {
  const headers = Array.from({ length: extraHeaders }, (_, i) => str(`org:gateway:action:transport:header:h${i}`, String(i)));
  return { ...ctx, action: { attributes: [...ctx.action.attributes, ...headers, str(TENANT, tenant)] } };
}
const TENANT_RE = new RegExp(TENANT_PATTERN);
function handTenant(ctx: RequestContext): 'Permit' | 'Deny' {
  let value: string | undefined;
  let count = 0;
  for (const a of ctx.action.attributes) {
    if (a.attributeId !== TENANT) continue;
    count += a.values.length;
    value = a.values[0];
  }
  return count === 1 && TENANT_RE.test(value!) ? 'Permit' : 'Deny';
}

/** Scenario (4): permit when an AttributeSelector finds the X-Tenant header `acme`. */
function selectorPolicy(): string {
  return `<Policy xmlns="${NS}" xmlns:ctx="urn:oasis:names:tc:xacml:2.0:context:schema:os" PolicyId="tenant-selector"
    RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="tenant" Effect="Permit"><Condition>
    <Apply FunctionId="${F1}string-is-in">
      <AttributeValue DataType="${XS_STRING}">acme</AttributeValue>
      <AttributeSelector DataType="${XS_STRING}" RequestContextPath="//ctx:Action/ctx:Attribute[@AttributeId='${TENANT}']/ctx:AttributeValue"/>
    </Apply>
  </Condition></Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;
}
function handSelector(ctx: RequestContext): 'Permit' | 'Deny' {
  for (const a of ctx.action.attributes) if (a.attributeId === TENANT && a.values.includes('acme')) return 'Permit';
  return 'Deny';
}

/**
 * Runs `fn` over the requests for about `ms` milliseconds; returns operations per second. Calls
 * go in batches of up to 1,000 between clock reads (fewer while a batch takes over 10 ms, so a
 * slow case still stops on time).
 */
function measure(fn: (ctx: RequestContext) => unknown, requests: readonly RequestContext[], ms: number): number {
  let ops = 0;
  let sink = 0;
  let batch = 1;
  const start = process.hrtime.bigint();
  const end = start + BigInt(ms) * 1_000_000n;
  let now = start;
  while (now < end) {
    for (let i = 0; i < batch; i++) {
      if (fn(requests[(ops + i) % requests.length]!) !== undefined) sink++;
    }
    ops += batch;
    const before = now;
    now = process.hrtime.bigint();
    if (batch < 1000 && now - before < 10_000_000n) batch = Math.min(1000, batch * 2);
  }
  if (sink !== ops) throw new Error('unexpected undefined result');
  return (ops * 1e9) / Number(now - start);
}

function check(
  label: string,
  a: (ctx: RequestContext) => string,
  b: (ctx: RequestContext) => string,
  requests: readonly RequestContext[],
): void {
  for (const r of requests) {
    if (a(r) !== b(r)) throw new Error(`${label}: evaluator and hand-written disagree`);
  }
}

function row(name: string, ours: number, hand: number, target: string, ok: boolean): string[] {
  return [
    name,
    Math.round(ours).toLocaleString('en'),
    Math.round(hand).toLocaleString('en'),
    `${(ours / hand).toFixed(2)}`,
    target,
    ok ? 'yes' : 'NO',
  ];
}

function main(): void {
  const scenarioPdp = createPdp({
    policies: [readFileSync(new URL('../test/xacml/fixtures/scenario-policy.xml', import.meta.url), 'utf8')],
  });
  const scenarioRequests = ['client1', 'client2', 'client3', 'client9'].map((c) => gatewayRequest(c, '/gw/Ente/PetStore/v1/pets'));
  const ourScenario = (ctx: RequestContext): string => scenarioPdp.evaluate(ctx).results[0]!.decision;
  check('scenario', ourScenario, handScenario, scenarioRequests);

  const bigPdp = createPdp({ policies: [bigPolicySet()] });
  const bigRequests = Array.from({ length: 4096 }, (_, i) => gatewayRequest('client1', `/api/${(i * 7919) % (N + 100)}`));
  const ourBig = (ctx: RequestContext): string => bigPdp.evaluate(ctx).results[0]!.decision;
  check('1,000 policies', ourBig, handBig, bigRequests);

  const regexPdp = createPdp({ policies: [regexPolicy()] });
  const base = gatewayRequest('client1', '/gw/Ente/PetStore/v1/pets');
  const regexRequests = ['acme', 'tenant-42', 'Acme', 'x', 'a-very-long-tenant-name-of-31-chars'].map((t) => withTenant(base, t));
  const ourRegex = (ctx: RequestContext): string => regexPdp.evaluate(ctx).results[0]!.decision;
  check('regexp-match', ourRegex, handTenant, regexRequests);

  const selectorPdp = createPdp({ policies: [selectorPolicy()] });
  const selectorRequests = ['acme', 'other'].map((t) => withTenant(base, t, 1500));
  const ourSelector = (ctx: RequestContext): string => selectorPdp.evaluate(ctx).results[0]!.decision;
  check('selector', ourSelector, handSelector, selectorRequests);

  // Warm up every function, then measure each twice, interleaved, and keep the best run.
  const all = [
    [ourScenario, scenarioRequests],
    [handScenario, scenarioRequests],
    [ourBig, bigRequests],
    [handBig, bigRequests],
    [ourRegex, regexRequests],
    [handTenant, regexRequests],
    [ourSelector, selectorRequests],
    [handSelector, selectorRequests],
  ] as const;
  for (const [f, r] of all) measure(f, r, 300);
  const best = (f: (ctx: RequestContext) => unknown, r: readonly RequestContext[]): number =>
    Math.max(measure(f, r, 700), measure(f, r, 700));
  const s1 = best(ourScenario, scenarioRequests);
  const h1 = best(handScenario, scenarioRequests);
  const s2 = best(ourBig, bigRequests);
  const h2 = best(handBig, bigRequests);
  const s3 = best(ourRegex, regexRequests);
  const h3 = best(handTenant, regexRequests);
  const s4 = best(ourSelector, selectorRequests);
  const h4 = best(handSelector, selectorRequests);

  const rows = [
    ['case', 'evaluator/s', 'hand-written/s', 'ratio', 'target', 'met'],
    row('(1) scenario policy, RequestContext', s1, h1, 'ratio >= 0.25', s1 / h1 >= 0.25),
    row('(2) PolicySet of 1,000 resource-id policies', s2, h2, '>= 200,000/s', s2 >= 200_000),
    row('(3) string-regexp-match on a header', s3, h3, '>= 1,000,000/s', s3 >= 1_000_000),
    row('(4) AttributeSelector, 1,500 headers', s4, h4, '>= 1,000/s', s4 >= 1_000),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) console.log(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
}

main();
