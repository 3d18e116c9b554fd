/**
 * The transactions a traffic what-if hands to its worker: read from a store page by page into
 * their compact form, they give the worker the same transactions, and the simulation the same
 * answer, as every claim and header of the records would.
 */
import { expect } from 'chai';
import { factsNeeded, readTrafficWhatIfRecords } from '../../src/configuration/traffic-what-if.js';
import { readTransactionRows, TransactionRowsWriter } from '../../src/configuration/traffic-rows.js';
import { apiKey, MemoryTransactionStore, type TransactionRecord } from '../../src/index.js';
import type { TrafficPolicy } from '../../src/traffic/schema.js';
import { simulateTrafficPolicy, type SimulatedTransaction } from '../../src/traffic/simulate.js';
import { makeRecord } from '../record/helpers.js';

const NOW = 1_800_000_000_000;

/** Records with claims in each of the token's three sources, nested and odd ones, and headers in any case. */
function records(): TransactionRecord[] {
  const out: TransactionRecord[] = [];
  for (let i = 0; i < 1234; i++) {
    const tenant = `t${i % 7}`;
    out.push(
      makeRecord({
        startedAt: NOW - 600_000 + i * 50,
        durationMs: i % 5 === 0 ? 1500 : 300,
        api: { provider: 'Ente', name: i % 11 === 0 ? 'Other' : 'PetStore', version: 1 },
        ...(i % 4 === 0 ? {} : { operation: i % 2 === 0 ? 'getPet' : 'updatePet' }),
        ...(i % 13 === 0 ? { code: 'TOKEN_FAILED' as const } : {}),
        clientAddress: `10.0.0.${i % 9}`,
        sender: i % 17 === 0 ? {} : { clientId: `c${i % 5}`, subject: `s${i % 3}`, issuer: 'https://idp' },
        ...(i % 19 === 0
          ? {}
          : {
              tokenInfo: {
                introspection: { tenant: i % 3 === 0 ? tenant : undefined, org: { unit: `u${i % 4}`, deep: [1, { x: null }] }, n: i % 6 },
                jwt: { tenant: `jwt-${tenant}`, 'a.b': `dotted-${i % 2}`, ['__proto__']: `proto-${i % 3}` },
                userInfo: { email: `e${i % 8}@x`, tenant: 'userinfo' },
              },
            }),
        ...(i % 23 === 0
          ? {}
          : {
              incoming: { headers: { 'X-Tenant': tenant, ...(i % 2 === 0 ? { 'x-tenant': `lower-${tenant}` } : {}), 'x-other': `o${i}` } },
            }),
      }),
    );
  }
  return out;
}

/** A record as the simulation reads it with every claim and every header. */
function whole(record: TransactionRecord): SimulatedTransaction {
  const token = record.tokenInfo;
  return {
    startedAt: record.startedAt,
    durationMs: record.durationMs,
    api: apiKey(record.api!),
    operation: record.operation,
    clientId: record.sender.clientId,
    subject: record.sender.subject,
    issuer: record.sender.issuer,
    clientAddress: record.clientAddress,
    ...(token === undefined ? {} : { claims: { ...token.userInfo, ...token.jwt, ...token.introspection } }),
    ...(record.incoming === undefined ? {} : { headers: record.incoming.headers }),
  };
}

describe('configuration: the transactions a traffic what-if hands to its worker', () => {
  it('come back from their compact form as they were written, absent members absent', () => {
    const given: SimulatedTransaction[] = [
      { startedAt: 1, durationMs: 3, api: 'A/B/v1', operation: 'op', clientId: 'c', subject: 's', issuer: 'i', clientAddress: '::1' },
      { startedAt: 2.5, api: 'A/B/v1', claims: { tenant: 'x', n: 1.25, o: { a: [1, null, 'é\u{1F600}'] } }, headers: { 'X-T': 'v' } },
      { startedAt: 3, durationMs: 0, api: 'A/B/v2', claims: {}, headers: {} },
    ];
    const writer = new TransactionRowsWriter();
    writer.add(given[0]!);
    writer.endPage();
    writer.add(given[1]!);
    writer.add(given[2]!);
    writer.endPage();
    writer.endPage();
    expect(writer.rows.pages).to.have.length(2);
    const back = readTransactionRows(writer.rows);
    expect(back).to.deep.equal([
      given[0],
      {
        ...given[1],
        durationMs: undefined,
        operation: undefined,
        clientId: undefined,
        subject: undefined,
        issuer: undefined,
        clientAddress: undefined,
      },
      { ...given[2], operation: undefined, clientId: undefined, subject: undefined, issuer: undefined, clientAddress: undefined },
    ]);
  });

  it('write a claim that JSON cannot write as "?", the group the policy gives it', () => {
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    const writer = new TransactionRowsWriter();
    writer.add({ startedAt: 1, api: 'A/B/v1', claims: { big: 10n, cycle, tenant: 't1' } });
    writer.endPage();
    expect(readTransactionRows(writer.rows)[0]!.claims).to.deep.equal({ big: '?', cycle: '?', tenant: 't1' });
    const policy = { name: 'p', metric: 'requests', limit: 1, windowSeconds: 1, groupBy: ['claim:big', 'claim:cycle'] } as TrafficPolicy;
    const simulated = simulateTrafficPolicy(policy, readTransactionRows(writer.rows));
    expect(simulated.groupCount).to.equal(1);
    expect(simulateTrafficPolicy(policy, [{ startedAt: 1, api: 'A/B/v1', claims: { big: 10n, cycle } }])).to.deep.equal(simulated);
  });

  const policies: TrafficPolicy[] = [
    { name: 'tenant', metric: 'requests', limit: 3, windowSeconds: 10, groupBy: ['claim:tenant'] },
    { name: 'nested', metric: 'requests', limit: 4, windowSeconds: 10, groupBy: ['claim:org.unit', 'claim:a.b', 'claim:org'] },
    {
      name: 'odd',
      metric: 'requests',
      limit: 2,
      windowSeconds: 5,
      groupBy: ['claim:__proto__', 'claim:email', 'claim:n', 'claim:missing'],
    },
    { name: 'header', metric: 'requests', limit: 2, windowSeconds: 10, groupBy: ['header:X-TENANT', 'clientId'] },
    { name: 'concurrent', metric: 'concurrentRequests', limit: 1, groupBy: ['header:x-tenant'] },
    { name: 'plain', metric: 'requests', limit: 20, windowSeconds: 60, groupBy: ['issuer', 'operation'] },
  ] as TrafficPolicy[];

  for (const policy of policies) {
    it(`give the simulation the answer that every claim and header would (${policy.name}: ${(policy.groupBy ?? []).join(', ')})`, async () => {
      const store = new MemoryTransactionStore();
      const all = records();
      for (const record of all) store.save(record);
      const read = await readTrafficWhatIfRecords(store, { from: NOW - 3_600_000, to: NOW }, 5000, undefined, factsNeeded(policy));
      const reached = all.filter((r) => r.outcome.code !== 'TOKEN_FAILED').reverse();
      expect(read).to.include({ read: all.length, beforeTrafficControl: all.length - reached.length, truncated: false });
      expect(read.oldest).to.equal(Math.min(...reached.map((r) => r.startedAt)));
      expect(read.newest).to.equal(Math.max(...reached.map((r) => r.startedAt)));
      const expected = simulateTrafficPolicy(policy, reached.map(whole), { topGroups: 1000 });
      expect(expected.refused, 'the policy refuses some').to.be.above(0);
      expect(simulateTrafficPolicy(policy, readTransactionRows(read.rows), { topGroups: 1000 })).to.deep.equal(expected);
      // An API's own policy: that API's transactions only.
      const api = 'Ente/PetStore/v1';
      const own = await readTrafficWhatIfRecords(store, { from: NOW - 3_600_000, to: NOW }, 5000, api, factsNeeded(policy));
      expect(simulateTrafficPolicy(policy, readTransactionRows(own.rows), { api, topGroups: 1000 })).to.deep.equal(
        simulateTrafficPolicy(policy, reached.filter((r) => apiKey(r.api!) === api).map(whole), { api, topGroups: 1000 }),
      );
    });
  }

  it('read at most limit records, the newest, saying the window holds more', async () => {
    const store = new MemoryTransactionStore();
    const all = records().filter((r) => r.outcome.code === 'OK');
    for (const record of all) store.save(record);
    const read = await readTrafficWhatIfRecords(store, { from: NOW - 3_600_000, to: NOW }, 700, undefined, factsNeeded({}));
    expect(read).to.include({ read: 700, truncated: true });
    expect(readTransactionRows(read.rows).map((t) => t.startedAt)).to.deep.equal(
      all
        .slice(-700)
        .reverse()
        .map((r) => r.startedAt),
    );
  });
});
