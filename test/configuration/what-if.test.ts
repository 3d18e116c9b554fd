/**
 * What-if through the configuration API: a draft policy evaluated against the XACML requests
 * recorded for the API's last transactions, on the example gateway with real calls (client1's
 * Permit, client3's Deny, a call without a token): every decision that would change with its
 * transaction, caller and rule; the transactions that could not be evaluated counted with why;
 * nothing saved, nothing in force; a broken draft 422 as an upload; admin only; N capped; audited.
 * And the same read back from a PostgreSQL transaction store.
 */
import { readdir, readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { AuditEntry } from '../../src/operators/audit.js';
import { PostgresTransactionStore, type GatewayConfig, type TransactionRecord } from '../../src/index.js';
import type { WhatIfReport } from '../../src/configuration/what-if.js';
import { adminPool, databaseUrl, dropSchema, removeFile, spillPath, testSchema, until } from '../postgres/helpers.js';
import { OperatorClient, PASSWORDS, startPetstore, withClient3, type PetstoreGateway } from './helpers.js';

const WHAT_IF = '/gateway/configuration/api/apis/Ente/PetStore/1/policy/what-if';

describe('what-if of a draft policy in the configuration API', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let original: string;
  let client3Deny: string;
  let client1Permit: string;

  /** The record of a transaction, once the gateway has saved it. */
  async function recorded(id: string): Promise<TransactionRecord> {
    for (let i = 0; i < 200; i++) {
      const record = await pet.server.gateway.store.get(id);
      if (record !== undefined) return record;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`transaction ${id} was never recorded`);
  }
  async function call(client: 'client1' | 'client3', status: number): Promise<string> {
    const res = await pet.putPetAs(client);
    expect(res.status).to.equal(status);
    const id = res.headers.get('gateway-transaction-id')!;
    await recorded(id);
    return id;
  }
  async function run(
    text: string,
    extra: Record<string, unknown> = {},
    client = ada,
  ): Promise<{
    status: number;
    body: WhatIfReport & {
      requestedLimit?: number;
      saved: boolean;
      file: string;
      issues?: Array<Record<string, unknown>>;
      detail?: string;
    };
  }> {
    const res = await client.json(WHAT_IF, 'POST', { text, ...extra });
    return { status: res.status, body: (await res.json()) as never };
  }
  const versions = async () => (await readdir(`${pet.copy.configFile}.versions`)).length;

  before(async () => {
    pet = await startPetstore();
    ada = new OperatorClient(pet.server.adminUrl!);
    expect((await ada.signIn('ada', PASSWORDS.ada)).status).to.equal(200);
    original = await readFile(pet.copy.policyFile, 'utf8');
    // The API's traffic: a Permit, a Deny, and a call refused before authorization.
    client1Permit = await call('client1', 200);
    client3Deny = await call('client3', 403);
    const anonymous = await fetch(`${pet.api}/pet/1`);
    expect(anonymous.status).to.equal(400);
    await recorded(anonymous.headers.get('gateway-transaction-id')!);
  });
  after(() => pet?.stop());

  it('a draft that changes nothing lists nothing, and counts what it could not evaluate, with why', async () => {
    const { status, body } = await run(original);
    expect(status).to.equal(200);
    expect(body).to.include({
      api: 'Ente/PetStore/v1',
      file: 'policies/petstore.xml',
      limit: 200,
      transactions: 3,
      evaluated: 1,
      unchanged: 1,
      incomplete: 0,
      saved: false,
    });
    expect(body.changed).to.deep.equal([]);
    expect(body.skipped.map((s) => [s.reason, s.count])).to.deep.equal([
      ['permit', 1],
      ['noAuthorization', 1],
    ]);
    expect(body.skipped[0]!.why).to.include(
      'the record of a Permit keeps no XACML request unless the API\'s recording.xacmlRequests is "all"',
    );
    expect(body.window!.to).to.be.at.least(body.window!.from);
  });

  it("adding client3 to the bag lists client3's recorded 403 turning to Permit, with the rule; nothing saved or in force", async () => {
    const before = await versions();
    const { status, body } = await run(withClient3(original));
    expect(status).to.equal(200);
    expect(body).to.include({ transactions: 3, evaluated: 1, unchanged: 0 });
    expect(body.changed).to.have.length(1);
    const change = body.changed[0]!;
    const record = await recorded(client3Deny);
    expect(change).to.deep.equal({
      id: client3Deny,
      time: record.startedAt,
      caller: { subject: record.sender.subject, clientId: 'client3' },
      method: 'PUT',
      operation: 'updatePet',
      status: 403,
      recorded: { decision: 'Deny', rule: 'ko', policy: 'urn:gateway:policy:petstore' },
      draft: {
        decision: 'Permit',
        rule: 'ok',
        policy: 'urn:gateway:policy:petstore',
        path: ['Policy "urn:gateway:policy:petstore"', 'Rule "ok"'],
      },
    });
    expect(await readFile(pet.copy.policyFile, 'utf8')).to.equal(original);
    expect(await versions()).to.equal(before);
    const state = (await (await ada.fetch('/gateway/configuration/api/state')).json()) as { nodes: Array<{ state: string }> };
    expect(state.nodes[0]!.state).to.equal('in force');
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    expect((await pet.putPetAs('client3')).status, 'nothing is in force').to.equal(403);
  });

  it('lists a Deny turning NotApplicable, without a rule', async () => {
    const { body } = await run(original.replace('<Rule RuleId="ko" Effect="Deny"/>', ''));
    // client3 has called twice now (the call after the reset above): both change.
    expect(body.changed.map((c) => [c.caller.clientId, c.recorded.decision, c.draft.decision])).to.deep.equal([
      ['client3', 'Deny', 'NotApplicable'],
      ['client3', 'Deny', 'NotApplicable'],
    ]);
    expect(body.changed[1]!.id).to.equal(client3Deny);
    expect(body.changed[0]!.draft).to.deep.equal({ decision: 'NotApplicable' });
  });

  it("leaves out records of another API the store's prefix filter finds, and counts an unreadable or incomplete request", async () => {
    const denied = structuredClone(await recorded(client3Deny)) as TransactionRecord & {
      authorization: { request: Record<string, unknown> };
    };
    const store = pet.server.gateway.store;
    // Ente/PetStore/v10 starts with Ente/PetStore/v1: not the same API.
    await store.save({ ...denied, id: 'other-api', api: { ...denied.api!, version: 10 } });
    await store.save({
      ...denied,
      id: 'unreadable',
      authorization: { ...denied.authorization, request: { subject: 'not a list' } as never },
    });
    await store.save({
      ...denied,
      id: 'incomplete',
      authorization: { ...denied.authorization, request: { ...denied.authorization.request, incomplete: true } },
    });
    const { body } = await run(withClient3(original));
    expect(body.transactions).to.equal(6);
    expect(body.changed.map((c) => c.id))
      .to.include.members(['incomplete', client3Deny])
      .and.not.include('other-api');
    expect(body.changed.find((c) => c.id === 'incomplete')!.incomplete).to.equal(true);
    expect(body.incomplete).to.equal(1);
    expect(body.skipped.find((s) => s.reason === 'unreadable')!.count).to.equal(1);
  });

  it('a broken draft is 422 as an upload is, with the element and line; nothing evaluated', async () => {
    const broken = original.replace(
      'function:string-at-least-one-member-of">\n          <SubjectAttributeDesignator',
      'function:string-no-such-function">\n          <SubjectAttributeDesignator',
    );
    const { status, body } = await run(broken);
    expect(status).to.equal(422);
    expect(body.issues).to.have.length(1);
    expect(body.issues![0]).to.include({
      path: 'apis[0].authorization.policy',
      file: 'policies/petstore.xml',
      element: '/Policy[@PolicyId="urn:gateway:policy:petstore"]/Rule[@RuleId="ok"]/Condition/Apply[1]/Apply[2]',
      line: broken.split('\n').findIndex((l) => l.includes('string-no-such-function')) + 1,
    });
    const malformed = await run('<Policy');
    expect(malformed.status).to.equal(422);
    expect(String(malformed.body.issues![0]!['message'])).to.match(/^Malformed XML/);
    expect((await run('  ')).status).to.equal(400);
  });

  it('is for admins: a viewer and an operator get 403', async () => {
    for (const [user, password] of [
      ['vera', PASSWORDS.vera],
      ['otto', PASSWORDS.otto],
    ] as const) {
      const client = new OperatorClient(pet.server.adminUrl!);
      await client.signIn(user, password);
      const { status } = await run(withClient3(original), {}, client);
      expect(status, user).to.equal(403);
    }
  });

  it('reads the last N transactions, 200 by default, N capped at 2000; a bad N is 400', async () => {
    const one = await run(original, { limit: 1 });
    expect(one.body).to.include({ limit: 1, transactions: 1 });
    // 2100 more denials of client3, newest: N is what bounds the work.
    const denied = await recorded(client3Deny);
    for (let i = 0; i < 2100; i++) await pet.server.gateway.store.save({ ...denied, id: `bulk-${i}` });
    const byDefault = await run(withClient3(original));
    expect(byDefault.body).to.include({ limit: 200, transactions: 200, evaluated: 200 });
    expect(byDefault.body.changed).to.have.length(200);
    expect(byDefault.body.changed[0]!.id).to.equal('bulk-2099');
    const capped = await run(withClient3(original), { limit: 5000 });
    expect(capped.status).to.equal(200);
    expect(capped.body).to.include({ limit: 2000, requestedLimit: 5000, transactions: 2000, evaluated: 2000 });
    expect(capped.body.changed).to.have.length(2000);
    expect(capped.body.changed.at(-1)!.id).to.equal('bulk-100');
    for (const limit of [0, -1, 1.5, '10', null]) {
      const bad = await run(original, { limit });
      expect(bad.status, String(limit)).to.equal(400);
      expect(bad.body.detail).to.include('limit must be a whole number');
    }
  });

  it('logs each run in the audit log: who, which API, how many would change; a refused one too', async () => {
    const { items } = (await (await ada.fetch('/gateway/operators/audit?limit=200')).json()) as { items: AuditEntry[] };
    const runs = items
      .filter((e) => e.action === 'policy.what-if' || (e.action === 'forbidden' && e.target?.endsWith('/policy/what-if')))
      .reverse();
    expect(runs.map((e) => `${e.actor} ${e.action} ${e.result} ${e.status}`)).to.deep.equal([
      ...Array(4).fill('ada policy.what-if ok 200'),
      'ada policy.what-if refused 422',
      'ada policy.what-if refused 422',
      'ada policy.what-if refused 400',
      'vera forbidden refused 403',
      'otto forbidden refused 403',
      ...Array(3).fill('ada policy.what-if ok 200'),
      ...Array(5).fill('ada policy.what-if refused 400'),
    ]);
    expect(runs[1]).to.include({ target: 'Ente/PetStore/v1 policies/petstore.xml' });
    expect(runs[0]!.detail).to.equal(
      'draft evaluated against the last 3 transactions (limit 200): 1 evaluated, 0 would change, 2 skipped (1 permit, 1 noAuthorization); nothing saved',
    );
    expect(runs[1]!.detail).to.equal(
      'draft evaluated against the last 3 transactions (limit 200): 1 evaluated, 1 would change (1 Deny→Permit), 2 skipped (1 permit, 1 noAuthorization); nothing saved',
    );
    expect(runs[4]!.detail).to.include('string-no-such-function');
    expect(runs[11]!.detail).to.match(
      /^draft evaluated against the last 2000 transactions \(limit 2000\): 2000 evaluated, 2000 would change \(2000 Deny→Permit\)/,
    );
    expect(client1Permit).to.be.a('string');
  });
});

describe('what-if on transactions recorded in PostgreSQL', function () {
  this.timeout(60_000);
  const schema = testSchema();
  const pool = adminPool();
  let store: PostgresTransactionStore;
  let pet: PetstoreGateway;

  before(async () => {
    store = await PostgresTransactionStore.create({ connectionString: databaseUrl(), schema, flushDelayMs: 10, spillFile: spillPath() });
    pet = await startPetstore({ store });
  });
  after(async () => {
    await pet?.stop();
    await store?.close();
    await removeFile(store?.spillFile);
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("reads the API's requests back from the table: client3's 403 would be permitted", async () => {
    expect((await pet.putPetAs('client1')).status).to.equal(200);
    const denied = await pet.putPetAs('client3');
    expect(denied.status).to.equal(403);
    const id = denied.headers.get('gateway-transaction-id')!;
    await until(async () => (await store.query({ api: 'Ente/PetStore/v1' })).items.length === 2, 'both records in PostgreSQL');
    const ada = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
    const res = await ada.json(WHAT_IF, 'POST', { text: withClient3(await readFile(pet.copy.policyFile, 'utf8')) });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as WhatIfReport;
    expect(body).to.include({ transactions: 2, evaluated: 1, unchanged: 0 });
    expect(body.changed.map((c) => [c.id, c.caller.clientId, c.recorded.decision, c.draft.decision, c.draft.rule])).to.deep.equal([
      [id, 'client3', 'Deny', 'Permit', 'ok'],
    ]);
    expect(body.skipped.map((s) => [s.reason, s.count])).to.deep.equal([['permit', 1]]);
  });
});

describe('what-if with recording.xacmlRequests "all": a Permit that the draft would deny is listed too', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;

  before(async () => {
    pet = await startPetstore();
  });
  after(() => pet?.stop());

  it("records the request of every decision once asked, and lists client1's Permit turning to Deny when client1 leaves the bag", async () => {
    const ada = new OperatorClient(pet.server.adminUrl!);
    expect((await ada.signIn('ada', PASSWORDS.ada)).status).to.equal(200);
    const PETSTORE = '/gateway/configuration/api/apis/Ente/PetStore/1';
    const { document, version } = (await (await ada.fetch('/gateway/configuration/api/config')).json()) as {
      document: GatewayConfig;
      version: { version: number };
    };
    const api = document.apis[0]!;
    const saved = await ada.json(PETSTORE, 'PUT', {
      api: { ...api, recording: { ...api.recording, xacmlRequests: 'all' } },
      comment: 'keep the requests of Permits',
      baseVersion: version.version,
    });
    expect(saved.status, await saved.clone().text()).to.equal(200);
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);

    const token = await pet.as.issueToken('client1', 'client1-secret');
    const permitted = await fetch(`${pet.api}/pet/10`, { headers: { authorization: `Bearer ${token}` } });
    expect(permitted.status).to.equal(200);
    const id = permitted.headers.get('gateway-transaction-id')!;
    let record: TransactionRecord | undefined;
    for (let i = 0; i < 200 && record === undefined; i++) {
      record = await pet.server.gateway.store.get(id);
      if (record === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(record!.authorization).to.deep.include({ decision: 'Permit' });
    expect(record!.authorization!.request, 'the Permit keeps its request').to.not.equal(undefined);
    expect(JSON.stringify(record)).to.not.include(token);

    const policy = await readFile(pet.copy.policyFile, 'utf8');
    const withoutClient1 = policy.replace(
      '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client1</AttributeValue>',
      '',
    );
    expect(withoutClient1).to.not.equal(policy);
    const res = await ada.json(WHAT_IF, 'POST', { text: withoutClient1 });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as WhatIfReport;
    expect(body.changed.map((c) => [c.id, c.caller.clientId, c.recorded.decision, c.draft.decision])).to.deep.equal([
      [id, 'client1', 'Permit', 'Deny'],
    ]);
    expect(body.skipped.filter((s) => s.reason === 'permit')).to.deep.equal([]);
  });
});
