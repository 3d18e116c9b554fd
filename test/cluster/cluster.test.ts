/**
 * GatewayCluster on the machine's Redis: several nodes in one process, each with its own
 * connections (separate processes are the gateway's end-to-end test): the registry, ResetAllCaches
 * broadcast and its reports, the generation that invalidates shared token results, convergence of
 * a node that missed the broadcast, and Redis down.
 */
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGatewayCluster, type GatewayCluster, type GatewayClusterOptions } from '../../src/cluster/cluster.js';
import { InvalidOptionError } from '../../src/options.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import {
  CLUSTER_SECRET,
  REDIS_URL,
  cleanPrefix,
  keysOf,
  plainClient,
  sleep,
  splitClient,
  testPrefix,
  until,
  type PlainClient,
} from './helpers.js';

interface Node {
  cluster: GatewayCluster;
  resets: number[];
}

describe('GatewayCluster (Redis)', function () {
  this.timeout(30_000);
  let prefix: string;
  let nodes: Node[];
  let proxies: TcpProxy[];
  let cleanups: Array<() => void | Promise<void>>;
  let raw: PlainClient;

  before(async () => {
    raw = await plainClient();
  });
  after(() => raw.destroy());
  beforeEach(() => {
    prefix = testPrefix('cluster');
    nodes = [];
    proxies = [];
    cleanups = [];
  });
  afterEach(async () => {
    for (const { cluster } of nodes) await cluster.close();
    for (const cleanup of cleanups) await cleanup();
    for (const proxy of proxies) await proxy.close();
    await cleanPrefix(prefix);
  });

  async function node(id: string, options: Partial<GatewayClusterOptions> = {}): Promise<Node> {
    const resets: number[] = [];
    let loadedAt = Date.now();
    const cluster = await createGatewayCluster({
      redis: REDIS_URL,
      secret: CLUSTER_SECRET,
      keyPrefix: prefix,
      nodeId: id,
      onReset: async () => {
        resets.push(Date.now());
        loadedAt = Date.now();
        return { tokenResultsCleared: 0 };
      },
      describe: () => ({ configLoadedAt: loadedAt, apis: ['Ente/PetStore/v1'], configVersion: 'v-test' }),
      ...options,
    });
    const created = { cluster, resets };
    nodes.push(created);
    return created;
  }

  async function proxied(): Promise<TcpProxy> {
    const proxy = await startTcpProxy({ port: 6379 });
    proxies.push(proxy);
    return proxy;
  }

  it('lists the live nodes with their description; a closed node disappears', async () => {
    const a = await node('node-a');
    const b = await node('node-b');
    await node('node-c');
    const listed = await a.cluster.nodes();
    expect(listed?.map((n) => n.id)).to.deep.equal(['node-a', 'node-b', 'node-c']);
    expect(listed![0]).to.deep.include({ id: 'node-a', apis: ['Ente/PetStore/v1'], configVersion: 'v-test', generation: 0 });
    expect(listed![0]!.startedAt).to.be.a('number');
    expect(listed![0]!.heartbeatAt).to.be.a('number');
    await b.cluster.close();
    nodes.splice(nodes.indexOf(b), 1);
    expect((await a.cluster.nodes())?.map((n) => n.id)).to.deep.equal(['node-a', 'node-c']);
    const status = await a.cluster.status();
    expect(status).to.deep.include({ nodeId: 'node-a', generation: 0, appliedGeneration: 0 });
    expect(status.redis.healthy).to.equal(true);
    expect(status.nodes?.length).to.equal(2);
  });

  it('resetAll on one node resets all three within 1 s and reports each of them', async () => {
    const a = await node('node-a');
    const b = await node('node-b');
    const c = await node('node-c');
    const started = Date.now();
    const answer = await a.cluster.resetAll();
    expect(answer.broadcast).to.equal('sent');
    expect(answer.generation).to.equal(1);
    expect(answer.missing).to.deep.equal([]);
    expect(answer.nodes.map((r) => r.nodeId).sort()).to.deep.equal(['node-a', 'node-b', 'node-c']);
    expect(answer.nodes[0]!.nodeId).to.equal('node-a');
    for (const report of answer.nodes) {
      expect(report.applied).to.equal(true);
      expect(report.result).to.deep.equal({ tokenResultsCleared: 0 });
      expect(report.config).to.deep.include({ configVersion: 'v-test' });
    }
    for (const n of [a, b, c]) {
      expect(n.resets.length).to.equal(1);
      expect(n.resets[0]! - started).to.be.lessThan(1000);
    }
    // No second reset at the next heartbeats: each node knows it applied this generation.
    await sleep(1300);
    for (const n of [a, b, c]) expect(n.resets.length).to.equal(1);
    expect(b.cluster.generation).to.equal(1);
    expect((await c.cluster.status()).appliedGeneration).to.equal(1);
  });

  it('a registry read that times out is asked again: the answer still lists every node, none taken for missing', async () => {
    // Node A's own connection, whose next ZRANGE (the registry read of a reset) answers late.
    const direct = await plainClient();
    cleanups.push(() => direct.destroy());
    let slowReads = 0;
    const client = {
      sendCommand: async (args: string[]) => {
        if (args[0] === 'ZRANGE' && slowReads > 0) {
          slowReads--;
          await sleep(300);
        }
        return direct.sendCommand(args);
      },
      connect: () => direct.connect(),
      duplicate: () => direct.duplicate(),
      subscribe: (channel: string, listener: (message: string, channel: string) => void) => direct.subscribe(channel, listener),
      unsubscribe: (channel: string) => direct.unsubscribe(channel),
      on: (event: string, listener: (...args: unknown[]) => void) => direct.on(event, listener),
      removeListener: (event: string, listener: (...args: unknown[]) => void) => direct.removeListener(event, listener),
      get isReady() {
        return direct.isReady;
      },
      get isOpen() {
        return direct.isOpen;
      },
    };
    const a = await node('node-a', { redis: client });
    await node('node-b');
    await node('node-c');
    slowReads = 1;
    const answer = await a.cluster.resetAll();
    expect(slowReads, 'the slow read happened').to.equal(0);
    expect(answer.broadcast).to.equal('sent');
    expect(answer.nodes.map((r) => r.nodeId).sort()).to.deep.equal(['node-a', 'node-b', 'node-c']);
    expect(answer.missing).to.deep.equal([]);
    expect(answer.nodesUnknown).to.equal(undefined);
  });

  it('reports a node whose reset failed, with the reason', async () => {
    const a = await node('node-a');
    await node('node-b', {
      onReset: () => Promise.reject(new Error('configuration invalid: apis[0].backend')),
    });
    const answer = await a.cluster.resetAll();
    const failed = answer.nodes.find((r) => r.nodeId === 'node-b');
    expect(failed).to.deep.include({ applied: false, error: 'configuration invalid: apis[0].backend' });
  });

  it('the generation bump makes a shared token result miss', async () => {
    const as: DemoAuthServer = await startDemoAuthServer({ port: 0 });
    const policies: TokenPolicy[] = [];
    cleanups.push(async () => {
      for (const policy of policies) policy.close();
      await as.stop();
    });
    const make = (cluster: GatewayCluster): TokenPolicy => {
      const policy = createTokenPolicy({
        name: 'PetStore IdP',
        issuer: as.issuer,
        clientId: 'gateway',
        clientSecret: 'gateway-secret',
        shared: cluster.tokenResults,
      });
      policies.push(policy);
      return policy;
    };
    const a = await node('node-a', { onReset: async () => policyA.clearCache() });
    const b = await node('node-b', { onReset: async () => policyB.clearCache() });
    const policyA = make(a.cluster);
    const policyB = make(b.cluster);
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    await policyA.validate(token);
    let before = as.stats.introspections;
    expect((await policyB.validate(token)).shared).to.equal(true);
    expect(as.stats.introspections - before).to.equal(0);

    await a.cluster.resetAll();
    before = as.stats.introspections;
    const afterReset = await policyB.validate(token);
    expect(afterReset.shared).to.equal(undefined);
    expect(as.stats.introspections - before).to.equal(1);
    expect((await keysOf(raw, `${prefix}tok:1:`)).length).to.be.greaterThan(0);
  });

  it('a node that missed the broadcast (pub/sub cut off) converges at its next heartbeat, within 2 s', async () => {
    const proxy = await proxied();
    const split = await splitClient(`redis://127.0.0.1:${proxy.port}`);
    cleanups.push(() => split.close());
    const a = await node('node-a');
    const b = await node('node-b');
    const c = await node('node-c', { redis: split.client });
    proxy.cut();
    const started = Date.now();
    const answer = a.cluster.resetAll();
    await until(() => b.resets.length === 1, 1000, 'node-b reset');
    const took = await until(() => c.resets.length === 1, 2000, 'node-c reset through the generation check');
    expect(took).to.be.lessThan(2000);
    expect(c.cluster.generation).to.equal(1);
    // node-c answered the kept broadcast, so the origin hears from it too.
    const result = await answer;
    expect(result.nodes.map((r) => r.nodeId).sort()).to.deep.equal(['node-a', 'node-b', 'node-c']);
    expect(Date.now() - started).to.be.lessThan(2500);
    proxy.restore();
  });

  it('says which live nodes did not answer in time', async () => {
    const proxy = await proxied();
    const a = await node('node-a', { resetWaitMs: 500 });
    const b = await node('node-b', { redis: `redis://127.0.0.1:${proxy.port}`, heartbeatMs: 60_000 });
    expect((await a.cluster.nodes())?.map((n) => n.id)).to.deep.equal(['node-a', 'node-b']);
    proxy.cut();
    const answer = await a.cluster.resetAll();
    expect(answer.missing).to.deep.equal(['node-b']);
    expect(answer.nodes.map((r) => r.nodeId)).to.deep.equal(['node-a']);
    expect(b.resets.length).to.equal(0);
    proxy.restore();
  });

  it('Redis down: resetAll resets this node and says the others could not be told; they are told once Redis is back', async () => {
    const proxy = await proxied();
    const a = await node('node-a', { redis: `redis://127.0.0.1:${proxy.port}` });
    const b = await node('node-b');
    proxy.cut();
    const answer = await a.cluster.resetAll();
    expect(answer).to.deep.include({ broadcast: 'deferred', missing: [] });
    expect(answer.generation).to.equal(undefined);
    expect(answer.nodes).to.have.length(1);
    expect(answer.nodes[0]).to.deep.include({ nodeId: 'node-a', applied: true });
    expect(a.resets.length).to.equal(1);
    // Meanwhile node-a shares nothing: the shared results may predate its reset.
    expect(a.cluster.generation).to.equal(undefined);
    expect((await a.cluster.status()).redis.healthy).to.equal(false);
    proxy.restore();
    await until(() => b.resets.length === 1, 5000, 'node-b told once Redis is back');
    expect(a.resets.length).to.equal(1);
    await until(() => a.cluster.generation === 1, 2000, 'node-a shares again');
    expect(b.cluster.generation).to.equal(1);
  });

  it('checks its options at creation', async () => {
    const onReset = async (): Promise<void> => undefined;
    await createGatewayCluster({ redis: REDIS_URL, secret: CLUSTER_SECRET, nodeId: 'has space', onReset }).then(
      () => expect.fail('created'),
      (err: unknown) =>
        expect(err)
          .to.be.instanceOf(InvalidOptionError)
          .and.have.property('message')
          .match(/createGatewayCluster: options\.nodeId/),
    );
    await createGatewayCluster({ redis: REDIS_URL, secret: CLUSTER_SECRET, keyPrefix: 'bad*prefix', onReset }).then(
      () => expect.fail('created'),
      (err: unknown) =>
        expect(err)
          .to.be.instanceOf(InvalidOptionError)
          .and.have.property('message')
          .match(/options\.keyPrefix/),
    );
    await createGatewayCluster({ redis: 'http://user:secret@127.0.0.1:6379', secret: CLUSTER_SECRET, onReset }).then(
      () => expect.fail('created'),
      (err: unknown) => {
        expect(err).to.be.instanceOf(InvalidOptionError);
        expect((err as Error).message).not.to.include('secret');
      },
    );
    await createGatewayCluster({ redis: REDIS_URL, secret: CLUSTER_SECRET } as GatewayClusterOptions).then(
      () => expect.fail('created'),
      (err: unknown) =>
        expect(err)
          .to.be.instanceOf(InvalidOptionError)
          .and.have.property('message')
          .match(/options\.onReset/),
    );
    // Fail closed: no secret, or one too short to be one, and the message never repeats it.
    await createGatewayCluster({ redis: REDIS_URL, onReset } as GatewayClusterOptions).then(
      () => expect.fail('created'),
      (err: unknown) =>
        expect(err)
          .to.be.instanceOf(InvalidOptionError)
          .and.have.property('message')
          .match(/options\.secret must be a string of at least 32 characters/),
    );
    for (const secret of ['short-secret-value', [CLUSTER_SECRET, 'short-secret-value']]) {
      await createGatewayCluster({ redis: REDIS_URL, secret, onReset }).then(
        () => expect.fail('created'),
        (err: unknown) => {
          expect(err)
            .to.be.instanceOf(InvalidOptionError)
            .and.have.property('message')
            .match(/options\.secret(\[1\])? must be/);
          expect((err as Error).message).not.to.include('short-secret-value');
        },
      );
    }
  });
});
