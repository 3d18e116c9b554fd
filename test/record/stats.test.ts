import { expect } from 'chai';
import { MemoryTransactionStore } from '../../src/index.js';
import { DEFAULT_STATS_WINDOW_MS, parseTransactionQuery, parseTransactionStatsQuery, QueryError } from '../../src/monitoring/query.js';
import { chooseBucketMs, MAX_STATS_BUCKETS, percentile, statsWindow } from '../../src/record/stats.js';
import { makeRecord } from './helpers.js';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

describe('Transaction statistics', () => {
  it('chooses about 60 buckets of a round width', () => {
    const cases: Array<[number, number]> = [
      [0, S],
      [30 * S, S],
      [MIN, S],
      [10 * MIN, 10 * S],
      [H, MIN],
      [5 * H, 5 * MIN],
      [12 * H, 15 * MIN],
      [2 * D, H],
      [30 * D, D],
      [365 * D, 7 * D],
    ];
    for (const [span, width] of cases) {
      expect(chooseBucketMs(1_700_000_000_000, 1_700_000_000_000 + span), `span ${span}`).to.equal(width);
      const { count } = statsWindow({ from: 1_700_000_000_000, to: 1_700_000_000_000 + span });
      expect(count).to.be.at.most(62);
    }
  });

  it('aligns buckets on the epoch and covers the window', () => {
    expect(statsWindow({ from: 61_500, to: 185_000, bucketMs: MIN })).to.deep.equal({
      from: 61_500,
      to: 185_000,
      bucketMs: MIN,
      first: 60_000,
      count: 3,
    });
    expect(statsWindow({ from: 5, to: 5 })).to.deep.include({ bucketMs: S, first: 0, count: 1 });
  });

  it('refuses an unbounded or too fine window', () => {
    expect(() => statsWindow({} as never)).to.throw(TypeError, /bounded window/);
    expect(() => statsWindow({ from: 0, to: Number.POSITIVE_INFINITY })).to.throw(TypeError, /bounded window/);
    expect(() => statsWindow({ from: 10, to: 0 })).to.throw(TypeError, /from is after to/);
    expect(() => statsWindow({ from: 0, to: 10, bucketMs: -1 })).to.throw(TypeError, /bucketMs/);
    expect(() => statsWindow({ from: 0, to: MAX_STATS_BUCKETS * S, bucketMs: S })).to.throw(TypeError, /1001 buckets/);
    expect(statsWindow({ from: 0, to: MAX_STATS_BUCKETS * S - 1, bucketMs: S }).count).to.equal(MAX_STATS_BUCKETS);
  });

  it('interpolates percentiles between ranks', () => {
    expect(percentile([], 0.95)).to.equal(null);
    expect(percentile([7], 0.95)).to.equal(7);
    expect(percentile([1, 2, 3, 4, 5], 0.5)).to.equal(3);
    expect(percentile([10, 20], 0.95)).to.be.closeTo(19.5, 1e-9);
  });

  it('counts the memory store by bucket and outcome, empty buckets included', () => {
    const store = new MemoryTransactionStore();
    const t0 = 1_735_732_800_000; // 2025-01-01T12:00:00Z, a whole minute
    const at = (ms: number, code: 'OK' | 'TOKEN_FAILED', durationMs: number, nodeId = 'a') =>
      store.save(makeRecord({ startedAt: t0 + ms, code, durationMs, nodeId }));
    at(0, 'OK', 10);
    at(59_999, 'TOKEN_FAILED', 20);
    at(60_000, 'OK', 30);
    at(3 * MIN + 1, 'OK', 40, 'b');
    at(10 * MIN, 'OK', 50); // outside the window
    const stats = store.stats({ from: t0, to: t0 + 4 * MIN - 1, bucketMs: MIN });
    expect(stats).to.deep.equal({
      from: t0,
      to: t0 + 4 * MIN - 1,
      bucketMs: MIN,
      buckets: [
        { start: t0, counts: { OK: 1, TOKEN_FAILED: 1 } },
        { start: t0 + MIN, counts: { OK: 1 } },
        { start: t0 + 2 * MIN, counts: {} },
        { start: t0 + 3 * MIN, counts: { OK: 1 } },
      ],
      totals: { count: 4, byOutcome: { OK: 3, TOKEN_FAILED: 1 }, meanDurationMs: 25, p95DurationMs: 38.5 },
      // makeRecord: GET /pet/1 answered 200, no API, no client.
      top: { api: [], operation: [], clientId: [], status: [{ value: '200', count: 4 }], gatewayStatus: [] },
    });
    expect(store.stats({ from: t0, to: t0 + 4 * MIN - 1, bucketMs: MIN, nodeId: 'b' }).totals).to.deep.equal({
      count: 1,
      byOutcome: { OK: 1 },
      meanDurationMs: 40,
      p95DurationMs: 40,
    });
    expect(store.stats({ from: 0, to: 1000 }).totals).to.deep.equal({ count: 0, byOutcome: {}, meanDurationMs: null, p95DurationMs: null });
  });
});

describe('Outcome groups', () => {
  it('put every outcome code in exactly one group', async () => {
    const { outcomeGroups } = await import('../../src/index.js');
    const { outcomeLabels } = await import('../../src/errors.js');
    const all = Object.values(outcomeGroups).flat();
    expect([...all].sort()).to.deep.equal(Object.keys(outcomeLabels).sort());
  });
});

describe('Console query parameters', () => {
  it('reads every filter of the list API', () => {
    expect(
      parseTransactionQuery({
        nodeId: 'gw-1',
        operation: 'getPet',
        method: 'GET',
        gatewayStatus: 'protocol:GATEWAY-1367',
        username: 'mario',
        issuer: 'https://idp.example',
        clientAddress: '10.0.0.1',
        messageId: 'm-1',
        api: 'Ente/PetStore/v1',
        outcome: 'OK',
        status: '200',
        limit: '5',
        cursor: '42',
        from: '2025-01-01T00:00:00Z',
      }),
    ).to.deep.equal({
      from: Date.UTC(2025, 0, 1),
      outcome: 'OK',
      api: 'Ente/PetStore/v1',
      nodeId: 'gw-1',
      operation: 'getPet',
      method: 'GET',
      gatewayStatus: 'protocol:GATEWAY-1367',
      username: 'mario',
      issuer: 'https://idp.example',
      clientAddress: '10.0.0.1',
      messageId: 'm-1',
      status: 200,
      cursor: '42',
      limit: 5,
    });
    expect(() => parseTransactionQuery({ nodeId: ['a', 'b'] })).to.throw(QueryError, /nodeId must be given once/);
    // Several outcomes, groups, status classes, durations, claims; the method in upper case.
    expect(
      parseTransactionQuery({
        outcome: 'OK,BACKEND_4XX',
        status: '4xx',
        minDurationMs: '250',
        claim: 'scope=read write=x',
        method: 'post',
      }),
    ).to.deep.equal({
      outcomes: ['OK', 'BACKEND_4XX'],
      statusClass: 4,
      minDurationMs: 250,
      claim: { name: 'scope', value: 'read write=x' },
      method: 'POST',
    });
    expect(parseTransactionQuery({ outcomeGroup: 'backend,denied' })).to.deep.equal({
      outcomes: ['CONNECTION_ERROR', 'BACKEND_4XX', 'BACKEND_5XX', 'AUTHORIZATION_DENIED'],
    });
    expect(parseTransactionQuery({ outcomeGroup: 'success' })).to.deep.equal({ outcomes: ['OK'] });
    for (const [query, message] of [
      [{ outcome: 'OK,NOPE' }, /outcome must be/],
      [{ outcomeGroup: 'good' }, /outcomeGroup must be/],
      [{ status: '6xx' }, /status must be/],
      [{ status: '99' }, /status must be/],
      [{ minDurationMs: '-1' }, /minDurationMs/],
      [{ claim: 'scope' }, /claim must be name=value/],
      [{ claim: '=x' }, /claim must be name=value/],
      [{ claim: 'x=' }, /claim must be name=value/],
    ] as const) {
      expect(() => parseTransactionQuery(query), JSON.stringify(query)).to.throw(QueryError, message);
    }
    expect(parseTransactionQuery({ username: '' })).to.deep.equal({});
  });

  it('reads a statistics query, the last hour by default', () => {
    const now = Date.UTC(2025, 5, 1, 12);
    expect(parseTransactionStatsQuery({}, now)).to.deep.equal({ from: now - DEFAULT_STATS_WINDOW_MS, to: now });
    expect(parseTransactionStatsQuery({ from: '1000', to: '61000', bucketMs: '1000', outcome: 'OK', nodeId: 'gw-2' }, now)).to.deep.equal({
      from: 1000,
      to: 61000,
      bucketMs: 1000,
      outcome: 'OK',
      nodeId: 'gw-2',
    });
    expect(() => parseTransactionStatsQuery({ from: '2000', to: '1000' }, now)).to.throw(QueryError, /from/);
    expect(() => parseTransactionStatsQuery({ bucketMs: '0' }, now)).to.throw(QueryError, /bucketMs/);
    expect(() => parseTransactionStatsQuery({ bucketMs: '1' }, now)).to.throw(QueryError, /too small/);
    expect(() => parseTransactionStatsQuery({ outcome: 'MAYBE' }, now)).to.throw(QueryError, /outcome/);
    expect(() => parseTransactionStatsQuery({ limit: '5' }, now)).to.not.throw();
  });
});

describe('Export cells', () => {
  it('quote what CSV needs and defuse spreadsheet formulas', async () => {
    const { csvCell } = await import('../../src/monitoring/export.js');
    expect(csvCell('plain')).to.equal('plain');
    expect(csvCell('a,b')).to.equal('"a,b"');
    expect(csvCell('say "hi"\r\nbye')).to.equal('"say ""hi""\r\nbye"');
    expect(csvCell('=HYPERLINK("http://x")')).to.equal('"\'=HYPERLINK(""http://x"")"');
    for (const start of ['+', '-', '@', '\t', '\r']) expect(csvCell(`${start}1`).replace(/^"/, '')).to.match(/^'/);
    expect(csvCell(-5)).to.equal('-5');
    expect(csvCell(null)).to.equal('');
    expect(csvCell(undefined)).to.equal('');
  });
});
