import { expect } from 'chai';
import type { TransactionRecord } from '../../src/index.js';
import { eventually } from './helpers.js';
import { CONSOLE_USER, PET, runFourOutcomes, startScenario, type Scenario } from './scenario.js';

const DECISION = 'result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok';

describe('transaction records of the reference scenario (real oidc-provider, real HTTP)', function () {
  this.timeout(30_000);
  let scenario: Scenario;
  let responses: Awaited<ReturnType<typeof runFourOutcomes>>;
  const records: Partial<Record<'400' | '401' | '403' | '200', TransactionRecord>> = {};

  before(async () => {
    scenario = await startScenario();
    responses = await runFourOutcomes(scenario);
    for (const [status, res] of Object.entries(responses) as Array<[keyof typeof responses, Response]>) {
      expect(res.status).to.equal(Number(status));
      const id = res.headers.get('gateway-transaction-id');
      expect(id, `Gateway-Transaction-ID of the ${status}`).to.be.a('string');
      records[status] = await eventually(() => scenario.store.get(id!), `the record of the ${status}`);
    }
  });
  after(() => scenario?.stop());

  it('400 without a token: Gestione Token Fallita, GATEWAY-1366', () => {
    const r = records['400']!;
    expect(r.status).to.equal(400);
    expect(r.outcome).to.deep.equal({ code: 'TOKEN_FAILED', label: 'Gestione Token Fallita', en: 'Token handling failed' });
    expect(r.gatewayStatus).to.equal('protocol:GATEWAY-1366');
    expect(r.errorCode).to.equal('ERR_TOKEN_MISSING');
    expect(r.api).to.deep.equal({ provider: 'Ente', name: 'PetStore', version: 1 });
    expect(r.operation).to.equal('updatePet');
    expect(r.method).to.equal('PUT');
    expect(r.url).to.equal('/gateway/Ente/PetStore/v1/pet');
    expect(r.sender).to.deep.equal({});
    expect(r.tokenInfo).to.equal(undefined);
    expect(r.diagnostics.map((d) => d.code)).to.include('ERR_TOKEN_MISSING');
    expect(responses['400'].headers.get('gateway-message-id')).to.equal(null);
  });

  it('401 with an invalid token: Gestione Token Fallita, GATEWAY-1367', () => {
    const r = records['401']!;
    expect(r.status).to.equal(401);
    expect(r.outcome.code).to.equal('TOKEN_FAILED');
    expect(r.outcome.label).to.equal('Gestione Token Fallita');
    expect(r.gatewayStatus).to.equal('protocol:GATEWAY-1367');
    expect(r.tokenInfo?.method).to.equal('header');
    expect(r.tokenInfo?.policy).to.equal('demo-idp');
    expect(r.sender.subject).to.equal(undefined);
    expect(r.diagnostics.map((d) => d.code)).to.include('ERR_TOKEN_INVALID');
  });

  it('403 for client3: Autorizzazione Negata, sender and claims from introspection, decision text in diagnostics', () => {
    const r = records['403']!;
    expect(r.status).to.equal(403);
    expect(r.outcome).to.deep.equal({ code: 'AUTHORIZATION_DENIED', label: 'Autorizzazione Negata', en: 'Authorization denied' });
    expect(r.gatewayStatus).to.equal('protocol:GATEWAY-1352');
    expect(r.sender).to.include({ subject: 'client3', clientId: 'client3', issuer: scenario.as.issuer });
    const claims = r.tokenInfo!.introspection!;
    expect(claims).to.include({
      active: true,
      sub: 'client3',
      azp: 'client3',
      client_id: 'client3',
      scope: 'read write',
      iss: scenario.as.issuer,
    });
    expect(claims['aud']).to.satisfy((aud: unknown) => aud === 'petstore-api' || (Array.isArray(aud) && aud.includes('petstore-api')));
    expect(r.authorization?.decision).to.equal('Deny');
    expect(r.authorization?.text).to.equal(DECISION);
    expect(
      r.diagnostics.some((d) => d.message.includes(DECISION)),
      JSON.stringify(r.diagnostics),
    ).to.equal(true);
    expect(r.url).to.equal('/gateway/Ente/PetStore/v1/pet');
    expect(r.outgoing, 'nothing went to the backend').to.equal(undefined);
  });

  it('200 for client1: Ok, relayed, with the Gateway-Token-* headers sent to the backend in the outgoing contents', async () => {
    const r = records['200']!;
    const res = responses['200'];
    expect(await res.json()).to.deep.equal(PET);
    expect(r.status).to.equal(200);
    expect(r.outcome).to.deep.equal({ code: 'OK', label: 'Ok', en: 'Ok' });
    expect(r.messageId).to.equal(res.headers.get('gateway-message-id'));
    expect(r.sender).to.include({ subject: 'client1', clientId: 'client1', issuer: scenario.as.issuer });
    expect(r.tokenInfo!.introspection).to.include({ sub: 'client1', azp: 'client1', scope: 'read write' });
    expect(r.authorization?.decision).to.equal('Permit');
    const headers = r.outgoing!.headers;
    expect(headers).to.include({
      'Gateway-Token-Subject': 'client1',
      'Gateway-Token-ClientId': 'client1',
      'Gateway-Token-Issuer': scenario.as.issuer,
    });
    expect(headers['Gateway-Token-Scopes']).to.equal('read,write');
    // They are what the backend received.
    const seen = scenario.backendSaw.get(r.id)!;
    expect(seen['gateway-token-subject']).to.equal('client1');
    expect(seen['gateway-token-scopes']).to.equal(headers['Gateway-Token-Scopes']);
  });

  it('a relayed backend 404 or 500 is an outcome of its own (Risposta HTTP 4xx / 5xx), not Ok', async () => {
    const token = await scenario.as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    for (const [status, code, label] of [
      [404, 'BACKEND_4XX', 'Risposta HTTP 4xx'],
      [500, 'BACKEND_5XX', 'Risposta HTTP 5xx'],
    ] as const) {
      const res = await scenario.putPet(token, true, status);
      expect(res.status).to.equal(status);
      expect(await res.json()).to.deep.equal({ error: `backend says ${status}` });
      const r = await eventually(() => scenario.store.get(res.headers.get('gateway-transaction-id')!), `the record of the ${status}`);
      expect(r.status).to.equal(status);
      expect(r.outcome).to.deep.equal({ code, label, en: `Backend answered ${status === 404 ? '4xx' : '5xx'}` });
      expect(r.errorCode).to.equal(undefined);
      expect(r.authorization?.decision).to.equal('Permit');
    }
  });

  it('records no outgoing headers when the API message recording is off', async () => {
    scenario.settings.recordOutgoingHeaders = false;
    try {
      const token = await scenario.as.issueToken('client2', 'client2-secret', { scope: 'read' });
      const res = await scenario.putPet(token);
      expect(res.status).to.equal(200);
      const r = await eventually(() => scenario.store.get(res.headers.get('gateway-transaction-id')!));
      expect(r.outcome.code).to.equal('OK');
      expect(r.outgoing).to.equal(undefined);
      expect(scenario.backendSaw.get(r.id)!['gateway-token-subject'], 'forwarding itself still happened').to.equal('client2');
      expect(r.tokenInfo!.introspection!['scope']).to.equal('read');
    } finally {
      scenario.settings.recordOutgoingHeaders = true;
    }
  });

  it('503 when the authorization server is down: outcome and cause in the diagnostics', async () => {
    const token = await scenario.as.issueToken('client1', 'client1-secret', { scope: 'read' });
    await scenario.as.stop();
    try {
      const res = await scenario.putPet(token);
      expect(res.status).to.equal(503);
      const r = await eventually(() => scenario.store.get(res.headers.get('gateway-transaction-id')!));
      expect(r.outcome.code).to.equal('AUTHORIZATION_SERVER_ERROR');
      expect(r.gatewayStatus).to.equal('protocol:GATEWAY-1369');
      const cause = r.diagnostics.find((d) => d.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
      expect(cause?.level).to.equal('error');
      expect(cause?.message, 'the cause names what failed').to.match(/introspection|discovery|connect|ECONNREFUSED|fetch/i);
    } finally {
      await scenario.as.start();
    }
  });

  it('never stores or serves a token value, and strips access_token from URLs', async () => {
    const all = scenario.store.query({ limit: 500 }).items;
    expect(all.length).to.be.at.least(5);
    expect(scenario.tokens.length).to.be.at.least(4);
    const auth = `Basic ${Buffer.from(`${CONSOLE_USER.username}:${CONSOLE_USER.password}`).toString('base64')}`;
    const served = await (await fetch(`${scenario.consoleUrl}api/transactions?limit=500`, { headers: { authorization: auth } })).text();
    for (const record of all) {
      const json = JSON.stringify(record);
      expect(record.url).not.to.include('access_token');
      for (const token of scenario.tokens) expect(json, `record ${record.id}`).not.to.include(token);
    }
    for (const token of scenario.tokens) expect(served).not.to.include(token);
  });
});
