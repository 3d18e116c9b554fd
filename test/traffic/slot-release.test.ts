/**
 * What gives slots back, on its own: the end of an exchange on a plain `node:http` server (answers
 * queued behind another on a pipelining connection that dies included), the instance cap's slot
 * given back while the gateway waits on the client, and the Redis store renewing leases only for
 * exchanges that still exist.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis.js';
import { exchangeEnded, onExchangeEnd } from '../../src/exchange/answer-end.js';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { InstanceCap } from '../../src/traffic/instance-cap.js';
import { createTrafficLimiter, type TrafficLimiter } from '../../src/traffic/limiter.js';
import { REDIS_URL, cleanPrefix, keysOf, plainClient, sleep, testPrefix, type PlainClient } from '../cluster/helpers.js';
import { listen } from '../gateway/helpers.js';
import { facts } from './helpers.js';

describe('the end of an exchange on a plain node:http server', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))));

  it('20 pipelined answers, the first held, the connection destroyed: each exchange ends once, and its answer closes', async () => {
    let ended = 0;
    const twice: number[] = [];
    const answers: ServerResponse[] = [];
    server = createServer((req, res) => {
      answers.push(res);
      let count = 0;
      onExchangeEnd(res, () => {
        ended++;
        if (++count > 1) twice.push(answers.indexOf(res));
      });
      // The first waits (as on introspection); the others are answered at once, queued behind it.
      if (req.url !== '/0') res.end('queued');
    });
    const url = new URL(await listen(server));
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(Array.from({ length: 20 }, (_, i) => `GET /${i} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
    for (let i = 0; i < 200 && answers.length < 20; i++) await sleep(10);
    expect(answers).to.have.length(20);
    expect(ended, 'nothing ended before the connection').to.equal(0);
    socket.destroy();
    for (let i = 0; i < 200 && ended < 20; i++) await sleep(10);
    await sleep(50);
    expect(ended).to.equal(20);
    expect(twice).to.deep.equal([]);
    expect(answers.every((res) => res.closed && exchangeEnded(res))).to.equal(true);
    // Written to afterwards (the held answer's turn), an answer whose client left drops it.
    answers[0]!.end('late');
  });

  it('an answer sent ends its exchange once, and a registration after the end runs at once', async () => {
    let ended = 0;
    let late = 0;
    server = createServer((_req, res) => {
      onExchangeEnd(res, () => {
        ended++;
        onExchangeEnd(res, () => late++);
      });
      res.end('ok');
    });
    const url = await listen(server);
    for (let i = 0; i < 3; i++) expect(await (await fetch(url)).text()).to.equal('ok');
    for (let i = 0; i < 100 && ended < 3; i++) await sleep(10);
    expect([ended, late]).to.deep.equal([3, 3]);
  });
});

describe('the instance cap: a slot given back while the client is waited on', () => {
  it('counts a suspended slot as admitted, not in flight; resumes only under the cap; releases once in any state', () => {
    const cap = new InstanceCap(2);
    const a = cap.take()!;
    const b = cap.take()!;
    expect(cap.take()).to.equal(undefined);
    a.suspend();
    expect([cap.inFlight, cap.admitted]).to.deep.equal([1, 2]);
    const c = cap.take()!;
    expect(cap.inFlight).to.equal(2);
    expect(a.resume(), 'the cap is reached').to.equal(false);
    a.release();
    a.release();
    expect([cap.inFlight, cap.admitted]).to.deep.equal([2, 2]);
    c.suspend();
    c.suspend();
    expect(c.resume()).to.equal(true);
    expect(c.resume()).to.equal(true);
    expect([cap.inFlight, cap.admitted]).to.deep.equal([2, 2]);
    b.release();
    c.release();
    c.release();
    expect([cap.inFlight, cap.admitted]).to.deep.equal([0, 0]);
    expect(c.resume(), 'released for good').to.equal(false);
    expect(cap.inFlight).to.equal(0);
  });
});

describe('the Redis store renews leases only for exchanges that still exist', function () {
  this.timeout(30_000);
  let prefix: string;
  let plain: PlainClient;
  let redis: RedisConnection;
  let limiter: TrafficLimiter;

  before(async () => {
    plain = await plainClient();
  });
  after(() => plain.destroy());
  beforeEach(async () => {
    prefix = testPrefix('slots');
    redis = await connectRedis(REDIS_URL, { keyPrefix: prefix, commandTimeoutMs: 2000 });
    limiter = createTrafficLimiter({ store: 'redis' }, { redis, concurrencyLeaseMs: 900 });
  });
  afterEach(async () => {
    await limiter.close();
    await redis.close();
    await cleanPrefix(prefix);
  });

  it('a slot whose exchange is gone without a release is freed at the next renewal; a live one is renewed past its lease', async () => {
    const policies = compileTrafficPolicies([{ name: 'in-flight', metric: 'concurrentRequests', limit: 5 }]);
    let goneAlive = true;
    const kept = await limiter.decide(facts(), policies, () => true);
    const gone = await limiter.decide(facts(), policies, () => goneAlive);
    expect([kept.result, gone.result, kept.storeUnavailable]).to.deep.equal(['allowed', 'allowed', false]);
    const [key] = await keysOf(plain, prefix);
    expect(await plain.zCard(key!)).to.equal(2);
    goneAlive = false;
    // Two leases: renewed every 300 ms, the live slot outlives its own lease; the gone one does not.
    await sleep(1800);
    expect(await plain.zCard(key!)).to.equal(1);
    kept.release();
    for (let i = 0; i < 50 && (await keysOf(plain, prefix)).length > 0; i++) await sleep(20);
    expect(await keysOf(plain, prefix)).to.deep.equal([]);
    gone.release();
  });
});
