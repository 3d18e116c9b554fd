/**
 * Slots come back whatever ends the exchange, over real `express-access-gateway serve` processes:
 * one counting in its own memory (store `local`), one in the machine's Redis (store `redis`, a key
 * prefix of this test's own). Each has `maxConcurrentRequests: 50` and a top-level
 * `concurrentRequests` policy without `groupBy` (limit 20), a backend of its own that holds some
 * paths until released, and the demo authorization server.
 *
 * Each path is played alone, then with its answers queued behind a held answer on a pipelining
 * connection that the client destroys: Node 20 never emits the 'close' of an answer still queued
 * when its connection dies, and the slots released on that event stayed taken until a restart.
 * After each, the in-flight gauge (admin listener, /gateway/metrics) must be back to 0, the
 * policy's slots gone (Redis: its keys deleted; local: no group in use), and legitimate requests
 * served (not 429).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createClient } from 'redis';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { editJson, exampleCopy } from '../gateway/helpers.js';
import {
  PASSWORD,
  adminHeaders,
  call,
  head,
  holdingBackend,
  inFlight,
  rawClient,
  sleep,
  until,
  type HoldingBackend,
  type RawClient,
} from './slot-support.js';
import { freePort, serve, stop, type Served } from './support.js';

const CAP = 50;
const LIMIT = 20;

interface Instance {
  readonly store: 'local' | 'redis';
  readonly port: number;
  /** `http://127.0.0.1:<port>/gateway`. */
  readonly api: string;
  /** `http://127.0.0.1:<adminPort>/gateway`. */
  readonly admin: string;
  readonly served: Served;
  readonly backend: HoldingBackend;
  readonly remove: () => Promise<void>;
}

describe('slots come back whatever ends the exchange (serve, local and Redis stores)', function () {
  this.timeout(300_000);
  const keyPrefix = `eagtest-slots-${randomBytes(4).toString('hex')}:`;
  const redis = createClient({ url: 'redis://127.0.0.1:6379' });
  let as: DemoAuthServer;
  const instances: Instance[] = [];
  const tokens: Record<string, string> = {};

  async function start(store: Instance['store']): Promise<Instance> {
    const [backend, copy, closedPort, port, adminPort] = await Promise.all([
      holdingBackend(),
      exampleCopy(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
      const open = (name: string, url: string, timeoutMs?: number) => ({
        provider: 'Ente',
        name,
        version: 1,
        backend: timeoutMs === undefined ? { url } : { url, timeoutMs },
      });
      config.apis.push(open('Open', backend.url), open('Down', `http://127.0.0.1:${closedPort}`), open('Late', backend.url, 500));
      config.trafficControl = {
        maxConcurrentRequests: CAP,
        policies: [{ name: 'in-flight', metric: 'concurrentRequests', limit: LIMIT }],
      };
    });
    const served = serve(['serve', '--config', copy.configFile, '--port', String(port), '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: PASSWORD,
      GATEWAY_NODE_ID: `slots-${store}`,
      ...(store === 'redis'
        ? {
            REDIS_URL: 'redis://127.0.0.1:6379',
            REDIS_KEY_PREFIX: keyPrefix,
            GATEWAY_CLUSTER_SECRET: 'slots-test-cluster-secret-0123456789',
            // A starved process on a crowded machine must not take Redis for down.
            REDIS_COMMAND_TIMEOUT_MS: '2000',
          }
        : {}),
    });
    await served.waitFor(/serving APIs at/, 60_000);
    return {
      store,
      port,
      api: `http://127.0.0.1:${port}/gateway`,
      admin: `http://127.0.0.1:${adminPort}/gateway`,
      served,
      backend,
      remove: async () => {
        await backend.stop();
        await copy.remove();
      },
    };
  }

  before(async () => {
    await redis.connect();
    as = await startDemoAuthServer({ port: 0 });
    for (const id of ['client1', 'client2']) tokens[id] = await as.issueToken(id, `${id}-secret`);
    instances.push(...(await Promise.all([start('local'), start('redis')])));
  });

  after(async () => {
    for (const instance of instances) instance.backend.release();
    await Promise.all(instances.map((instance) => stop(instance.served)));
    await Promise.all(instances.map((instance) => instance.remove()));
    for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
    await redis.close();
    await as?.stop();
  });

  afterEach(function () {
    for (const instance of instances) instance.backend.release();
    if (this.currentTest?.state !== 'failed') return;
    for (const instance of instances)
      process.stderr.write(`--- ${instance.store} instance, last output:\n${instance.served.output().slice(-3000)}\n`);
  });

  const bearer = (client: string): Record<string, string> => ({ authorization: `Bearer ${tokens[client]!}` });

  /** The `in-flight` policy's slots taken now: members of its Redis keys, or the local store's count. */
  async function policySlots(instance: Instance): Promise<number> {
    if (instance.store === 'redis') {
      let held = 0;
      for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}traffic:*`, COUNT: 500 }))
        for (const key of keys) if ((await redis.type(key)) === 'zset') held += await redis.zCard(key);
      return held;
    }
    const res = await fetch(`${instance.admin}/configuration/api/traffic/usage`, { headers: adminHeaders });
    const usage = (await res.json()) as { policies: Array<{ policy: string; groups: Array<{ used: number }> }> };
    return (usage.policies.find((p) => p.policy === 'in-flight')?.groups ?? []).reduce((sum, g) => sum + g.used, 0);
  }

  /** The Redis keys of the policy's slots (none on the local store). */
  async function slotKeys(instance: Instance): Promise<string[]> {
    if (instance.store !== 'redis') return [];
    const found: string[] = [];
    for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}traffic:*`, COUNT: 500 })) found.push(...keys);
    return found;
  }

  /** What is held once the exchanges ended: waits for the gauge and the policy's slots to be back to 0. */
  async function settled(instance: Instance): Promise<{ gauge: number; slots: number; keys: string[] }> {
    const gauge = await until(
      () => inFlight(instance.admin),
      (n) => n === 0,
      15_000,
    );
    const slots = await until(
      () => policySlots(instance),
      (n) => n === 0,
      15_000,
    );
    return { gauge, slots, keys: await slotKeys(instance) };
  }

  function expectNothingHeld(instance: Instance, held: { gauge: number; slots: number; keys: string[] }): void {
    expect(held.gauge, `${instance.store}: gateway_concurrent_requests`).to.equal(0);
    expect(held.slots, `${instance.store}: slots of the in-flight policy`).to.equal(0);
    expect(held.keys, `${instance.store}: the policy's Redis keys`).to.deep.equal([]);
  }

  /**
   * Ten concurrent legitimate requests, held at the backend together: each must reach it (the
   * cap and the policy have room for them), none refused with 429.
   */
  async function legitimate(instance: Instance, client = 'client2'): Promise<number[]> {
    const { backend } = instance;
    backend.release();
    let answered = 0;
    // A request that fails outright counts as status 0.
    const answers = Array.from({ length: 10 }, () =>
      call(`${instance.api}/Ente/PetStore/v1/pet/slow`, { headers: bearer(client) })
        .then(
          (answer) => answer.status,
          () => 0,
        )
        .finally(() => answered++),
    );
    await until(
      () => backend.held.size + answered,
      (n) => n >= 10,
      30_000,
    );
    backend.release();
    return Promise.all(answers);
  }

  const times = (n: number, text: string): string => text.repeat(n);
  const destroyAll = (clients: RawClient[]): void => clients.forEach((client) => client.socket.destroy());

  it('three connections of one anonymous client, each pipelining 26 requests behind a held one, then destroyed: every maxConcurrentRequests slot comes back', async () => {
    const figures: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        const pipeline = head('GET', '/gateway/Ente/Open/v1/slow') + times(25, head('GET', '/gateway/Ente/PetStore/v1/pet/1'));
        const clients = await Promise.all([0, 1, 2].map(() => rawClient(instance.port, pipeline)));
        const before = await until(
          () => inFlight(instance.admin),
          (n) => n >= CAP,
        );
        destroyAll(clients);
        const held = await settled(instance);
        const statuses = await legitimate(instance);
        figures.push(
          `${instance.store}: ${before} of ${CAP} slots held before the destroy, ${held.gauge} after; policy slots ${held.slots}; legitimate: ${statuses.join(',')}`,
        );
        expect(before, `${instance.store}: the cap was reached`).to.equal(CAP);
        expectNothingHeld(instance, held);
        expect(statuses, `${instance.store}: legitimate requests`).to.deep.equal(Array(10).fill(200));
      }),
    ).finally(() => console.log(`      ${figures.join('\n      ')}`));
  });

  it('one client with a valid token pipelining 26 requests under a concurrentRequests policy (limit 20, no groupBy), then destroyed: its 20 policy slots come back', async () => {
    const figures: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        const pipeline =
          head('GET', '/gateway/Ente/PetStore/v1/pet/slow', bearer('client1')) +
          times(25, head('GET', '/gateway/Ente/PetStore/v1/pet/1', bearer('client1')));
        const client = await rawClient(instance.port, pipeline);
        const taken = await until(
          () => policySlots(instance),
          (n) => n >= LIMIT,
        );
        const gaugeBefore = await until(
          () => inFlight(instance.admin),
          (n) => n >= 26,
        );
        client.socket.destroy();
        const held = await settled(instance);
        const statuses = await legitimate(instance);
        figures.push(
          `${instance.store}: policy slots ${taken} of ${LIMIT} before the destroy, ${held.slots} after (Redis keys left: ${held.keys.length}); gauge ${gaugeBefore} → ${held.gauge}; legitimate: ${statuses.join(',')}`,
        );
        expect(taken).to.equal(LIMIT);
        expect(gaugeBefore).to.equal(26);
        expectNothingHeld(instance, held);
        expect(statuses, `${instance.store}: legitimate requests`).to.deep.equal(Array(10).fill(200));
      }),
    ).finally(() => console.log(`      ${figures.join('\n      ')}`));
  });

  it('the Redis store renews no lease of a connection that is gone: 20 s later no slot of it is held', async () => {
    const instance = instances.find((i) => i.store === 'redis')!;
    const pipeline =
      head('GET', '/gateway/Ente/PetStore/v1/pet/slow', bearer('client1')) +
      times(25, head('GET', '/gateway/Ente/PetStore/v1/pet/1', bearer('client1')));
    const client = await rawClient(instance.port, pipeline);
    const taken = await until(
      () => policySlots(instance),
      (n) => n >= LIMIT,
    );
    client.socket.destroy();
    // Past the lease (15 s): a slot renewed for a gone exchange would still be there.
    await sleep(20_000);
    const held = await policySlots(instance);
    const keys = await slotKeys(instance);
    console.log(`      redis: ${taken} slots before the destroy, ${held} held 20 s later (${keys.length} keys)`);
    expect(taken).to.equal(LIMIT);
    expect(held).to.equal(0);
    expect(keys).to.deep.equal([]);
    expect(await legitimate(instance)).to.deep.equal(Array(10).fill(200));
  });

  it('answered, refused and failed exchanges (200, 400, 401, 503, 504): alone, and queued behind a held answer when the connection dies', async () => {
    const figures: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        // Alone, one after the other.
        const alone = [
          (await call(`${instance.api}/Ente/Open/v1/fast`)).status,
          (await call(`${instance.api}/Ente/PetStore/v1/pet/1`)).status,
          (await call(`${instance.api}/Ente/PetStore/v1/pet/1`, { headers: { authorization: 'Bearer made-up-token' } })).status,
          (await call(`${instance.api}/Ente/PetStore/v1/pet/1`, { headers: bearer('client1') })).status,
          (await call(`${instance.api}/Ente/Down/v1/x`)).status,
          (await call(`${instance.api}/Ente/Late/v1/late`)).status,
        ];
        expect(alone).to.deep.equal([200, 400, 401, 200, 503, 504]);
        expectNothingHeld(instance, await settled(instance));
        instance.backend.release();

        // Queued behind a held answer, then the connection destroyed.
        const pipeline =
          head('GET', '/gateway/Ente/Open/v1/slow') +
          head('GET', '/gateway/Ente/Open/v1/fast') +
          head('GET', '/gateway/Ente/PetStore/v1/pet/1') +
          head('GET', '/gateway/Ente/PetStore/v1/pet/1', { authorization: 'Bearer made-up-token' }) +
          head('GET', '/gateway/Ente/PetStore/v1/pet/1', bearer('client1')) +
          head('GET', '/gateway/Ente/Down/v1/x') +
          head('GET', '/gateway/Ente/Late/v1/late');
        const seen = instance.backend.seen.length;
        const client = await rawClient(instance.port, pipeline);
        const gauge = await until(
          () => inFlight(instance.admin),
          (n) => n >= 7,
        );
        // The backend timeout has answered /late (504): the backend no longer holds it.
        await until(
          () => instance.backend.seen.slice(seen).includes('/late') && ![...instance.backend.held].some((r) => r.req.url === '/late'),
          (done) => done,
        );
        const slots = await policySlots(instance);
        client.socket.destroy();
        const held = await settled(instance);
        const statuses = await legitimate(instance);
        figures.push(
          `${instance.store}: alone ${alone.join(',')}; queued: gauge ${gauge} and policy slots ${slots} before the destroy, ${held.gauge} and ${held.slots} after; legitimate: ${statuses.join(',')}`,
        );
        expect(gauge).to.equal(7);
        expectNothingHeld(instance, held);
        expect(statuses).to.deep.equal(Array(10).fill(200));
      }),
    ).finally(() => console.log(`      ${figures.join('\n      ')}`));
  });

  it('a client that leaves while the backend works: alone, and with exchanges queued behind (one waiting on its token)', async () => {
    const figures: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        const { backend } = instance;
        const alone = await rawClient(instance.port, head('GET', '/gateway/Ente/Open/v1/slow'));
        await until(
          () => backend.held.size,
          (n) => n >= 1,
        );
        alone.socket.destroy();
        expectNothingHeld(instance, await settled(instance));

        const pipeline =
          head('GET', '/gateway/Ente/Open/v1/slow') +
          head('GET', '/gateway/Ente/Open/v1/slow') +
          head('GET', '/gateway/Ente/PetStore/v1/pet/slow', bearer('client1'));
        const client = await rawClient(instance.port, pipeline);
        const atBackend = await until(
          () => backend.held.size,
          (n) => n >= 3,
        );
        const slots = await policySlots(instance);
        client.socket.destroy();
        const held = await settled(instance);
        // The backend exchanges of the queued answers are given up too.
        const left = await until(
          () => backend.held.size,
          (n) => n === 0,
          15_000,
        );
        const statuses = await legitimate(instance);
        figures.push(
          `${instance.store}: ${atBackend} at the backend and ${slots} policy slots before the destroy; after: gauge ${held.gauge}, policy slots ${held.slots}, backend exchanges ${left}; legitimate: ${statuses.join(',')}`,
        );
        expect(atBackend).to.equal(3);
        expect(slots).to.equal(3);
        expectNothingHeld(instance, held);
        expect(left, 'backend exchanges still open').to.equal(0);
        expect(statuses).to.deep.equal(Array(10).fill(200));
      }),
    ).finally(() => console.log(`      ${figures.join('\n      ')}`));
  });

  it("the server's request timeout cuts an upload queued behind a held answer: its slots come back", async () => {
    const figures: string[] = [];
    await Promise.all(
      instances.map(async (instance) => {
        // An upload that never ends, behind a held answer: Node's requestTimeout (30 s, checked
        // every second) closes the connection.
        const pipeline =
          head('GET', '/gateway/Ente/Open/v1/slow') +
          head('PUT', '/gateway/Ente/Open/v1/upload', { 'content-type': 'application/json', 'content-length': '1000' }) +
          '{"part":';
        const client = await rawClient(instance.port, pipeline);
        const gauge = await until(
          () => inFlight(instance.admin),
          (n) => n >= 2,
        );
        await client.closed;
        const held = await settled(instance);
        const statuses = await legitimate(instance);
        figures.push(`${instance.store}: gauge ${gauge} before the timeout, ${held.gauge} after; legitimate: ${statuses.join(',')}`);
        expect(gauge).to.equal(2);
        expectNothingHeld(instance, held);
        expect(statuses).to.deep.equal(Array(10).fill(200));
      }),
    ).finally(() => console.log(`      ${figures.join('\n      ')}`));
  });
});
