/**
 * The README's scenario, end to end: the example's three parts in-process (demo authorization
 * server, petstore backend, gateway built from a copy of the example's configuration and policy),
 * real HTTP throughout, including the policy edit and ResetAllCaches.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { doggie, startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import { startGatewayServer, type GatewayServer } from '../../examples/petstore/gateway-server.js';
import { xacmlRequestOf, type GatewayConfig, type TransactionRecord } from '../../src/index.js';
import { createPdp } from '../../src/xacml/index.js';
import { editJson, exampleCopy } from './helpers.js';

describe('the README scenario, end to end', () => {
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let gateway: GatewayServer;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let api: string;
  const adminPassword = 'scenario-admin';
  const admin = { Authorization: `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}`, 'X-Gateway-Console': '1' };

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    backend = await startPetstoreBackend({ port: 0 });
    copy = await exampleCopy();
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!.DemoIdP!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
    });
    gateway = await startGatewayServer({ configFile: copy.configFile, port: 0, adminPort: 0, adminPassword });
    api = `${gateway.url}/gateway/Ente/PetStore/v1`;
  });
  after(async () => {
    await gateway?.stop();
    await backend?.stop();
    await as?.stop();
    await copy?.remove();
  });

  const putPet = (query: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${api}/pet${query}`, {
      method: 'PUT',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify(doggie),
    });

  it('no token: 400 with the Bearer challenge and GATEWAY-1366', async () => {
    const res = await putPet('');
    expect(res.status).to.equal(400);
    expect(res.headers.get('www-authenticate')).to.equal(
      'Bearer realm="DemoIdP", error="invalid_request", error_description="The request is missing a required token parameter"',
    );
    expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(await res.json()).to.deep.equal({
      type: 'https://httpstatuses.com/400',
      title: 'Bad Request',
      status: 400,
      detail: 'Token non presente',
      gateway_status: 'protocol:GATEWAY-1366',
    });
  });

  it('bad token: 401 Token non valido (GATEWAY-1367)', async () => {
    const res = await putPet('?access_token=not-a-token-the-server-issued');
    expect(res.status).to.equal(401);
    expect(res.headers.get('www-authenticate')).to.equal(
      'Bearer realm="DemoIdP", error="invalid_token", error_description="Token invalid"',
    );
    expect(await res.json()).to.include({ detail: 'Token non valido', gateway_status: 'protocol:GATEWAY-1367' });
  });

  it('client not in the policy: 403 with the decision text (GATEWAY-1352)', async () => {
    const token = await as.issueToken('client3', 'client3-secret');
    const res = await putPet(`?access_token=${token}`);
    expect(res.status).to.equal(403);
    expect(res.headers.get('www-authenticate')).to.equal(null);
    expect(await res.json()).to.deep.equal({
      type: 'https://httpstatuses.com/403',
      title: 'Forbidden',
      status: 403,
      detail:
        'Il mittente non è autorizzato ad invocare il servizio gw/PetStore (versione:1) erogato da gw/Ente ' +
        '(result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok)',
      gateway_status: 'protocol:GATEWAY-1352',
    });
  });

  it('the 403 record names rule "ko", keeps the request\'s attributes and the detail sent, and never the token', async () => {
    const token = await as.issueToken('client3', 'client3-secret');
    const query = await putPet(`?access_token=${token}`);
    const header = await putPet('', { Authorization: `Bearer ${token}`, Cookie: 'session=s3cret-session', 'X-Trace-Me': 'yes' });
    for (const res of [query, header]) {
      expect(res.status).to.equal(403);
      const detail = ((await res.json()) as { detail: string }).detail;
      const answer = await fetch(`${gateway.adminUrl}/gateway/console/api/transactions/${res.headers.get('gateway-transaction-id')}`, {
        headers: admin,
      });
      const text = await answer.text();
      expect(text).to.not.contain(token);
      const record = JSON.parse(text) as TransactionRecord;
      expect(record.problemDetail).to.equal(detail);
      const authorization = record.authorization!;
      expect(authorization.decision).to.equal('Deny');
      expect(authorization.explanation?.decidedBy).to.deep.equal({
        path: [
          { kind: 'Policy', id: 'urn:gateway:policy:petstore' },
          { kind: 'Rule', id: 'ko' },
        ],
        policy: 'urn:gateway:policy:petstore',
        rule: 'ko',
      });
      const ok = authorization.explanation!.steps.find((s) => s.id === 'ok')!;
      expect(ok.decision).to.equal('NotApplicable');
      expect(ok.failure).to.deep.equal({
        part: 'condition',
        failed: ['string-at-least-one-member-of(subject org:gateway:subject:token:clientId, string-bag("client1", "client2"))'],
      });
      // The request's attributes, all of them (not only the two the policy reads), the token left out.
      const request = authorization.request!;
      expect(request.subject.find((a) => a.id === 'org:gateway:subject:token:clientId')?.values).to.deep.equal(['client3']);
      expect(request.action.find((a) => a.id === 'org:gateway:action:action')?.values).to.deep.equal(['updatePet']);
      expect(request.action.find((a) => a.id === 'org:gateway:action:transport:header:accept')?.values).to.deep.equal(['application/json']);
      expect(request.action.some((a) => a.id === 'org:gateway:action:transport:header:authorization')).to.equal(false);
      expect(request.action.find((a) => a.id === 'org:gateway:action:url')?.values[0]).to.match(/\/gateway\/Ente\/PetStore\/v1\/pet$/);
      expect(JSON.stringify(request)).to.not.contain('access_token');
      const diagnostics = record.diagnostics.filter((d) => d.code === 'XACML_DECISION').map((d) => d.message);
      expect(diagnostics).to.include(
        'decided by rule "ko" of policy "urn:gateway:policy:petstore"; rule "ok" not applicable: condition false: ' + ok.failure!.failed[0],
      );
      // Replayed: the policy in force decides the same; with client3 added it would permit.
      const replay = xacmlRequestOf(record)!;
      const policy = await readFile(copy.policyFile, 'utf8');
      expect(createPdp({ policies: [policy] }).evaluate(replay).results[0]!.decision).to.equal('Deny');
      const client2 = '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>';
      const draft = policy.replace(client2, client2 + client2.replace('client2', 'client3'));
      expect(createPdp({ policies: [draft] }).evaluate(replay).results[0]!.decision).to.equal('Permit');
    }
    const second = JSON.parse(
      await (
        await fetch(`${gateway.adminUrl}/gateway/console/api/transactions/${header.headers.get('gateway-transaction-id')}`, {
          headers: admin,
        })
      ).text(),
    ) as TransactionRecord;
    // A credential-bearing header other than Authorization is in the request but not its value.
    expect(second.authorization!.request!.action.find((a) => a.id === 'org:gateway:action:transport:header:cookie')?.values).to.deep.equal([
      '[redacted]',
    ]);
    expect(second.authorization!.request!.incomplete).to.equal(true);
    expect(
      second.authorization!.request!.action.find((a) => a.id === 'org:gateway:action:transport:header:x-trace-me')?.values,
    ).to.deep.equal(['yes']);
  });

  it('listed client: 200 with the pet, the gateway headers, token information to the backend and not the token', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    const res = await putPet(`?access_token=${token}`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal(doggie);
    expect(res.headers.get('content-type')).to.equal('application/json');
    expect(res.headers.get('server')).to.equal('Gateway');
    expect(res.headers.get('gateway-message-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    const transactionId = res.headers.get('gateway-transaction-id')!;

    const seen = backend.lastRequest;
    expect(seen.url).to.equal('/pet');
    expect(seen.headers?.['gateway-token-subject']).to.equal('client1');
    expect(seen.headers?.['gateway-token-clientid']).to.equal('client1');
    expect(seen.headers?.['gateway-transaction-id']).to.equal(transactionId);
    expect(JSON.stringify(seen)).to.not.contain(token);

    // The console shows the transaction with the outgoing headers (message recording, docs/console.md).
    const record = await fetch(`${gateway.adminUrl}/gateway/console/api/transactions/${transactionId}`, { headers: admin });
    expect(record.status).to.equal(200);
    const body = (await record.json()) as TransactionRecord;
    expect(body.outcome.code).to.equal('OK');
    expect(body.sender.subject).to.equal('client1');
    expect(body.outgoing?.headers).to.have.property('Gateway-Token-Subject', 'client1');
    expect(JSON.stringify(body)).to.not.contain(token);
  });

  it('adding client3 to the policy turns 403 into 200 after ResetAllCaches, not before', async () => {
    const token = await as.issueToken('client3', 'client3-secret');
    const policy = await readFile(copy.policyFile, 'utf8');
    const client2 = '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>';
    expect(policy).to.contain(client2);
    await writeFile(copy.policyFile, policy.replace(client2, `${client2}\n            ${client2.replace('client2', 'client3')}`));

    expect((await putPet(`?access_token=${token}`)).status, 'the cached policy is still in force').to.equal(403);
    const reset = await fetch(`${gateway.adminUrl}/gateway/admin/reset-caches`, { method: 'POST', headers: admin });
    expect(reset.status).to.equal(200);
    const res = await putPet(`?access_token=${token}`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal(doggie);
  });

  it('an invalid policy at reset is refused and the previous policy stays in force', async () => {
    await writeFile(copy.policyFile, '<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os">');
    const reset = await fetch(`${gateway.adminUrl}/gateway/admin/reset-caches`, { method: 'POST', headers: admin });
    expect(reset.status).to.equal(422);
    expect(((await reset.json()) as { detail: string }).detail).to.contain('apis[0].authorization.policy');
    const token = await as.issueToken('client3', 'client3-secret');
    expect((await putPet(`?access_token=${token}`)).status).to.equal(200);
  });
});
