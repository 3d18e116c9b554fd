/**
 * Finding 6 (regular expressions): a policy's `string-regexp-match` runs on caller-controlled
 * values, so a pattern with nested quantifiers (`^([a-z]+)+$`) on a header must not let a
 * caller freeze the gateway. Played over real HTTP against a gateway process (xacmlAuthorize
 * relaying to a real echo backend): the gateway's own event-loop delay over the attack, and an
 * unrelated client meanwhile. The control: the same pattern run by JavaScript's own engine on the
 * gateway's event loop is caught by the same measure.
 */
import { expect } from 'chai';
import { startEchoBackend } from '../token/forward/helpers.js';
import { expectDelayed, expectNotDelayed, GATEWAY_BASE, latencyDuring, startGatewayProcess } from '../authorize/helpers/gateway-process.js';
import type { GatewayProcess } from '../authorize/helpers/gateway-process.js';

/** The most the gateway's event loop may be held while the attack is answered. */
const BOUND_MS = 50;
/** The pattern of the policy below. */
const PATTERN = '^([a-z]+)+$';

const S = 'http://www.w3.org/2001/XMLSchema#string';
const F = 'urn:oasis:names:tc:xacml:1.0:function:';

/** Permits a request whose X-Tenant header is lower-case letters, by a pattern that backtracks badly. */
const POLICY = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="tenant-regex"
    RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="tenant" Effect="Permit">
    <Condition>
      <Apply FunctionId="${F}string-regexp-match">
        <AttributeValue DataType="${S}">${PATTERN}</AttributeValue>
        <Apply FunctionId="${F}string-one-and-only">
          <ActionAttributeDesignator AttributeId="org:gateway:action:transport:header:x-tenant" DataType="${S}"/>
        </Apply>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;

const DENIED =
  'Il mittente non è autorizzato ad invocare il servizio gw/PetStore (versione:1) erogato da gw/Ente ' +
  '(result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok)';

describe('security: a policy regular expression cannot freeze the gateway (finding 6)', function () {
  this.timeout(30_000);
  let backend: { url: string; close: () => Promise<void> };
  let gateway: GatewayProcess;

  before(async () => {
    backend = await startEchoBackend();
  });
  after(async () => {
    await backend?.close();
  });
  // A gateway process per test: on a vulnerable gateway the attack freezes it for good.
  beforeEach(async function () {
    const control = this.currentTest?.title.startsWith('the control') === true;
    gateway = await startGatewayProcess(POLICY, backend.url, control ? { tenantPatternOnTheLoop: PATTERN } : {});
  });
  afterEach(async () => {
    await gateway?.stop();
  });

  const attack = (length: number) => (signal: AbortSignal) =>
    fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': `${'a'.repeat(length)}!` }, signal });

  it('a tenant header made to backtrack gets its Deny, and an unrelated request is not delayed by more than 50 ms', async () => {
    const report = await latencyDuring(attack(40), `${gateway.url}${GATEWAY_BASE}/pets?unrelated`, { loopDelay: gateway.loopDelay });
    // (The unrelated requests carry no X-Tenant header: Indeterminate, 403 as well.)
    expectNotDelayed(report, BOUND_MS);
    expect(report.attack).to.have.property('status', 403);
    const problem = JSON.parse((report.attack as { body: string }).body) as Record<string, unknown>;
    expect(problem).to.include({ status: 403, gateway_status: 'protocol:GATEWAY-1352', detail: DENIED });
  });

  it("the control: the same pattern matched by JavaScript on the gateway's event loop is caught by the same measure", async function () {
    this.timeout(120_000);
    // 28 letters: some 2^28 steps of backtracking, seconds of the event loop on any machine.
    const report = await latencyDuring(attack(28), `${gateway.url}${GATEWAY_BASE}/pets?unrelated`, {
      loopDelay: gateway.loopDelay,
      patienceMs: 60_000,
    });
    expectDelayed(report, BOUND_MS);
  });

  it('the same pattern still permits a matching header, and matches it the XPath way (anchors honoured)', async () => {
    const ok = await fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': 'acme' } });
    expect(ok.status).to.equal(200);
    expect(((await ok.json()) as { url: string }).url).to.equal('/pets');
    const upper = await fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': 'Acme' } });
    expect(upper.status).to.equal(403);
  });
});
