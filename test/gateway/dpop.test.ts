/**
 * DPoP through `createGateway` (a configuration object, the demo authorization server issuing
 * bound tokens): the record says the binding (kind and thumbprint), the XACML request carries
 * `org:gateway:subject:token:binding` (a policy can require a bound token), the backend gets
 * `Gateway-Token-Binding` and never the proof, and refusals are counted by reason.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import {
  createGateway,
  MemoryReplayStore,
  MemoryTransactionStore,
  type Gateway,
  type GatewayConfig,
  type TransactionRecord,
} from '../../src/index.js';
import { parsePrometheusText } from '../observability/prometheus-text.js';
import { memoryLog } from '../support/memory-log.js';
import { dpopKey, proof, type DpopKey } from '../token/binding/support.js';
import { close, echoBackend, listen } from './helpers.js';

const PUBLIC = 'https://api.example.org/edge';
const STRING = 'http://www.w3.org/2001/XMLSchema#string';
/** Permits only tokens bound by DPoP. */
const BOUND_ONLY = `<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="bound-only"
  RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="bound" Effect="Permit">
    <Condition>
      <Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-is-in">
        <AttributeValue DataType="${STRING}">jkt</AttributeValue>
        <SubjectAttributeDesignator AttributeId="org:gateway:subject:token:binding" DataType="${STRING}"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;

describe('createGateway: DPoP in the record, XACML, forwarding and metrics', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  let key: DpopKey;
  let gateway: Gateway;
  let server: Server;
  let base: string;
  const store = new MemoryTransactionStore();

  before(async () => {
    [as, echo, dir] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), mkdtemp(path.join(tmpdir(), 'gateway-dpop-'))]);
    key = await dpopKey();
    await writeFile(path.join(dir, 'bound-only.xml'), BOUND_ONLY);
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', dpop: 'allowed' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: true },
          authorization: { mode: 'xacml-Policy', policy: 'bound-only.xml' },
          recording: { xacmlRequests: 'all', incomingHeaders: true },
        },
      ],
    };
    gateway = createGateway({ config, baseDir: dir, store, publicBaseUrl: PUBLIC });
    server = createServer((req, res) => gateway.handler(req, res));
    base = await listen(server);
  });
  after(async () => {
    await close(server);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop(), rm(dir, { recursive: true, force: true })]);
  });

  const PATH = '/gateway/Ente/Pets/v1/pets/1';
  async function lastRecord(): Promise<TransactionRecord> {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { items } = await store.query({ limit: 1 });
    return items[0]!;
  }

  it('a bound token with its proof: relayed, the binding recorded, in the XACML request and forwarded; the proof kept from the backend', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
    const seen = echo.seen.length;
    const res = await fetch(`${base}${PATH}`, {
      headers: { authorization: `DPoP ${token}`, dpop: await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }) },
    });
    expect(res.status, await res.text()).to.equal(201);
    const relayed = echo.seen[seen]!;
    expect(relayed.headers['dpop']).to.equal(undefined);
    expect(relayed.headers['gateway-token-binding']).to.equal('jkt');
    const record = await lastRecord();
    expect(record.binding).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'verified' });
    const attributes = record.authorization?.request?.subject ?? [];
    expect(attributes.find((a) => a.id === 'org:gateway:subject:token:binding')?.values).to.deep.equal(['jkt']);
    // The recorded incoming headers redact the proof like any credential, and the token appears nowhere.
    expect(record.incoming?.headers?.['dpop']).to.equal('[redacted]');
    expect(JSON.stringify(record)).to.not.include(token);
  });

  it('an unbound token as Bearer: no binding anywhere, and the policy that asks for one denies', async () => {
    const token = await as.issueToken('client1', 'client1-secret');
    const res = await fetch(`${base}${PATH}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).to.equal(403);
    const record = await lastRecord();
    expect(record.binding).to.equal(undefined);
    expect((record.authorization?.request?.subject ?? []).some((a) => a.id === 'org:gateway:subject:token:binding')).to.equal(false);
  });

  it('records each refusal with its binding and reason, and counts it in gateway_token_binding_refusals_total (kind jkt)', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
    const once = await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token });
    const send = (init: Record<string, string>) => fetch(`${base}${PATH}`, { headers: init }).then((r) => r.status);
    expect(await send({ authorization: `DPoP ${token}`, dpop: once })).to.equal(201);
    expect(await send({ authorization: `DPoP ${token}`, dpop: once })).to.equal(401);
    // The refusal's record says which binding and why, as the metric does.
    expect((await lastRecord()).binding).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'refused', reason: 'replayed' });
    expect(await send({ authorization: `DPoP ${token}` })).to.equal(401);
    expect((await lastRecord()).binding).to.deep.equal({ kind: 'jkt', thumbprint: key.jkt, result: 'refused', reason: 'missing_proof' });
    expect(await send({ authorization: `Bearer ${token}` })).to.equal(401);
    expect((await lastRecord()).binding).to.deep.equal({
      kind: 'jkt',
      thumbprint: key.jkt,
      result: 'refused',
      reason: 'bearer_for_bound_token',
    });
    const metrics = parsePrometheusText(await gateway.metrics!.registry.metrics());
    expect(metrics.value('gateway_token_binding_refusals_total', { policy: 'DemoIdP', kind: 'jkt', reason: 'replayed' })).to.equal(1);
    expect(metrics.value('gateway_token_binding_refusals_total', { policy: 'DemoIdP', kind: 'jkt', reason: 'missing_proof' })).to.equal(1);
    expect(
      metrics.value('gateway_token_binding_refusals_total', { policy: 'DemoIdP', kind: 'jkt', reason: 'bearer_for_bound_token' }),
    ).to.equal(1);
  });
});

describe('createGateway: the store of DPoP proof identifiers as a dependency (proof_store)', function () {
  this.timeout(60_000);

  it('full: proofs refused with 503 ERR_PROOF_STORE_UNAVAILABLE (DEPENDENCY_UNAVAILABLE), one error line, then one line when it remembers again', async () => {
    const [as, echo] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend()]);
    const { lines, log: logger } = memoryLog();
    const store = new MemoryTransactionStore();
    const config: GatewayConfig = {
      tokenPolicies: {
        DemoIdP: {
          issuer: as.issuer,
          clientId: 'gateway',
          clientSecret: 'gateway-secret',
          dpop: 'required',
          dpopProofMaxAgeSeconds: 5,
        },
      },
      apis: [
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true },
        },
      ],
    };
    // Room for two proofs within their lifetime (5 s, no clock skew: room for a busy machine between the first and the last).
    const gateway = createGateway({
      config,
      store,
      publicBaseUrl: PUBLIC,
      dpopReplay: new MemoryReplayStore(2),
      tokenPolicyOptions: (options) => ({ ...options, clockSkew: 0 }),
      logger,
    });
    const server = createServer((req, res) => gateway.handler(req, res));
    const base = await listen(server);
    try {
      const key = await dpopKey();
      const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
      const PATH = '/gateway/Ente/Pets/v1/pets/1';
      const call = async () => {
        const res = await fetch(`${base}${PATH}`, {
          headers: { authorization: `DPoP ${token}`, dpop: await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }) },
        });
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
      };
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await call());
      expect(statuses.map((one) => one.status)).to.deep.equal([201, 201, 503, 503]);
      expect(JSON.parse(statuses[2]!.body)).to.deep.include({ status: 503, gateway_status: 'integration:GATEWAY-1375' });
      expect(statuses[2]!.retryAfter).to.equal('5');
      const { items } = await store.query({ limit: 1 });
      expect(items[0]!.outcome.code).to.equal('DEPENDENCY_UNAVAILABLE');
      expect(JSON.stringify(items[0]!.diagnostics)).to.include('full: 2 proofs within their lifetime');

      const downs = lines.filter((line) => line.fields['event'] === 'dependency_down');
      expect(downs).to.have.length(1);
      expect(downs[0]).to.deep.include({ level: 'error' });
      expect(downs[0]!.fields).to.deep.include({ dependency: 'proof_store' });
      expect(String(downs[0]!.fields['action'])).to.include('DPoP proofs are refused with 503');
      expect(gateway.dependencies()['proof_store']).to.deep.include({ state: 'down' });
      const metrics = parsePrometheusText(await gateway.metrics!.registry.metrics());
      expect(metrics.value('gateway_dependency_up', { dependency: 'proof_store' })).to.equal(0);

      // Once the first proofs' lifetime is over, the store has room again.
      await new Promise((resolve) => setTimeout(resolve, 5_100));
      expect((await call()).status).to.equal(201);
      const ups = lines.filter((line) => line.fields['event'] === 'dependency_up');
      expect(ups.map((line) => [line.level, line.fields['dependency']])).to.deep.equal([['info', 'proof_store']]);
      expect(gateway.dependencies()['proof_store']).to.deep.include({ state: 'up' });
      expect(lines.filter((line) => line.fields['event'] === 'dependency_down')).to.have.length(1);
    } finally {
      await close(server);
      await gateway.close();
      await Promise.all([as.stop(), echo.stop()]);
    }
  });
});
