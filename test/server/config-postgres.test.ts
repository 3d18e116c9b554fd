/**
 * `serve --config-source postgres`: two gateway instances (separate `serve` processes on loopback)
 * on one configuration in PostgreSQL, Redis between them. A policy saved through the first one's
 * configuration console is "saved, not yet in force" on both, and served by both after one
 * ResetAllCaches.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { withClient3 } from '../configuration/helpers.js';
import { echoBackend, editJson, exampleCopy } from '../gateway/helpers.js';
import { dropSharedState, freePort, serve, stop, type Served } from './support.js';

const PASSWORD = 'config-postgres-admin';
const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'x-gateway-console': '1' };
const CONFIG_API = '/gateway/configuration/api';
const DATABASE = 'postgres://postgres@127.0.0.1:5432/test';
/** What the echo backend answers: a request that got through. */
const RELAYED = 201;

interface Instance {
  readonly id: string;
  readonly api: string;
  readonly admin: string;
  served: Served;
}

interface NodeState {
  nodeId: string;
  state: string;
  version?: number;
}

describe('serve --config-source postgres: one configuration for every instance', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const schema = `gw_config_${suffix}`;
  const keyPrefix = `eagtest-config-${suffix}:`;
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  const instances: Instance[] = [];

  async function start(id: string): Promise<Instance> {
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve(
      ['serve', '--config-source', 'postgres', '--config', copy.configFile, '--port', String(port), '--admin-port', String(adminPort)],
      {
        ADMIN_PASSWORD: PASSWORD,
        GATEWAY_NODE_ID: id,
        REDIS_URL: 'redis://127.0.0.1:6379',
        GATEWAY_CLUSTER_SECRET: 'config-postgres-test-cluster-secret-0123456789',
        REDIS_KEY_PREFIX: keyPrefix,
        DATABASE_URL: DATABASE,
        DATABASE_SCHEMA: schema,
      },
    );
    await served.waitFor(/serving APIs at/);
    return { id, api: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, served };
  }

  const putPetAs = async (instance: Instance, client: string): Promise<number> => {
    const token = await as.issueToken(client, `${client}-secret`);
    const res = await fetch(`${instance.api}/gateway/Ente/PetStore/v1/pet`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"id":10,"name":"doggie"}',
    });
    await res.arrayBuffer();
    return res.status;
  };
  const adminFetch = (instance: Instance, path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> =>
    fetch(`${instance.admin}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...adminHeaders, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  /** The node states `instance` shows, once the other node's heartbeat (every second) tells what it runs. */
  const nodes = async (instance: Instance, expected: NodeState[]): Promise<NodeState[]> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const body = (await (await adminFetch(instance, `${CONFIG_API}/state`)).json()) as { nodes: NodeState[] };
      const seen = body.nodes
        .map(({ nodeId, state, version }) => ({ nodeId, state, ...(version === undefined ? {} : { version }) }))
        .sort((x, y) => x.nodeId.localeCompare(y.nodeId));
      if (JSON.stringify(seen) === JSON.stringify(expected) || Date.now() > deadline) return seen;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
    // Both at once, both given the file: it is imported once.
    instances.push(...(await Promise.all(['A', 'B'].map(start))));
  });

  after(async () => {
    await Promise.all(instances.map((instance) => stop(instance.served)));
    await dropSharedState(schema, keyPrefix);
    await Promise.all([as?.stop(), echo?.stop(), copy?.remove()]);
  });

  it('says where the configuration comes from, and the file was imported once', async () => {
    for (const instance of instances)
      expect(instance.served.output()).to.include(`configuration from PostgreSQL ${schema}.gateway_configuration`);
    const versions = (await (await adminFetch(instances[1]!, `${CONFIG_API}/versions`)).json()) as {
      items: Array<{ version: number; author: string; comment: string }>;
    };
    expect(versions.items).to.have.length(1);
    expect(versions.items[0]).to.include({ version: 1, author: '(imported)', comment: 'imported from gateway.config.json' });
  });

  it("a policy saved through A's console: not yet in force on A and B, then served by both after one ResetAllCaches", async () => {
    const [a, b] = [instances[0]!, instances[1]!];
    expect(await putPetAs(a, 'client3')).to.equal(403);
    expect(await putPetAs(b, 'client3')).to.equal(403);

    const policy = (await (await adminFetch(a, `${CONFIG_API}/apis/Ente/PetStore/1/policy`)).json()) as { text: string };
    const saved = await adminFetch(a, `${CONFIG_API}/apis/Ente/PetStore/1/policy`, {
      method: 'PUT',
      body: { text: withClient3(policy.text), comment: 'client3 may update pets' },
    });
    expect(saved.status).to.equal(200);
    expect(((await saved.json()) as { version: { version: number } }).version.version).to.equal(2);

    // B reads the same saved configuration; neither node runs it yet.
    const onB = (await (await adminFetch(b, `${CONFIG_API}/config`)).json()) as {
      version: { version: number; author: string };
      policies: Record<string, string>;
    };
    expect(onB.version).to.include({ version: 2, author: 'admin' });
    expect(onB.policies['policies/petstore.xml']).to.include('client3');
    const notYet = [
      { nodeId: 'A', state: 'saved, not yet in force', version: 1 },
      { nodeId: 'B', state: 'saved, not yet in force', version: 1 },
    ];
    expect(await nodes(a, notYet)).to.deep.equal(notYet);
    expect(await putPetAs(a, 'client3')).to.equal(403);
    expect(await putPetAs(b, 'client3')).to.equal(403);

    const reset = await adminFetch(a, '/gateway/admin/reset-caches', { method: 'POST' });
    expect(reset.status).to.equal(200);
    const answer = (await reset.json()) as { cluster: { nodes: Array<{ nodeId: string; applied: boolean }> } };
    expect(answer.cluster.nodes.map((n) => `${n.nodeId} ${n.applied}`).sort()).to.deep.equal(['A true', 'B true']);

    expect(await putPetAs(a, 'client3')).to.equal(RELAYED);
    expect(await putPetAs(b, 'client3')).to.equal(RELAYED);
    expect(await putPetAs(b, 'client1')).to.equal(RELAYED);
    const inForce = [
      { nodeId: 'A', state: 'in force', version: 2 },
      { nodeId: 'B', state: 'in force', version: 2 },
    ];
    expect(await nodes(b, inForce)).to.deep.equal(inForce);
  });

  it('refuses --config-source postgres without DATABASE_URL, and an unknown source, with exit 2', async () => {
    const without = serve(['serve', '--config-source', 'postgres', '--port', '0', '--admin-port', '0'], { DATABASE_URL: '' });
    expect(await without.exited()).to.equal(2);
    expect(without.output()).to.include('--config-source postgres needs DATABASE_URL');
    const unknown = serve(['serve', '--config', copy.configFile, '--config-source', 'etcd'], {});
    expect(await unknown.exited()).to.equal(2);
    expect(unknown.output()).to.include('--config-source must be file or postgres, got "etcd"');
  });
});
