import { expect } from 'chai';
import { MemoryTransactionStore } from '../../src/index.js';
import { makeRecord } from './helpers.js';

describe('MemoryTransactionStore', () => {
  it('rejects a bad maxRecords at construction', () => {
    expect(() => new MemoryTransactionStore({ maxRecords: 0 })).to.throw(
      TypeError,
      /^MemoryTransactionStore: options\.maxRecords must be a positive integer$/,
    );
    expect(() => new MemoryTransactionStore({ maxRecords: 1.5 })).to.throw(TypeError, /maxRecords/);
  });

  it('defaults to 10,000 records and drops the oldest beyond the bound', () => {
    expect(new MemoryTransactionStore().maxRecords).to.equal(10_000);
    const store = new MemoryTransactionStore({ maxRecords: 3 });
    const records = [1, 2, 3, 4, 5].map(() => makeRecord());
    for (const r of records) store.save(r);
    expect(store.size).to.equal(3);
    expect(store.get(records[0]!.id)).to.equal(undefined);
    expect(store.get(records[1]!.id)).to.equal(undefined);
    expect(store.query().items.map((r) => r.id)).to.deep.equal([records[4]!.id, records[3]!.id, records[2]!.id]);
  });

  it('returns records newest first, filtered by every field, with cursor paging', () => {
    const store = new MemoryTransactionStore();
    const api = { provider: 'Ente', name: 'PetStore', version: 1 };
    const saved = [
      makeRecord({ code: 'TOKEN_FAILED', status: 400, api }),
      makeRecord({ code: 'TOKEN_FAILED', status: 401, api, sender: { subject: 'client1', clientId: 'client1' } }),
      makeRecord({ code: 'AUTHORIZATION_DENIED', status: 403, api, sender: { subject: 'client3', clientId: 'client3' } }),
      makeRecord({ code: 'OK', status: 200, api, sender: { subject: 'client1', clientId: 'client1' } }),
      makeRecord({ code: 'OK', status: 200, sender: { subject: 'someone', clientId: 'client2' } }),
    ];
    for (const r of saved) store.save(r);
    const ids = (q: Parameters<MemoryTransactionStore['query']>[0]) => store.query(q).items.map((r) => r.id);
    const [a, b, c, d, e] = saved.map((r) => r.id);
    expect(ids({})).to.deep.equal([e, d, c, b, a]);
    expect(ids({ outcome: 'TOKEN_FAILED' })).to.deep.equal([b, a]);
    expect(ids({ status: 403 })).to.deep.equal([c]);
    expect(ids({ api: 'Ente/PetStore/v1' })).to.deep.equal([d, c, b, a]);
    expect(ids({ api: 'Ente/PetStore/v2' })).to.deep.equal([]);
    expect(ids({ subject: 'client1' })).to.deep.equal([d, b]);
    expect(ids({ clientId: 'client1', outcome: 'OK' })).to.deep.equal([d]);
    expect(ids({ from: saved[1]!.startedAt, to: saved[3]!.startedAt })).to.deep.equal([d, c, b]);

    const first = store.query({ limit: 2 });
    expect(first.items.map((r) => r.id)).to.deep.equal([e, d]);
    expect(first.next).to.be.a('string');
    const second = store.query({ limit: 2, cursor: first.next! });
    expect(second.items.map((r) => r.id)).to.deep.equal([c, b]);
    const third = store.query({ limit: 2, cursor: second.next! });
    expect(third.items.map((r) => r.id)).to.deep.equal([a]);
    expect(third.next).to.equal(undefined);
    // Paging within a filter.
    const p1 = store.query({ api: 'Ente/PetStore/v1', limit: 3 });
    expect(p1.items.map((r) => r.id)).to.deep.equal([d, c, b]);
    expect(store.query({ api: 'Ente/PetStore/v1', limit: 3, cursor: p1.next! }).items.map((r) => r.id)).to.deep.equal([a]);
  });

  it('filters by node, operation, method, gateway status, username, issuer, client address and message id', () => {
    const store = new MemoryTransactionStore();
    const a = makeRecord({
      nodeId: 'gw-1',
      operation: 'getPet',
      method: 'GET',
      clientAddress: '10.0.0.1',
      sender: { username: 'mario', issuer: 'https://a' },
    });
    const b = makeRecord({
      code: 'TOKEN_FAILED',
      status: 401,
      nodeId: 'gw-2',
      operation: 'addPet',
      method: 'POST',
      gatewayStatus: 'protocol:GATEWAY-1367',
      clientAddress: '10.0.0.2',
      sender: { username: 'luigi', issuer: 'https://b' },
    });
    const c = makeRecord({ messageId: a.messageId });
    for (const r of [a, b, c]) store.save(r);
    const ids = (q: Parameters<MemoryTransactionStore['query']>[0]) => store.query(q).items.map((r) => r.id);
    expect(ids({ nodeId: 'gw-1' })).to.deep.equal([a.id]);
    expect(ids({ nodeId: 'gw-3' })).to.deep.equal([]);
    expect(ids({ operation: 'addPet' })).to.deep.equal([b.id]);
    expect(ids({ method: 'GET' })).to.deep.equal([c.id, a.id]);
    expect(ids({ method: 'get' })).to.deep.equal([]);
    expect(ids({ gatewayStatus: 'protocol:GATEWAY-1367' })).to.deep.equal([b.id]);
    expect(ids({ username: 'mario' })).to.deep.equal([a.id]);
    expect(ids({ issuer: 'https://b' })).to.deep.equal([b.id]);
    expect(ids({ clientAddress: '10.0.0.2' })).to.deep.equal([b.id]);
    expect(ids({ messageId: a.messageId })).to.deep.equal([c.id, a.id]);
    expect(ids({ messageId: a.messageId, nodeId: 'gw-1' })).to.deep.equal([a.id]);
  });

  it('counts by outcome over a window with the same filters', () => {
    const store = new MemoryTransactionStore({ maxRecords: 3 });
    const records = [1, 2, 3, 4].map((i) =>
      makeRecord({ startedAt: 1_000_000 + i * 1000, code: i % 2 ? 'OK' : 'TOKEN_FAILED', method: i > 2 ? 'POST' : 'GET' }),
    );
    for (const r of records) store.save(r);
    // The oldest was dropped (maxRecords 3): statistics cover the records held.
    expect(store.stats({ from: 0, to: 2_000_000, bucketMs: 1_000_000 }).totals.byOutcome).to.deep.equal({ OK: 1, TOKEN_FAILED: 2 });
    expect(store.stats({ from: 0, to: 2_000_000, bucketMs: 1_000_000, method: 'POST' }).totals.count).to.equal(2);
  });

  it('refuses a cursor it did not produce', () => {
    expect(() => new MemoryTransactionStore().query({ cursor: 'abc' })).to.throw(TypeError, /cursor/);
  });

  it('keeps the order and the ids right when records are evicted and replaced', () => {
    const store = new MemoryTransactionStore({ maxRecords: 100 });
    const outcomes = ['OK', 'TOKEN_FAILED', 'AUTHORIZATION_DENIED'] as const;
    const all = [];
    for (let i = 0; i < 1000; i++) {
      const r = makeRecord({ code: outcomes[i % 3]!, sender: { subject: `s${i % 7}` } });
      all.push(r);
      store.save(r);
    }
    const kept = all.slice(-100).reverse();
    expect(store.size).to.equal(100);
    for (const code of outcomes) {
      expect(store.query({ outcome: code, limit: 500 }).items.map((r) => r.id)).to.deep.equal(
        kept.filter((r) => r.outcome.code === code).map((r) => r.id),
      );
    }
    expect(store.query({ subject: 's3', outcome: 'OK', limit: 500 }).items.map((r) => r.id)).to.deep.equal(
      kept.filter((r) => r.sender.subject === 's3' && r.outcome.code === 'OK').map((r) => r.id),
    );
    // Saving a known id again keeps only the new record.
    const replaced = { ...kept[50]!, status: 599 };
    store.save(replaced);
    expect(store.size).to.equal(100);
    expect(store.get(replaced.id)!.status).to.equal(599);
    expect(store.query({ limit: 1 }).items[0]!.id).to.equal(replaced.id);
    expect(store.query({ limit: 500 }).items.filter((r) => r.id === replaced.id)).to.have.length(1);
  });
});
