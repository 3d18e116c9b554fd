/**
 * The memory store and the PostgreSQL store answer alike: the same records saved in both, the same
 * queries, pages and statistics.
 */
import { expect } from 'chai';
import type pg from 'pg';
import { MemoryTransactionStore, type OutcomeCode, type TransactionQuery, type TransactionRecord } from '../../../src/index.js';
import { PostgresTransactionStore } from '../../../src/record/postgres/index.js';
import type { TransactionStats, TransactionStatsQuery, TransactionStore } from '../../../src/record/types.js';
import { makeRecord } from '../helpers.js';
import { adminPool, databaseUrl, dropSchema, removeFile, spillPath, testSchema } from '../../postgres/helpers.js';

const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);
const OUTCOMES: OutcomeCode[] = ['OK', 'TOKEN_FAILED', 'AUTHORIZATION_DENIED', 'CONNECTION_ERROR', 'OK'];
const APIS = [{ provider: 'Ente', name: 'PetStore', version: 1 }, { provider: 'Ente', name: 'PetStore', version: 2 }, undefined];

/** 90 records with every filtered field varying; some share a start time. */
function dataset(): TransactionRecord[] {
  const records: TransactionRecord[] = [];
  for (let i = 0; i < 90; i++) {
    const code = OUTCOMES[i % OUTCOMES.length]!;
    const api = APIS[i % 3];
    const status = code === 'OK' ? 200 : code === 'TOKEN_FAILED' ? 401 : code === 'AUTHORIZATION_DENIED' ? 403 : i % 2 === 0 ? 503 : null;
    records.push(
      makeRecord({
        code,
        startedAt: T0 + Math.floor(i / 2) * 7_000,
        durationMs: (i * 37) % 250,
        status,
        method: i % 4 === 0 ? 'POST' : 'GET',
        ...(api === undefined ? {} : { api, operation: i % 2 === 0 ? 'getPet' : 'addPet' }),
        ...(code === 'OK' ? {} : { gatewayStatus: `protocol:GATEWAY-${1366 + (i % 3)}` }),
        ...(i % 5 === 0 ? {} : { clientAddress: `10.0.0.${i % 4}`, nodeId: `node-${i % 2}` }),
        sender:
          i % 6 === 0
            ? {}
            : {
                subject: i % 7 === 0 ? `SUB-${i % 4}` : `sub-${i % 4}`,
                clientId: `client-${i % 3}`,
                username: `user-${i % 5}`,
                issuer: i % 2 ? 'https://a.example' : 'https://b.example',
              },
        ...(i % 6 === 0
          ? {}
          : {
              tokenInfo: {
                method: 'header' as const,
                policy: 'p',
                introspection: {
                  active: true,
                  scope: i % 2 ? 'read write' : 'read',
                  aud: ['petstore', `aud-${i % 3}`],
                  tenant: ['Other_50%', 'OtherX50', 'Acme'][i % 3],
                  n: i % 7,
                  nested: { tenant: 'deep' },
                },
                ...(i % 5 === 1 ? { userInfo: { tenant: 'FromUserInfo' } } : {}),
              },
            }),
        diagnostics: [{ source: 'test', message: `diagnostic ${i} \u0000 NUL and \ud800 lone surrogate` } as never],
        ...(i % 4 === 2 ? { traffic: trafficOf(i) } : {}),
      }),
    );
  }
  // A message id shared by two records (retries of one message).
  records[11] = { ...records[11]!, messageId: records[10]!.messageId };
  return records;
}

/** A traffic section: one or two policies, one of them refusing or a warning now and then. */
function trafficOf(i: number): NonNullable<TransactionRecord['traffic']> {
  const limited = i % 8 === 2;
  const policies: NonNullable<TransactionRecord['traffic']>['policies'] = [
    {
      policy: 'per-client',
      mode: 'enforce',
      metric: 'requests',
      group: `clientId=client-${i % 3}`,
      limit: 10,
      windowSeconds: 60,
      remaining: limited ? 0 : 3,
      exceeded: limited,
    },
  ];
  if (i % 3 === 0)
    policies.push({
      policy: 'Quota_50%',
      mode: 'warningOnly',
      metric: 'concurrentRequests',
      group: '*',
      limit: 1,
      remaining: 0,
      exceeded: true,
    });
  return {
    result: limited ? 'limited' : 'allowed',
    ...(limited ? { policy: 'per-client', group: `clientId=client-${i % 3}` } : {}),
    ...(i % 3 === 0 ? { warnings: ['Quota_50%'] } : {}),
    policies,
  };
}

/** Every filter, alone and combined. */
function queries(records: TransactionRecord[]): TransactionQuery[] {
  const mid = records[40]!.startedAt;
  return [
    {},
    { outcome: 'OK' },
    { outcome: 'CONNECTION_ERROR' },
    { status: 503 },
    { status: 200, method: 'POST' },
    { api: 'Ente/PetStore/v1' },
    { api: 'Ente/PetStore/v3' },
    { subject: 'sub-1' },
    { clientId: 'client-2', outcome: 'TOKEN_FAILED' },
    { nodeId: 'node-1' },
    { operation: 'addPet' },
    { method: 'GET' },
    { gatewayStatus: 'protocol:GATEWAY-1367' },
    { username: 'user-3' },
    { issuer: 'https://a.example' },
    { clientAddress: '10.0.0.2' },
    { messageId: records[10]!.messageId },
    { from: mid },
    { to: mid },
    { from: mid, to: mid },
    { from: records[20]!.startedAt, to: records[60]!.startedAt, outcome: 'OK', api: 'Ente/PetStore/v2' },
    // Case-insensitive prefixes, several outcomes, status classes, durations, claims.
    { subject: 'sub-1' },
    { subject: 'SUB' },
    { api: 'ente/petstore' },
    { clientAddress: '10.0.0' },
    { issuer: 'HTTPS://A' },
    { operation: 'GET' },
    { outcomes: ['TOKEN_FAILED', 'CONNECTION_ERROR'] },
    { outcomes: [] },
    { outcomes: ['OK'], outcome: 'OK', api: 'Ente' },
    { statusClass: 4 },
    { statusClass: 5, outcomes: ['CONNECTION_ERROR'] },
    { minDurationMs: 200 },
    { minDurationMs: 200, statusClass: 2 },
    { claim: { name: 'scope', value: 'read w' } },
    { claim: { name: 'aud', value: 'AUD-2' } },
    { claim: { name: 'tenant', value: 'other_' } },
    { claim: { name: 'tenant', value: 'other_50%' } },
    { claim: { name: 'tenant', value: 'fromuser' } },
    { claim: { name: 'tenant', value: 'deep' } },
    { claim: { name: 'n', value: '3' } },
    { claim: { name: 'active', value: 'true' }, subject: 's' },
    { claim: { name: 'nope', value: 'x' } },
    { subject: '%' },
    { subject: '_ub' },
    { trafficPolicy: 'per-client' },
    { trafficPolicy: 'PER' },
    { trafficPolicy: 'quota_50%' },
    { trafficPolicy: 'quota_5_' },
    { trafficPolicy: 'per-client', outcome: 'OK' },
    { trafficPolicy: 'nope' },
  ];
}

/** Every page of a query, by ids. */
async function pages(store: TransactionStore, query: TransactionQuery): Promise<string[][]> {
  const result: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await store.query({ ...query, limit: 7, ...(cursor === undefined ? {} : { cursor }) });
    result.push(page.items.map((r) => r.id));
    cursor = page.next;
  } while (cursor !== undefined && result.length < 100);
  return result;
}

/** The same record once through JSON (and PostgreSQL's text rules): undefined fields gone, unsafe characters replaced. */
function stored(record: TransactionRecord): TransactionRecord {
  return JSON.parse(JSON.stringify(record).replaceAll('\\u0000', '\\ufffd').replaceAll('\\ud800', '\\ufffd')) as TransactionRecord;
}

describe('Transaction stores answer alike (memory and PostgreSQL)', () => {
  const schema = testSchema();
  const spillFile = spillPath();
  let admin: pg.Pool;
  let postgres: PostgresTransactionStore;
  const memory = new MemoryTransactionStore();
  const records = dataset();

  before(async () => {
    admin = adminPool();
    postgres = await PostgresTransactionStore.create({
      connectionString: databaseUrl(),
      schema,
      spillFile,
      retentionDays: 0,
      batchSize: 16,
    });
    for (const record of records) {
      memory.save(record);
      postgres.save(record);
    }
    await postgres.flush();
  });
  after(async () => {
    await postgres.close();
    await dropSchema(admin, schema);
    await admin.end();
    await removeFile(spillFile);
  });

  it('stores every record once, counted', async () => {
    expect(postgres.counters).to.deep.include({
      saved: records.length,
      queued: 0,
      spilled: 0,
      replayed: 0,
      spillBytes: 0,
      available: true,
    });
    expect(postgres.counters.dropped).to.deep.equal({ queueFull: 0, spillFull: 0, rejected: 0, closed: 0 });
    // Saved again (a replay): still one row each.
    for (const record of records.slice(0, 10)) postgres.save(record);
    await postgres.flush();
    expect(
      (await admin.query(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM "${schema}".gateway_transactions`)).rows[0],
    ).to.deep.equal({
      n: records.length,
      d: records.length,
    });
    expect(postgres.counters.saved).to.equal(records.length);
  });

  it('keeps the traffic section, and finds records by a traffic policy they were covered by (prefix, case-insensitive, % and _ literal)', async () => {
    const covered = records.filter((r) => r.traffic?.policies.some((p) => p.policy === 'Quota_50%'));
    expect(covered.length).to.be.greaterThan(0);
    expect(await postgres.get(covered[0]!.id)).to.deep.equal(stored(covered[0]!));
    for (const store of [memory, postgres]) {
      const ids = async (trafficPolicy: string) => (await store.query({ trafficPolicy, limit: 500 })).items.map((r) => r.id);
      expect(await ids('quota_50%')).to.have.members(covered.map((r) => r.id));
      expect(await ids('quota_5_')).to.deep.equal([]);
      expect(await ids('per-')).to.have.length(records.filter((r) => r.traffic !== undefined).length);
    }
  });

  it('gets a record by id, as saved', async () => {
    for (const record of [records[0]!, records[33]!, records[89]!]) {
      expect(await postgres.get(record.id)).to.deep.equal(stored(record));
      expect(memory.get(record.id)).to.equal(record);
    }
    expect(await postgres.get('tx-none')).to.equal(undefined);
  });

  it('finds a record still queued', async () => {
    const record = makeRecord();
    postgres.save(record);
    expect(await postgres.get(record.id)).to.equal(record);
    await postgres.flush();
    expect((await postgres.get(record.id))?.id).to.equal(record.id);
    memory.save(record);
    records.push(record);
  });

  it('filters and pages alike, newest first', async () => {
    for (const query of queries(records)) {
      const expected = memory.query({ ...query, limit: 500 }).items.map((r) => r.id);
      const got = (await postgres.query({ ...query, limit: 500 })).items.map((r) => r.id);
      expect(got, JSON.stringify(query)).to.deep.equal(expected);
      expect(await pages(postgres, query), JSON.stringify(query)).to.deep.equal(await pages(memory, query));
      expect((await pages(postgres, query)).flat()).to.deep.equal(expected);
    }
    // The new filters select what they say.
    const count = (query: TransactionQuery) => memory.query({ ...query, limit: 500 }).items.length;
    expect(count({ subject: 'SUB' }))
      .to.equal(count({ subject: 'sub' }))
      .and.to.be.greaterThan(count({ subject: 'sub-1' }));
    expect(count({ claim: { name: 'tenant', value: 'other_' } })).to.be.within(10, 40);
    expect(count({ claim: { name: 'tenant', value: 'otherx' } })).to.be.within(10, 40);
    expect(count({ claim: { name: 'tenant', value: 'deep' } })).to.equal(0);
    expect(count({ claim: { name: 'tenant', value: 'fromuser' } })).to.be.greaterThan(0);
    expect(count({ subject: '%' })).to.equal(0);
    expect(count({ statusClass: 4 })).to.equal(count({ status: 401 }) + count({ status: 403 }));
    expect(count({ outcomes: [] })).to.equal(0);
    // The filters do select something (the dataset is not trivially empty for them).
    expect(memory.query({ nodeId: 'node-1', limit: 500 }).items.length).to.be.within(10, 80);
    expect(memory.query({ messageId: records[10]!.messageId }).items.map((r) => r.id)).to.deep.equal([records[11]!.id, records[10]!.id]);
  });

  it('pages with the default and the largest page size', async () => {
    expect((await postgres.query({})).items).to.have.length(50);
    expect((await postgres.query({ limit: 10_000 })).items).to.have.length(records.length);
    expect((await postgres.query({ limit: 0 })).items).to.have.length(1);
  });

  it('refuses a cursor it did not produce, as the memory store does', async () => {
    for (const cursor of ['abc', '-1', '1e5', '9'.repeat(40)]) {
      let error: unknown;
      await postgres.query({ cursor }).catch((e: unknown) => (error = e));
      expect(error, cursor).to.be.instanceOf(TypeError);
      expect(() => memory.query({ cursor })).to.throw(TypeError);
    }
  });

  it('computes the same statistics, equal to a count by hand', async () => {
    const windows: TransactionStatsQuery[] = [
      { from: T0, to: T0 + 10 * 60_000, bucketMs: 60_000 },
      { from: T0 + 30_000, to: T0 + 200_000, bucketMs: 60_000, outcome: 'OK' },
      { from: T0 - 3_600_000, to: T0 + 3_600_000 },
      { from: T0, to: T0 + 50_000, api: 'Ente/PetStore/v1', nodeId: 'node-0' },
      { from: T0 + 999_999_000, to: T0 + 999_999_999 },
    ];
    for (const window of windows) {
      const byHand = countByHand(records, window, window.bucketMs ?? (await postgres.stats(window)).bucketMs);
      const fromMemory = memory.stats(window);
      const fromPostgres = await postgres.stats(window);
      for (const stats of [fromMemory, fromPostgres]) {
        expect(stats.buckets, JSON.stringify(window)).to.deep.equal(byHand.buckets);
        expect(stats.totals.count).to.equal(byHand.totals.count);
        expect(stats.totals.byOutcome).to.deep.equal(byHand.totals.byOutcome);
        if (byHand.totals.count === 0) {
          expect(stats.totals.meanDurationMs).to.equal(null);
          expect(stats.totals.p95DurationMs).to.equal(null);
        } else {
          expect(stats.totals.meanDurationMs).to.be.closeTo(byHand.totals.meanDurationMs!, 1e-9);
          expect(stats.totals.p95DurationMs).to.be.closeTo(byHand.totals.p95DurationMs!, 1e-9);
        }
      }
      expect(fromPostgres.bucketMs).to.equal(fromMemory.bucketMs);
      expect(fromPostgres.top, JSON.stringify(window)).to.deep.equal(topByHand(records, window));
      expect(fromMemory.top, JSON.stringify(window)).to.deep.equal(topByHand(records, window));
    }
    // The lists are not trivially empty for the dataset.
    const wide = memory.stats({ from: T0 - 3_600_000, to: T0 + 3_600_000 }).top!;
    expect(wide.api.map((e) => e.value).sort()).to.deep.equal(['Ente/PetStore/v1', 'Ente/PetStore/v2']);
    expect(wide.status.length).to.be.at.least(4);
    expect(wide.clientId.reduce((n, e) => n + e.count, 0)).to.be.greaterThan(50);
  });

  it('computes the mean and the 95th percentile as percentile_cont does', async () => {
    // Durations 10, 20, ... 100 in one minute: mean 55, p95 at rank 8.55 → 90 + 0.55 × 10.
    const start = T0 + 86_400_000;
    const ten = Array.from({ length: 10 }, (_, i) => makeRecord({ startedAt: start + i * 1000, durationMs: (i + 1) * 10 }));
    for (const r of ten) {
      memory.save(r);
      postgres.save(r);
    }
    await postgres.flush();
    const window = { from: start, to: start + 59_999, bucketMs: 60_000 };
    for (const stats of [memory.stats(window), await postgres.stats(window)]) {
      expect(stats.totals).to.deep.include({ count: 10, byOutcome: { OK: 10 }, meanDurationMs: 55 });
      expect(stats.totals.p95DurationMs).to.be.closeTo(95.5, 1e-9);
      expect(stats.buckets).to.deep.equal([{ start, counts: { OK: 10 } }]);
    }
  });

  it('refuses an unbounded window or too many buckets', async () => {
    const bad = [
      { from: T0 } as TransactionStatsQuery,
      { from: T0, to: T0 + 10_000_000, bucketMs: 1000 },
      { from: T0 + 1, to: T0 },
      { from: T0, to: T0, bucketMs: 0.5 },
    ];
    for (const query of bad) {
      expect(() => memory.stats(query), JSON.stringify(query)).to.throw(TypeError);
      let error: unknown;
      await postgres.stats(query).catch((e: unknown) => (error = e));
      expect(error, JSON.stringify(query)).to.be.instanceOf(TypeError);
    }
  });
});

/** The records of a statistics query's window and filters, chosen one at a time, the plain way. */
function inWindowByHand(records: TransactionRecord[], query: TransactionStatsQuery): TransactionRecord[] {
  return records.filter(
    (r) =>
      r.startedAt >= query.from &&
      r.startedAt <= query.to &&
      (query.outcome === undefined || r.outcome.code === query.outcome) &&
      (query.api === undefined || (r.api !== undefined && `${r.api.provider}/${r.api.name}/v${r.api.version}` === query.api)) &&
      (query.nodeId === undefined || r.nodeId === query.nodeId),
  );
}

/** The top lists of a window, counted by hand: at most 10 per dimension, most first, ties by value. */
function topByHand(records: TransactionRecord[], query: TransactionStatsQuery): NonNullable<TransactionStats['top']> {
  const inWindow = inWindowByHand(records, query);
  const list = (value: (r: TransactionRecord) => string | undefined) => {
    const counts = new Map<string, number>();
    for (const r of inWindow) {
      const v = value(r);
      if (v !== undefined) counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    return [...counts]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, 10)
      .map(([v, count]) => ({ value: v, count }));
  };
  return {
    api: list((r) => (r.api === undefined ? undefined : `${r.api.provider}/${r.api.name}/v${r.api.version}`)),
    operation: list((r) => r.operation),
    clientId: list((r) => r.sender.clientId),
    status: list((r) => (r.status === null ? undefined : String(r.status))),
    gatewayStatus: list((r) => r.gatewayStatus),
  };
}

/** Buckets and totals counted one record at a time, the plain way. */
function countByHand(records: TransactionRecord[], query: TransactionStatsQuery, bucketMs: number): TransactionStats {
  const inWindow = inWindowByHand(records, query);
  const buckets: TransactionStats['buckets'] = [];
  for (let start = Math.floor(query.from / bucketMs) * bucketMs; start <= query.to; start += bucketMs) {
    const counts: Partial<Record<OutcomeCode, number>> = {};
    for (const r of inWindow)
      if (r.startedAt >= start && r.startedAt < start + bucketMs) counts[r.outcome.code] = (counts[r.outcome.code] ?? 0) + 1;
    buckets.push({ start, counts });
  }
  const byOutcome: Partial<Record<OutcomeCode, number>> = {};
  for (const r of inWindow) byOutcome[r.outcome.code] = (byOutcome[r.outcome.code] ?? 0) + 1;
  const durations = inWindow.map((r) => r.durationMs).sort((a, b) => a - b);
  const rank = 0.95 * (durations.length - 1);
  const p95 =
    durations.length === 0
      ? null
      : durations[Math.floor(rank)]! + (durations[Math.ceil(rank)]! - durations[Math.floor(rank)]!) * (rank - Math.floor(rank));
  return {
    from: query.from,
    to: query.to,
    bucketMs,
    buckets,
    totals: {
      count: inWindow.length,
      byOutcome,
      meanDurationMs: durations.length === 0 ? null : durations.reduce((a, b) => a + b, 0) / durations.length,
      p95DurationMs: p95,
    },
  };
}
