/**
 * Finding 6 (regular expressions): a policy's `string-regexp-match` runs on caller-controlled
 * values, so a pattern with nested quantifiers (`^([a-z]+)+$`) on a header must not let a
 * caller freeze the gateway. Played over real HTTP against a gateway process (xacmlAuthorize
 * relaying to a real echo backend) while unrelated requests measure how long they wait.
 */
import { expect } from 'chai';
import { startEchoBackend } from '../token/forward/helpers.js';
import { GATEWAY_BASE, latencyDuring, startGatewayProcess } from '../authorize/helpers/gateway-process.js';
import type { GatewayProcess } from '../authorize/helpers/gateway-process.js';

const S = 'http://www.w3.org/2001/XMLSchema#string';
const F = 'urn:oasis:names:tc:xacml:1.0:function:';

/** Permits a request whose X-Tenant header is lower-case letters, by a pattern that backtracks badly. */
const POLICY = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="tenant-regex"
    RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="tenant" Effect="Permit">
    <Condition>
      <Apply FunctionId="${F}string-regexp-match">
        <AttributeValue DataType="${S}">^([a-z]+)+$</AttributeValue>
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
  beforeEach(async () => {
    gateway = await startGatewayProcess(POLICY, backend.url);
  });
  afterEach(async () => {
    await gateway?.stop();
  });

  it('a tenant header made to backtrack gets its Deny, and an unrelated request is not delayed by more than 50 ms', async () => {
    const attackValue = `${'a'.repeat(40)}!`;
    const report = await latencyDuring(
      (signal) => fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': attackValue }, signal }),
      `${gateway.url}${GATEWAY_BASE}/pets?unrelated`,
    );
    // (The unrelated requests carry no X-Tenant header: Indeterminate, 403 as well.)
    expect(
      Math.max(...report.latencies),
      `unrelated request latencies (ms): ${report.latencies.map((l) => l.toFixed(1)).join(', ')}`,
    ).to.be.at.most(50);
    expect(report.attack).to.have.property('status', 403);
    const problem = JSON.parse((report.attack as { body: string }).body) as Record<string, unknown>;
    expect(problem).to.include({ status: 403, gateway_status: 'protocol:GATEWAY-1352', detail: DENIED });
  });

  it('the same pattern still permits a matching header, and matches it the XPath way (anchors honoured)', async () => {
    const ok = await fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': 'acme' } });
    expect(ok.status).to.equal(200);
    expect(((await ok.json()) as { url: string }).url).to.equal('/pets');
    const upper = await fetch(`${gateway.url}${GATEWAY_BASE}/pets`, { headers: { 'x-tenant': 'Acme' } });
    expect(upper.status).to.equal(403);
  });
});
