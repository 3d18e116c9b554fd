/**
 * `trafficControl` behind the gateway's own token middleware, over real HTTP with the demo
 * authorization server: per-client limits from the validated token, 429 problem+json with
 * Retry-After and the rate-limit fields, the decision on `req.gateway.traffic`, in-flight slots
 * freed when the exchange ends, the instance cap, and options checked at creation.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayContext } from '../../src/context.js';
import { InvalidOptionError } from '../../src/options.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import { TrafficControlError, TrafficStoreError } from '../../src/traffic/errors.js';
import { trafficControl, type TrafficControlMiddleware, type TrafficControlOptions } from '../../src/traffic/middleware.js';
import type { TrafficPolicy } from '../../src/traffic/schema.js';
import { parseList } from '../support/structured-fields.js';

describe('trafficControl middleware', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let tokens: Record<string, string>;
  let servers: Server[];
  let middlewares: TrafficControlMiddleware[];
  let contexts: GatewayContext[];

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    policy = createTokenPolicy({ name: 'PetStore IdP', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    tokens = {
      client1: await as.issueToken('client1', 'client1-secret', { scope: 'read' }),
      client2: await as.issueToken('client2', 'client2-secret', { scope: 'read' }),
    };
  });
  after(async () => {
    await as.stop();
    policy.close();
  });
  beforeEach(() => {
    servers = [];
    middlewares = [];
    contexts = [];
  });
  afterEach(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    for (const middleware of middlewares) await middleware.close();
  });

  /** An app: token, introspection, traffic control, then a handler that waits `?wait=` ms. */
  async function start(options: TrafficControlOptions): Promise<string> {
    const app = express();
    const traffic = trafficControl(options);
    middlewares.push(traffic);
    app.use((req, res, next) => {
      res.on('close', () => contexts.push(req.gateway!));
      next();
    });
    app.get('/pets', requireToken({ policy }), introspect({ policy }), traffic, (req, res) => {
      const wait = Number(req.query.wait ?? 0);
      setTimeout(() => res.json({ ok: true }), wait);
    });
    app.use(problemJsonErrorHandler({ messages: 'en' }));
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const perClient: TrafficPolicy = { name: 'per-client', metric: 'requests', limit: 3, windowSeconds: 60, groupBy: ['clientId'] };

  it('limits each client by its token, with 429 problem+json, Retry-After and the rate-limit fields', async () => {
    const url = await start({ policies: [perClient] });
    for (let i = 0; i < 3; i++) {
      const ok = await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client1}`);
      expect(ok.status).to.equal(200);
      expect(parseList(String(ok.headers['ratelimit-policy']))).to.deep.equal([{ value: 'per-client', params: { q: 3, w: 60 } }]);
      expect(parseList(String(ok.headers.ratelimit))).to.deep.equal([{ value: 'per-client', params: { r: 2 - i, t: i === 2 ? 60 : 0 } }]);
      expect(ok.headers['x-ratelimit-remaining']).to.equal(String(2 - i));
    }
    const refused = await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client1}`);
    expect(refused.status).to.equal(429);
    expect(refused.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(refused.body).to.include({
      status: 429,
      gateway_status: 'protocol:GATEWAY-1371',
      detail: 'Rate limit exceeded: try again later',
    });
    expect(Number(refused.headers['retry-after'])).to.be.within(59, 60);
    expect(refused.headers['x-ratelimit-remaining']).to.equal('0');
    expect(parseList(String(refused.headers.ratelimit))[0]!.params.r).to.equal(0);
    const context = contexts.at(-1)!;
    expect(context.error).to.include({ code: 'ERR_RATE_LIMITED', outcome: 'RATE_LIMITED' });
    expect(context.traffic?.limitedBy).to.include({ policy: 'per-client', group: 'clientId=client1' });
    // Another client has its own counter.
    const other = await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client2}`);
    expect([other.status, other.headers['x-ratelimit-remaining']]).to.deep.equal([200, '2']);
  });

  it('holds an in-flight slot until the exchange ends, aborted ones included', async () => {
    const url = await start({ policies: [{ name: 'one-at-a-time', metric: 'concurrentRequests', limit: 1 }], headers: 'none' });
    const slow = request(url)
      .get('/pets?wait=400')
      .set('Authorization', `Bearer ${tokens.client1}`)
      .then((r) => r);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const refused = await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client2}`);
    expect([refused.status, refused.headers['retry-after'], refused.headers['x-ratelimit-limit']]).to.deep.equal([429, '1', undefined]);
    expect((await slow).status).to.equal(200);
    expect((await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client2}`)).status).to.equal(200);
    // A client that gives up frees its slot.
    const aborted = request(url).get('/pets?wait=5000').set('Authorization', `Bearer ${tokens.client1}`).timeout(200);
    await aborted.then(
      () => expect.fail('not aborted'),
      () => undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client2}`)).status).to.equal(200);
  });

  it('refuses past the instance cap at once', async () => {
    const url = await start({ maxConcurrentRequests: 1 });
    const slow = request(url)
      .get('/pets?wait=400')
      .set('Authorization', `Bearer ${tokens.client1}`)
      .then((r) => r);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const started = Date.now();
    const busy = await request(url).get('/pets').set('Authorization', `Bearer ${tokens.client2}`);
    expect(Date.now() - started).to.be.below(300);
    expect(busy.status).to.equal(429);
    expect(busy.body.gateway_status).to.equal('integration:GATEWAY-1372');
    expect((await slow).status).to.equal(200);
    expect((await middlewares[0]!.limiter).inFlight).to.equal(0);
  });

  it('groups by facts a host supplies itself', async () => {
    const url = await start({
      policies: [{ name: 'per-tenant', metric: 'requests', limit: 1, windowSeconds: 60, groupBy: ['claim:tenant'] }],
      facts: (req) => ({ claims: { tenant: String(req.headers['x-tenant']) } }),
    });
    const send = (tenant: string) => request(url).get('/pets').set('Authorization', `Bearer ${tokens.client1}`).set('X-Tenant', tenant);
    expect([(await send('a')).status, (await send('a')).status, (await send('b')).status]).to.deep.equal([200, 429, 200]);
    expect(contexts[1]!.traffic?.limitedBy?.group).to.equal('claim:tenant=a');
  });

  it('checks its options at creation', () => {
    expect(() => trafficControl({ polices: [] } as never)).to.throw(InvalidOptionError, 'trafficControl: options.polices is not an option');
    expect(() => trafficControl({ policies: [{ ...perClient, limit: -1 }] })).to.throw(
      TrafficControlError,
      'trafficControl.policies[0].limit: must be a positive integer',
    );
    expect(() => trafficControl({ store: 'redis' })).to.throw(TrafficStoreError);
    expect(() => trafficControl({ redis: 'redis://127.0.0.1:1', policies: [{ ...perClient, windowSeconds: undefined }] })).to.throw(
      TrafficControlError,
      'windowSeconds: is required',
    );
    expect(() => trafficControl({ trustProxy: 'not an address' })).to.throw(InvalidOptionError, 'trustProxy');
  });
});
