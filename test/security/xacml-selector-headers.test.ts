/**
 * Finding 6 (XPath): an `AttributeSelector` reads the XACML request as a document, and every
 * header of the invocation is an attribute of that request. A caller sending 1,500 headers must
 * not make each of its requests cost time in proportion (nor delay anyone else). Played over
 * real HTTP against a gateway process (xacmlAuthorize relaying to a real echo backend): the
 * gateway's own event-loop delay while the attack is answered, and an unrelated client meanwhile
 * (the measure's control is in xacml-redos.test.ts). 1,500 short headers fit in Node's default 16 KiB
 * of header bytes, but a Node server keeps only the first 1,000 or so headers by default
 * (`maxHeadersCount`, dropping the rest silently): the gateway's server here keeps 4,000, so that
 * the policy really sees the 1,500 (with the default, the old code took 0.5 s all the same), and
 * so does the echo backend here (a Node server on its defaults answered the relayed request 400).
 * The attack is sent once unmeasured first: the first request with 1,500 headers is slow in any
 * Express app (some 100 ms, code compiled on first use), with or without a policy.
 */
import { expect } from 'chai';
import express from 'express';
import { listen } from '../token/forward/helpers.js';
import { expectNotDelayed, GATEWAY_BASE, latencyDuring, startGatewayProcess } from '../authorize/helpers/gateway-process.js';
import type { GatewayProcess } from '../authorize/helpers/gateway-process.js';

const S = 'http://www.w3.org/2001/XMLSchema#string';
const F = 'urn:oasis:names:tc:xacml:1.0:function:';
const TENANT = 'org:gateway:action:transport:header:x-tenant';

/** Permits a request whose X-Tenant header is `acme`, read by an AttributeSelector with `path`. */
function policy(path: string): string {
  return `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os"
    xmlns:xacml-context="urn:oasis:names:tc:xacml:2.0:context:schema:os" PolicyId="tenant-selector"
    RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="tenant" Effect="Permit">
    <Condition>
      <Apply FunctionId="${F}string-is-in">
        <AttributeValue DataType="${S}">acme</AttributeValue>
        <AttributeSelector DataType="${S}" RequestContextPath="${path}"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;
}

/** 1,500 headers `h0: x` … `h1499: x` and X-Tenant (some 14 KiB: they fit the backend's 16 KiB too). */
function manyHeaders(): Headers {
  const headers = new Headers({ 'x-tenant': 'acme' });
  for (let i = 0; i < 1500; i++) headers.set(`h${i}`, 'x');
  return headers;
}

describe('security: many headers do not make an AttributeSelector slow (finding 6)', function () {
  this.timeout(30_000);
  let backend: { url: string; close: () => Promise<void> };
  let gateway: GatewayProcess | undefined;

  before(async () => {
    // An echo backend (method, URL, headers) that keeps up to 4,000 headers.
    const app = express();
    app.use((req, res) => {
      res.json({ method: req.method, url: req.url, headers: req.headers });
    });
    const started = await listen(app);
    started.server.maxHeadersCount = 4000;
    backend = started;
  });
  after(async () => {
    await backend?.close();
  });
  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
  });

  async function attack(path: string) {
    gateway = await startGatewayProcess(policy(path), backend.url, { maxHeadersCount: 4000 });
    const url = `${gateway.url}${GATEWAY_BASE}/pets`;
    const report = await latencyDuring((signal) => fetch(url, { headers: manyHeaders(), signal }), `${url}?unrelated`, {
      warmUp: true,
      loopDelay: gateway.loopDelay,
    });
    expectNotDelayed(report, 50);
    return report.attack as { status: number; body: string };
  }

  it('a selector of one attribute by id answers Permit for 1,500 headers, and an unrelated request is not delayed by more than 50 ms', async () => {
    const attacked = await attack(`//xacml-context:Action/xacml-context:Attribute[@AttributeId='${TENANT}']/xacml-context:AttributeValue`);
    expect(attacked.status, attacked.body).to.equal(200);
    expect((JSON.parse(attacked.body) as { headers: Record<string, string> }).headers).to.include({
      'x-tenant': 'acme',
      h0: 'x',
      h1499: 'x',
    });
  });

  it('any other XPath answers 403 (Indeterminate, fail closed) for 1,500 headers, and an unrelated request is not delayed by more than 50 ms', async () => {
    const attacked = await attack(`//xacml-context:Attribute[starts-with(@AttributeId, '${TENANT}')]/xacml-context:AttributeValue`);
    expect(attacked.status).to.equal(403);
    const problem = JSON.parse(attacked.body) as { gateway_status: string; detail: string };
    expect(problem.gateway_status).to.equal('protocol:GATEWAY-1352');
    expect(problem.detail).to.include('INDETERMINATE code:urn:oasis:names:tc:xacml:1.0:status:processing-error');
  });
});
