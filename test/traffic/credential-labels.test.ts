/**
 * Credentials never become labels. A policy grouped by a credential header (a per-key limit,
 * `groupBy: ["header:x-api-key"]`) counts each key apart, but the group is shown and kept as a
 * keyed hash of the key (`header:x-api-key=hmac:<16 hex>`), never its value: in the records (their
 * `traffic` section, the 429's diagnostic), the monitoring console's list and export, and the
 * configuration console's usage answer. The key of that hash is this process's own, or derived from
 * the cluster secret, so that instances given one secret show one key by one label. Every header
 * the records redact counts as a credential (their list, `DEFAULT_REDACTED_HEADERS`).
 *
 * Over real HTTP: the example gateway in-process with its operators, gateways sharing a cluster
 * secret or not, and two `serve` processes on the machine's Redis (a key prefix of this test's own).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createClient } from 'redis';
import { doggie } from '../../examples/petstore/backend.js';
import { createGateway, DEFAULT_REDACTED_HEADERS, serveGateway, type GatewayConfig, type TransactionRecord } from '../../src/index.js';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { compileGroupKey, groupLabelKey } from '../../src/traffic/group-key.js';
import { trafficControl } from '../../src/traffic/middleware.js';
import type { TrafficFacts } from '../../src/traffic/types.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from '../configuration/helpers.js';
import { echoBackend } from '../gateway/helpers.js';
import { freePort, serve, stop, type Served } from '../server/support.js';

const LABEL = /^hmac:[0-9a-f]{16}$/;
const PER_KEY = { name: 'per-key', metric: 'requests', limit: 2, windowSeconds: 600, groupBy: ['header:X-Api-Key'] } as const;

/** A key no test shares, long enough that no text holds it by chance. */
const apiKey = (name: string): string => `${name}-${randomBytes(18).toString('base64url')}`;

function facts(headers: Record<string, string>, clientId?: string): TrafficFacts {
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { api: 'Ente/Open/v1', clientId, header: (name) => lower.get(name) };
}

/** The value part of a one-fact label (`header:x-api-key=<value>`). */
const valueOf = (label: string): string => label.slice(label.indexOf('=') + 1);

describe('traffic control: credentials never become group labels', function () {
  this.timeout(120_000);

  it('labels a group of every header the records redact by a keyed hash, counting each key apart', () => {
    const [one, two] = [apiKey('one'), apiKey('two')];
    expect(DEFAULT_REDACTED_HEADERS).to.include.members(['authorization', 'proxy-authorization', 'cookie', 'dpop', 'x-api-key']);
    for (const name of DEFAULT_REDACTED_HEADERS) {
      const group = compileGroupKey([`header:${name}`], '');
      const a = group(facts({ [name]: one }));
      const again = compileGroupKey([`header:${name}`], '')(facts({ [name]: one }));
      const b = group(facts({ [name]: two }));
      expect(a.label, name).to.match(new RegExp(`^header:${name}=hmac:[0-9a-f]{16}$`));
      expect(a.label, name).to.not.include(one);
      expect(again, `${name}: the same key, the same group`).to.deep.equal(a);
      expect(b.label, name).to.not.equal(a.label);
      expect(b.hash, `${name}: another key, another count`).to.not.equal(a.hash);
      // No key sent: nothing to hide.
      expect(group(facts({})).label, name).to.equal(`header:${name}=-`);
    }
    // The name as written, any case; with other facts; a header that is no credential keeps its value.
    const policies = compileTrafficPolicies([
      { ...PER_KEY, groupBy: ['clientId', 'header:X-Api-Key', 'header:x-tenant'] },
      { ...PER_KEY, name: 'per-tenant', groupBy: ['header:x-tenant'] },
    ]);
    const [mixed, tenant] = policies.all.map((policy) => policy.group(facts({ 'x-api-key': one, 'x-tenant': 'acme' }, 'client1')));
    expect(mixed!.label).to.match(/^clientId=client1, header:X-Api-Key=hmac:[0-9a-f]{16}, header:x-tenant=acme$/);
    expect(tenant!.label).to.equal('header:x-tenant=acme');
  });

  it('the trafficControl middleware labels under the clusterSecret it is given: two instances sharing it agree', async () => {
    const key = apiKey('shared');
    const secret = randomBytes(32).toString('base64');
    const section = { policies: [{ ...PER_KEY, groupBy: [...PER_KEY.groupBy] }] };
    const middlewares = [
      trafficControl({ ...section, clusterSecret: secret }),
      trafficControl({ ...section, clusterSecret: [secret, 'older'] }),
      trafficControl(section),
    ];
    try {
      const labels = await Promise.all(
        middlewares.map(async (middleware) => (await middleware.limiter).policies.all[0]!.group(facts({ 'x-api-key': key })).label),
      );
      expect(labels[0]).to.equal(`header:X-Api-Key=${groupLabelKey(secret).label(key)}`);
      expect(labels[1], 'a rotation list: the first secret').to.equal(labels[0]);
      expect(labels[2], "without one, this process's own key").to.not.equal(labels[0]);
      expect(() => trafficControl({ ...section, clusterSecret: 42 as never })).to.throw(/clusterSecret/);
    } finally {
      await Promise.all(middlewares.map((middleware) => middleware.close()));
    }
  });

  describe('the example gateway: records, 429, console list and export, usage', () => {
    let pet: PetstoreGateway;
    let vera: OperatorClient;
    const [keyA, keyB] = [apiKey('alice'), apiKey('bob')];

    before(async () => {
      pet = await startPetstore({ trafficControl: { policies: [{ ...PER_KEY, groupBy: [...PER_KEY.groupBy] }] } });
      vera = new OperatorClient(pet.server.adminUrl!);
      expect((await vera.signIn('vera', PASSWORDS.vera)).status).to.equal(200);
    });
    after(() => pet?.stop());

    const put = async (key: string): Promise<{ status: number; text: string }> => {
      const token = await pet.as.issueToken('client1', 'client1-secret');
      const res = await fetch(`${pet.api}/pet`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(doggie),
      });
      const head = [...res.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
      return { status: res.status, text: `${head}\n\n${await res.text()}` };
    };

    it('limits two API keys of one client apart, and no record, 429, list, export or usage answer holds either key', async () => {
      const alice = [await put(keyA), await put(keyA), await put(keyA)];
      const bob = [await put(keyB), await put(keyB)];
      expect(alice.map((a) => a.status)).to.deep.equal([200, 200, 429]);
      expect(
        bob.map((a) => a.status),
        'the other key has its own count',
      ).to.deep.equal([200, 200]);
      expect(alice[2]!.text).to.not.include(keyA);

      const list = await vera.fetch('/gateway/console/api/transactions?limit=500');
      expect(list.status).to.equal(200);
      const listText = await list.text();
      const records = (JSON.parse(listText) as { items: TransactionRecord[] }).items.filter((r) => r.traffic !== undefined);
      expect(records).to.have.length(5);
      const groups = records.map((r) => r.traffic!.policies[0]!.group);
      const labels = [...new Set(groups)];
      expect(labels, groups.join(' ')).to.have.length(2);
      for (const label of labels) expect(label).to.match(/^header:X-Api-Key=hmac:[0-9a-f]{16}$/);
      const limited = records.find((r) => r.status === 429)!;
      const labelA = limited.traffic!.group!;
      expect(groups.filter((g) => g === labelA)).to.have.length(3);
      expect(limited.diagnostics.map((d) => d.message).join('\n')).to.include(`policy per-key, group ${labelA}`);

      const csv = await (await vera.fetch('/gateway/console/api/export?format=csv')).text();
      const jsonl = await (await vera.fetch('/gateway/console/api/export?format=jsonl')).text();
      expect(jsonl).to.include(labelA);
      const usage = await vera.fetch('/gateway/configuration/api/traffic/usage');
      expect(usage.status).to.equal(200);
      const usageText = await usage.text();
      const [policy] = (JSON.parse(usageText) as { policies: Array<{ groups: Array<{ group: string; used: number }> }> }).policies;
      expect(policy!.groups.map((g) => [g.group, g.used])).to.have.deep.members(labels.map((label) => [label, 2]));

      const everything = [listText, csv, jsonl, usageText, JSON.stringify((await pet.server.gateway.store.query({ limit: 500 })).items)];
      for (const text of everything) {
        expect(text).to.not.include(keyA);
        expect(text).to.not.include(keyB);
      }
    });
  });

  it('gives one key one label on every gateway of one cluster secret, another under another secret', async () => {
    const echo = await echoBackend();
    const open: GatewayConfig = {
      apis: [{ provider: 'Ente', name: 'Open', version: 1, backend: { url: echo.url } }],
      trafficControl: { policies: [{ ...PER_KEY, groupBy: [...PER_KEY.groupBy] }] },
    } as GatewayConfig;
    const key = apiKey('carol');
    const labelOn = async (clusterSecret: string | undefined): Promise<string> => {
      const gateway = createGateway({ config: structuredClone(open), ...(clusterSecret === undefined ? {} : { clusterSecret }) });
      await gateway.ready();
      const server = await serveGateway(gateway, { port: 0, adminPort: false });
      try {
        const res = await fetch(`${server.url}/gateway/Ente/Open/v1/x`, { headers: { 'x-api-key': key } });
        expect(res.status).to.equal(201);
        const id = res.headers.get('gateway-transaction-id');
        const record = (await gateway.store.query({ limit: 10 })).items.find((r) => r.id === id)!;
        expect(JSON.stringify(record)).to.not.include(key);
        return record.traffic!.policies[0]!.group;
      } finally {
        await server.stop();
      }
    };
    try {
      const secret = `cluster-secret-${randomBytes(16).toString('hex')}`;
      const [first, second, other] = [await labelOn(secret), await labelOn(secret), await labelOn(`${secret}-other`)];
      expect(valueOf(first)).to.match(LABEL);
      expect(second, 'one secret, one label').to.equal(first);
      expect(other, 'another secret, another label').to.not.equal(first);
      // Without a secret: this process's own key, one label within the process.
      const [own, ownAgain] = [await labelOn(undefined), await labelOn(undefined)];
      expect(valueOf(own)).to.match(LABEL);
      expect(ownAgain).to.equal(own);
      expect(own).to.not.equal(first);
    } finally {
      await echo.stop();
    }
  });

  describe('two `serve` instances on one Redis and one cluster secret', () => {
    const suffix = randomBytes(4).toString('hex');
    const keyPrefix = `eagtest-credlabels-${suffix}:`;
    const password = 'credential-labels-admin';
    const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`, 'x-gateway-console': '1' };
    const instances: Array<{ api: string; admin: string; served: Served }> = [];
    let echo: Awaited<ReturnType<typeof echoBackend>>;
    let dir: string;

    before(async () => {
      echo = await echoBackend();
      dir = await mkdtemp(path.join(tmpdir(), 'gateway-credlabels-'));
      const file = path.join(dir, 'gateway.config.json');
      await writeFile(
        file,
        JSON.stringify({
          apis: [{ provider: 'Ente', name: 'Open', version: 1, backend: { url: echo.url }, recording: { incomingHeaders: true } }],
          trafficControl: { store: 'redis', policies: [PER_KEY] },
        }),
      );
      const start = async (id: string): Promise<{ api: string; admin: string; served: Served }> => {
        const [port, adminPort] = [await freePort(), await freePort()];
        const served = serve(['serve', '--config', file, '--port', String(port), '--admin-port', String(adminPort)], {
          ADMIN_PASSWORD: password,
          GATEWAY_NODE_ID: id,
          REDIS_URL: 'redis://127.0.0.1:6379',
          REDIS_KEY_PREFIX: keyPrefix,
          GATEWAY_CLUSTER_SECRET: `credential-labels-secret-${suffix}-0123456789`,
          REDIS_COMMAND_TIMEOUT_MS: '2000',
        });
        await served.waitFor(/serving APIs at/);
        return { api: `http://127.0.0.1:${port}/gateway/Ente/Open/v1`, admin: `http://127.0.0.1:${adminPort}/gateway`, served };
      };
      instances.push(...(await Promise.all(['one', 'two'].map(start))));
    });

    after(async () => {
      await Promise.all(instances.map((instance) => stop(instance.served)));
      const redis = createClient({ url: 'redis://127.0.0.1:6379' });
      await redis.connect();
      for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
      await redis.close();
      await echo?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('counts each key across the instances, and both show it by the same label, never by its value', async () => {
      const [keyA, keyB] = [apiKey('dave'), apiKey('erin')];
      const call = async (instance: number, key: string): Promise<{ status: number; text: string }> => {
        const res = await fetch(`${instances[instance]!.api}/things/1`, { headers: { 'x-api-key': key } });
        return { status: res.status, text: `${[...res.headers].join('\n')}\n${await res.text()}` };
      };
      const answers = [await call(0, keyA), await call(0, keyA), await call(1, keyA), await call(1, keyB)];
      expect(answers.map((a) => a.status)).to.deep.equal([201, 201, 429, 201]);

      // The gateway's own answer (the echo backend's 201s repeat what they received).
      const texts: string[] = [answers[2]!.text];
      const labelsOf: string[][] = [];
      for (const { admin } of instances) {
        const list = await fetch(`${admin}/console/api/transactions?limit=500`, { headers: adminHeaders });
        expect(list.status).to.equal(200);
        const listText = await list.text();
        const export_ = await (await fetch(`${admin}/console/api/export?format=jsonl`, { headers: adminHeaders })).text();
        const usage = await fetch(`${admin}/configuration/api/traffic/usage`, { headers: adminHeaders });
        expect(usage.status).to.equal(200);
        texts.push(listText, export_, await usage.text());
        const items = (JSON.parse(listText) as { items: TransactionRecord[] }).items.filter((r) => r.traffic !== undefined);
        labelsOf.push(items.map((r) => r.traffic!.policies[0]!.group));
      }
      const [onOne, onTwo] = labelsOf as [string[], string[]];
      expect(onOne).to.have.length(2);
      expect(new Set(onOne).size).to.equal(1);
      expect(valueOf(onOne[0]!)).to.match(LABEL);
      // Instance two saw the key of A (refused) and B: A's label there is instance one's.
      expect(onTwo).to.have.length(2);
      expect(onTwo).to.include(onOne[0]);
      for (const text of [...texts, ...instances.map((instance) => instance.served.output())]) {
        expect(text).to.not.include(keyA);
        expect(text).to.not.include(keyB);
      }
    });
  });
});
