/**
 * Security: what callers can make the gateway cost its authorization server (issue 14, items
 * 7-10). Every case is played over real HTTP against a peer authorization server that counts the
 * introspection calls it receives and how many were in flight at once:
 *
 * - a full token cache evicts its least recently used result instead of refusing new ones (else
 *   once the bound is reached every further caller is introspected on every request);
 * - a refused token is remembered for a short time (one invalid token repeated: one call);
 * - at most `maxConcurrentCalls` introspection calls are in flight per policy, the others wait
 *   (up to the timeout, then 503);
 * - a flood of distinct invalid tokens from one client address is throttled (429) before it
 *   reaches the authorization server, while tokens already known valid keep working.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { PolicyApps, type TestApp } from '../token/helpers.js';
import { json, nowSeconds, startPeer, tokenOf, type Peer } from '../token/peer.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** `GET /pets` with `token`, through `agent` (keep-alive, and the client address it binds). */
function get(app: TestApp, token: string, agent: Agent): Promise<Answer> {
  const url = new URL(app.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: '/pets', headers: { authorization: `Bearer ${token}` }, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Sends every token, `concurrency` at a time; the answers in token order. */
async function flood(app: TestApp, tokens: string[], agent: Agent, concurrency: number): Promise<Answer[]> {
  const answers: Answer[] = new Array<Answer>(tokens.length);
  let next = 0;
  const worker = async () => {
    while (next < tokens.length) {
      const i = next++;
      answers[i] = await get(app, tokens[i]!, agent);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answers;
}

const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length;

describe('security: what callers can make the authorization server do', function () {
  this.timeout(120_000);
  let peer: Peer;
  const apps = new PolicyApps();
  const agents: Agent[] = [];

  /** A keep-alive agent whose connections come from `localAddress` (any 127.0.0.0/8 address is loopback). */
  function agentFrom(localAddress = '127.0.0.1', maxSockets = 32): Agent {
    const agent = new Agent({ keepAlive: true, maxSockets, localAddress });
    agents.push(agent);
    return agent;
  }

  before(async () => {
    peer = await startPeer();
  });
  afterEach(async () => {
    await apps.closeAll();
    for (const agent of agents.splice(0)) agent.destroy();
  });
  after(async () => {
    await peer.stop();
  });

  const appWith = (options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> => apps.start(peer.issuer, options);

  /** Introspection: tokens starting with `valid-` are active (subject = the token), others are not. Counts calls per token. */
  function introspectionByToken(perToken: Map<string, number>, delayMs = 0): void {
    peer.introspection = async (_req, res, body) => {
      const token = tokenOf(body);
      perToken.set(token, (perToken.get(token) ?? 0) + 1);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (!token.startsWith('valid-')) return json(res, { active: false });
      const now = nowSeconds();
      json(res, {
        active: true,
        iss: peer.issuer,
        sub: token,
        client_id: 'client1',
        aud: 'petstore-api',
        scope: 'read',
        iat: now,
        exp: now + 3600,
      });
    };
  }

  const introspections = () => peer.calls['/introspect'] ?? 0;

  it('item 7: a full cache evicts the least recently used result; the newest token is cached', async () => {
    const perToken = new Map<string, number>();
    introspectionByToken(perToken);
    const app = await appWith({ cache: { maxEntries: 50 } });
    const agent = agentFrom();
    const tokens = Array.from({ length: 51 }, (_, i) => `valid-${i}`);
    // 50 tokens fill the cache; the 51st is one more than the bound.
    const first = await flood(app, tokens, agent, 1);
    expect(count(first, 200)).to.equal(51);
    // The 51st is cached: asking again makes no call.
    expect((await get(app, 'valid-50', agent)).status).to.equal(200);
    expect(perToken.get('valid-50')).to.equal(1);
    // The oldest (least recently used) was evicted to make room: it is introspected again.
    expect((await get(app, 'valid-0', agent)).status).to.equal(200);
    expect(perToken.get('valid-0')).to.equal(2);
    // A recent one still is cached.
    expect((await get(app, 'valid-49', agent)).status).to.equal(200);
    expect(perToken.get('valid-49')).to.equal(1);
  });

  it('item 7: the cache is bounded in bytes too: large results evict older ones', async () => {
    const perToken = new Map<string, number>();
    peer.introspection = (_req, res, body) => {
      const token = tokenOf(body);
      perToken.set(token, (perToken.get(token) ?? 0) + 1);
      const now = nowSeconds();
      json(res, { active: true, iss: peer.issuer, sub: token, aud: 'petstore-api', exp: now + 3600, padding: 'x'.repeat(20_000) });
    };
    // About 40 KB an entry: 200 KB hold a handful, whatever maxEntries says.
    const app = await appWith({ cache: { maxEntries: 10_000, maxBytes: 200_000 } });
    const agent = agentFrom();
    const tokens = Array.from({ length: 20 }, (_, i) => `big-${i}`);
    await flood(app, tokens, agent, 1);
    expect((await get(app, 'big-19', agent)).status).to.equal(200);
    expect(perToken.get('big-19')).to.equal(1);
    expect((await get(app, 'big-0', agent)).status).to.equal(200);
    expect(perToken.get('big-0')).to.equal(2);
  });

  it('item 8: one invalid token repeated 500 times costs one introspection call', async () => {
    const perToken = new Map<string, number>();
    introspectionByToken(perToken);
    const app = await appWith();
    const answers = await flood(
      app,
      Array.from({ length: 500 }, () => 'revoked-token'),
      agentFrom(),
      10,
    );
    expect(count(answers, 401)).to.equal(500);
    expect(perToken.get('revoked-token')).to.equal(1);
  });

  it('item 8: outages are never remembered as refusals', async () => {
    let down = true;
    peer.introspection = (_req, res, body) => {
      if (down) return json(res, { error: 'server_error' }, 500);
      const now = nowSeconds();
      json(res, { active: true, iss: peer.issuer, sub: tokenOf(body), aud: 'petstore-api', exp: now + 3600 });
    };
    const app = await appWith();
    const agent = agentFrom();
    expect((await get(app, 'valid-after-outage', agent)).status).to.equal(503);
    down = false;
    expect((await get(app, 'valid-after-outage', agent)).status).to.equal(200);
  });

  it('item 9: 200 concurrent fresh tokens never open more than maxConcurrentCalls calls (default 64), and all succeed', async () => {
    const perToken = new Map<string, number>();
    introspectionByToken(perToken, 1000);
    const app = await appWith({ invalidTokenThrottle: false });
    const before = peer.maxInFlight['/introspect'] ?? 0;
    expect(before).to.be.at.most(64);
    const tokens = Array.from({ length: 200 }, (_, i) => `valid-concurrent-${i}`);
    const answers = await flood(app, tokens, agentFrom('127.0.0.1', 200), 200);
    expect(count(answers, 200)).to.equal(200);
    expect(peer.maxInFlight['/introspect']).to.be.at.most(64);
    expect(peer.maxInFlight['/introspect']).to.be.at.least(32);
  });

  it('item 9: against a hanging server the waiters give up at the timeout with 503, and the bound holds', async () => {
    const hanging: Array<() => void> = [];
    peer.introspection = (_req, res) => {
      hanging.push(() => res.destroy());
    };
    const app = await appWith({ maxConcurrentCalls: 8, timeoutMs: 1000, invalidTokenThrottle: false });
    const callsBefore = introspections();
    // What the peer received before any call could time out: the bound, not one per caller.
    let early = -1;
    setTimeout(() => (early = introspections() - callsBefore), 700);
    const tokens = Array.from({ length: 40 }, (_, i) => `hang-${i}`);
    const answers = await flood(app, tokens, agentFrom('127.0.0.1', 40), 40);
    expect(count(answers, 503)).to.equal(40);
    for (const a of answers) expect(a.headers['retry-after']).to.equal('5');
    expect(early).to.equal(8);
    // The first 8 calls time out at 1 s and hand their slots to 8 waiters, whose calls then time out too; the rest gave up waiting.
    expect(introspections() - callsBefore).to.be.at.most(16);
    const waited = apps.open.at(-1)!.app.contexts.filter((c) => c.diagnostics.some((d) => /8 calls already in flight/.test(d.message)));
    expect(waited.length).to.be.at.least(24);
    for (const end of hanging.splice(0)) end();
  });

  it('item 10: 2,000 distinct invalid tokens from one address cost at most 200 calls; then 429 with Retry-After', async () => {
    const perToken = new Map<string, number>();
    introspectionByToken(perToken);
    const app = await appWith();
    const attacker = agentFrom('127.0.0.1');
    // A caller whose token is known valid before the flood.
    const known = agentFrom('127.0.0.1');
    expect((await get(app, 'valid-known', known)).status).to.equal(200);
    const start = introspections();
    const tokens = Array.from({ length: 2000 }, (_, i) => `random-${i}-${Math.random().toString(36).slice(2)}`);
    const answers = await flood(app, tokens, attacker, 20);
    expect(introspections() - start).to.be.at.most(200);
    expect(count(answers, 401) + count(answers, 429)).to.equal(2000);
    const throttled = answers.find((a) => a.status === 429)!;
    expect(throttled, 'some answers are 429').to.not.equal(undefined);
    expect(throttled.headers['retry-after']).to.match(/^\d+$/);
    expect(JSON.parse(throttled.body)).to.include({ status: 429, gateway_status: 'protocol:GATEWAY-1370' });
    // Recorded as such.
    const context = apps.open.at(-1)!.app.contexts.find((c) => c.error?.code === 'ERR_TOKEN_THROTTLED');
    expect(context?.error?.outcome).to.equal('TOKEN_FAILED');
    expect(context?.diagnostics.some((d) => d.code === 'ERR_TOKEN_THROTTLED')).to.equal(true);
    // The token known valid keeps working, from the same address too, without a call.
    const calls = introspections();
    expect((await get(app, 'valid-known', attacker)).status).to.equal(200);
    expect(introspections()).to.equal(calls);
    // A caller from another address is not affected.
    expect((await get(app, 'valid-other-address', agentFrom('127.0.0.2'))).status).to.equal(200);
  });

  it('item 10: the throttle can be switched off', async () => {
    introspectionByToken(new Map());
    const app = await appWith({ invalidTokenThrottle: false });
    const answers = await flood(
      app,
      Array.from({ length: 60 }, (_, i) => `bad-${i}`),
      agentFrom(),
      10,
    );
    expect(count(answers, 401)).to.equal(60);
  });
});
