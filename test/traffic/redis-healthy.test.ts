/**
 * A healthy Redis is never taken for down (docs/traffic-control.md, "When Redis is down"): with
 * `onStoreUnavailable: "deny"`, 5,000 decisions over real `serve` on the machine's Redis, at the
 * default command timeout, get no 503. Before, one reply slower than 100 ms on a crowded host
 * skipped Redis for a second, and the decisions of that second were refused.
 *
 * Run it beside two CPU-bound processes (`node -e 'for(;;);' &`, twice) to see it on a crowded
 * host; the whole suite beside them is one.
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { cleanPrefix } from '../cluster/helpers.js';
import { echoBackend } from '../gateway/helpers.js';
import { serve, stop, type Served } from '../server/support.js';

const DECISIONS = 5_000;

describe('traffic control on a healthy Redis: no decision refused for want of it', function () {
  this.timeout(300_000);
  const keyPrefix = `eagtest-healthy-${randomBytes(4).toString('hex')}:`;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  let served: Served;
  let port: number;
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });

  before(async () => {
    echo = await echoBackend();
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-redis-healthy-'));
    const config = path.join(dir, 'gateway.json');
    await writeFile(
      config,
      JSON.stringify({
        apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url } }],
        trafficControl: {
          onStoreUnavailable: 'deny',
          policies: [{ name: 'per-address', metric: 'requests', limit: 1_000_000, windowSeconds: 3600, groupBy: ['clientAddress'] }],
        },
      }),
    );
    // The default REDIS_COMMAND_TIMEOUT_MS: what is measured is that default.
    served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0'], {
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      GATEWAY_CLUSTER_SECRET: randomBytes(32).toString('base64'),
    });
    port = Number((await served.waitFor(/serving APIs at http:\/\/[^:]+:(\d+)/))[1]);
  });
  after(async () => {
    agent.destroy();
    await stop(served);
    await echo?.stop();
    await rm(dir, { recursive: true, force: true });
    await cleanPrefix(keyPrefix);
  });

  const get = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/gateway/Ente/Echo/v1/ping', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end();
    });

  it(`${DECISIONS} decisions under deny at the default command timeout: no 503`, async () => {
    const statuses = new Map<number, number>();
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < DECISIONS) {
          const status = await get();
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    console.log(`      ${DECISIONS} decisions in ${Date.now() - started} ms: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(statuses.get(503) ?? 0, 'refused for want of Redis').to.equal(0);
    expect(statuses.get(201)).to.equal(DECISIONS);
    expect(served.output()).to.not.match(/dependency_down|redis unavailable/);
  });
});
