/**
 * Traffic control through createGateway, over real HTTP (the local store; Redis and several
 * instances are in test/server/traffic-cluster.test.ts): policies as a step of each API, the
 * rate-limit fields on every answer of a covered API (the backend's own replaced), refusals as
 * problem+json, the record and metrics, counts across ResetAllCaches, the instance cap.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createGateway, type Gateway, type GatewayConfig, type TransactionRecord } from '../../src/index.js';
import { close, listen } from './helpers.js';
import { eventually } from '../record/helpers.js';

/** A backend: `/status/<n>` answers n with rate-limit fields of its own; `/hold` answers when released. */
async function backend(): Promise<{ url: string; server: Server; held: number; seen: number; release(): void }> {
  const holds: ServerResponse[] = [];
  const state = {
    url: '',
    server: undefined as unknown as Server,
    held: 0,
    seen: 0,
    release() {
      for (const res of holds.splice(0)) res.end('released');
    },
  };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.seen++;
    if (req.url === '/hold') {
      state.held++;
      res.on('close', () => state.held--);
      holds.push(res);
      return;
    }
    const status = Number(/^\/status\/(\d{3})$/.exec(req.url ?? '')?.[1] ?? 200);
    res.writeHead(status, {
      'Content-Type': 'text/plain',
      'X-RateLimit-Limit': '999',
      'x-ratelimit-remaining': '998',
      RateLimit: '"backend";r=998;t=1',
      'X-Backend': 'yes',
    });
    res.end('ok');
  });
  state.url = await listen(state.server);
  return state;
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One request on a fresh connection; `abortAfterMs` destroys it then (the client gone). */
function send(url: string, headers: Record<string, string> = {}, abortAfterMs?: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', (err) => (abortAfterMs === undefined ? reject(err) : resolve({ status: 0, headers: {}, body: '' })));
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
    req.end();
  });
}

const RATE_LIMIT_NAMES = ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

function rateLimitFields(answer: Answer): Record<string, unknown> {
  return Object.fromEntries(RATE_LIMIT_NAMES.filter((n) => answer.headers[n] !== undefined).map((n) => [n, answer.headers[n]]));
}

async function metric(gateway: Gateway, line: RegExp): Promise<number | undefined> {
  const text = await gateway.metrics!.text();
  const found = text.split('\n').find((l) => line.test(l));
  return found === undefined ? undefined : Number(found.slice(found.lastIndexOf(' ') + 1));
}

describe('traffic control through createGateway', function () {
  this.timeout(20_000);
  let back: Awaited<ReturnType<typeof backend>>;
  let dir: string;
  let configFile: string;
  let gateway: Gateway;
  let server: Server;
  let base: string;

  const config = (backendUrl: string): GatewayConfig => ({
    trafficControl: {
      headers: 'both',
      policies: [{ name: 'all-apis', metric: 'requests', limit: 1000, windowSeconds: 3600, groupBy: ['api'] }],
    },
    apis: [
      {
        provider: 'Ente',
        name: 'Limited',
        version: 1,
        backend: { url: backendUrl },
        operations: [
          { name: 'status', method: 'GET', path: '/status/{code}' },
          { name: 'hold', method: 'GET', path: '/hold' },
        ],
        trafficControl: {
          policies: [
            {
              name: 'per-address',
              metric: 'requests',
              limit: 3,
              windowSeconds: 60,
              window: 'fixed',
              groupBy: ['header:x-caller'],
              operations: ['status'],
            },
            {
              name: 'watch',
              metric: 'requests',
              limit: 1,
              windowSeconds: 60,
              groupBy: ['header:x-caller'],
              mode: 'warningOnly',
              operations: ['status'],
            },
          ],
        },
      },
      { provider: 'Ente', name: 'Other', version: 1, backend: { url: backendUrl } },
    ],
  });

  before(async () => {
    back = await backend();
    dir = await mkdtemp(path.join(tmpdir(), 'eag-traffic-'));
    configFile = path.join(dir, 'gateway.config.json');
    await writeFile(configFile, JSON.stringify(config(back.url)));
    gateway = createGateway({ config: configFile, metrics: { auth: false }, trafficControl: { maxConcurrentRequests: 2 } });
    await gateway.ready();
    server = createServer(gateway.handler);
    base = `${await listen(server)}/gateway`;
  });

  after(async () => {
    back?.release();
    await close(server);
    await gateway?.close();
    await close(back?.server);
    await rm(dir, { recursive: true, force: true });
  });

  it('answers within the limit with the rate-limit fields (the backend’s replaced, on its 4xx/5xx too), then 429 problem+json with Retry-After', async () => {
    const caller = { 'x-caller': 'alpha' };
    const ok = await send(`${base}/Ente/Limited/v1/status/200`, caller);
    expect(ok.status).to.equal(200);
    expect(ok.headers['x-backend']).to.equal('yes');
    // The legacy fields show the policy nearest its limit: here the warning-only one.
    expect(rateLimitFields(ok)).to.deep.equal({
      'ratelimit-policy': '"all-apis";q=1000;w=3600, "per-address";q=3;w=60, "watch";q=1;w=60',
      ratelimit: ok.headers['ratelimit'],
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': ok.headers['x-ratelimit-reset'],
    });
    expect(ok.headers['ratelimit']).to.match(/^"all-apis";r=999;t=\d+, "per-address";r=2;t=\d+, "watch";r=0;t=\d+$/);
    const notFound = await send(`${base}/Ente/Limited/v1/status/404`, caller);
    expect(notFound.status).to.equal(404);
    expect(notFound.headers['x-backend']).to.equal('yes');
    expect(notFound.headers['ratelimit']).to.match(/"per-address";r=1;/);
    expect(notFound.headers['x-ratelimit-limit'], 'ours, not the backend’s').to.equal('1');
    const failed = await send(`${base}/Ente/Limited/v1/status/503`, caller);
    expect(failed.status).to.equal(503);
    expect(failed.headers['ratelimit']).to.match(/"per-address";r=0;/);
    const seen = back.seen;
    const refused = await send(`${base}/Ente/Limited/v1/status/200`, caller);
    expect(back.seen, 'the backend never saw the refused request').to.equal(seen);
    expect(refused.status).to.equal(429);
    expect(refused.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(JSON.parse(refused.body)).to.include({ status: 429, gateway_status: 'protocol:GATEWAY-1371' });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).to.be.within(1, 60);
    expect(refused.headers['ratelimit']).to.match(new RegExp(`"per-address";r=0;t=${retryAfter}(,|$)`));
    // Another group has its own count; another operation and another API are not covered by the API's policies.
    expect((await send(`${base}/Ente/Limited/v1/status/200`, { 'x-caller': 'beta' })).status).to.equal(200);
    const other = await send(`${base}/Ente/Other/v1/anything`);
    expect(other.status).to.equal(200);
    expect(rateLimitFields(other)).to.deep.include({ 'ratelimit-policy': '"all-apis";q=1000;w=3600', 'x-ratelimit-limit': '1000' });
  });

  it('records the refusal (outcome RATE_LIMITED, the policy and its group) and the warnings; finds them by policy; counts them', async () => {
    const page = await gateway.store.query({ outcome: 'RATE_LIMITED' });
    const limited = page.items.find((r) => r.errorCode === 'ERR_RATE_LIMITED') as TransactionRecord;
    expect(limited.traffic).to.deep.include({
      result: 'limited',
      policy: 'per-address',
      group: 'header:x-caller=alpha',
      warnings: ['watch'],
    });
    expect(limited.traffic!.policies.map((p) => [p.policy, p.exceeded])).to.deep.equal([
      ['all-apis', false],
      ['per-address', true],
      ['watch', true],
    ]);
    expect(limited.gatewayStatus).to.equal('protocol:GATEWAY-1371');
    const warned = (await gateway.store.query({ trafficPolicy: 'watch', outcome: 'BACKEND_4XX' })).items[0]!;
    expect(warned.traffic).to.deep.include({ result: 'allowed', warnings: ['watch'] });
    expect(limited.diagnostics.map((d) => d.message).join('\n')).to.include('policy per-address, group header:x-caller=alpha');
    expect(
      await metric(gateway, /^gateway_traffic_decisions_total\{api="Ente\/Limited\/v1",policy="per-address",result="limited"\}/),
    ).to.equal(1);
    // The first of alpha's requests was within watch's limit of 1; the three after it (the refused one too) were past it.
    expect(await metric(gateway, /^gateway_traffic_decisions_total\{api="Ente\/Limited\/v1",policy="watch",result="warning"\}/)).to.equal(
      3,
    );
    expect(
      await metric(gateway, /^gateway_traffic_decisions_total\{api="Ente\/Limited\/v1",policy="per-address",result="allowed"\}/),
    ).to.equal(4);
    expect(
      await metric(gateway, /^gateway_requests_total\{api="Ente\/Limited\/v1",operation="status",outcome="RATE_LIMITED",status="429"\}/),
    ).to.equal(1);
  });

  it('keeps the counts across ResetAllCaches while the policy is the same', async () => {
    await gateway.resetAllCaches();
    expect((await send(`${base}/Ente/Limited/v1/status/200`, { 'x-caller': 'alpha' })).status).to.equal(429);
  });

  it('the instance cap: past 2 in flight, 429 ERR_INSTANCE_BUSY at once; the count comes back to 0 after answers and aborts', async () => {
    const held = [send(`${base}/Ente/Limited/v1/hold`), send(`${base}/Ente/Limited/v1/hold`, {}, 400)];
    await eventually(() => (back.held === 2 ? true : undefined), 'two requests held at the backend');
    expect(await metric(gateway, /^gateway_concurrent_requests /)).to.equal(2);
    const started = Date.now();
    const busy = await send(`${base}/Ente/Limited/v1/status/200`, { 'x-caller': 'gamma' });
    expect(Date.now() - started, 'refused at once').to.be.below(1000);
    expect(busy.status).to.equal(429);
    expect(busy.headers['retry-after']).to.equal('1');
    expect(JSON.parse(busy.body)).to.include({ gateway_status: 'integration:GATEWAY-1372' });
    expect(rateLimitFields(busy), 'no policy decided on it').to.deep.equal({});
    expect(back.held).to.be.at.most(2);
    // The admin listener is not counted.
    const admin = createServer((req, res) => gateway.adminRouter(req as never, res as never, () => res.end()));
    const adminBase = await listen(admin);
    expect((await send(`${adminBase}/gateway/health/live`)).status).to.equal(200);
    await close(admin);
    // One client gives up (its exchange aborted), the other is answered: both places come back.
    await eventually(() => (back.held === 1 ? true : undefined), 'the aborted request gone');
    back.release();
    expect((await held[0]!).status).to.equal(200);
    await eventually(
      async () => ((await metric(gateway, /^gateway_concurrent_requests /)) === 0 ? true : undefined),
      'no request in flight',
    );
    const record = (await gateway.store.query({ gatewayStatus: 'integration:GATEWAY-1372' })).items[0]!;
    expect(record.outcome.code).to.equal('RATE_LIMITED');
    expect(record.errorCode).to.equal('ERR_INSTANCE_BUSY');
    expect((await send(`${base}/Ente/Other/v1/x`)).status).to.equal(200);
  });
});
