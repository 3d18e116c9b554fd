/**
 * The bound on traffic groups (docs/traffic-control.md, "How many groups an instance keeps"): a
 * client that chooses a new `groupBy` value per request (`header:<name>`) makes a new group each
 * time. It gets its share of the instance's groups, then 429 for new groups only; its groups made
 * and every other client's go on. The instance keeps at most `max` groups and `maxMegabytes`.
 *
 * The ledger alone, then the attack over real `serve` (one address per client: 127.0.0.1, .2, .3).
 */
import { Agent, request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { compileTrafficPolicies } from '../../src/traffic/compile.js';
import { GROUP_BUDGET_DEFAULTS, GroupBudget, groupBytes } from '../../src/traffic/group-budget.js';
import type { StoreCheck } from '../../src/traffic/store.js';
import { echoBackend } from '../gateway/helpers.js';
import { serve, stop, type Served } from '../server/support.js';
import { facts } from './helpers.js';

const PER_TENANT = { name: 'per-tenant', metric: 'requests', limit: 5, windowSeconds: 60, groupBy: ['header:x-tenant'] } as const;

describe('traffic control: the bound on groups', function () {
  this.timeout(120_000);

  describe('the ledger', () => {
    const [policy] = compileTrafficPolicies([{ ...PER_TENANT, groupBy: [...PER_TENANT.groupBy] }]).all;
    const check = (tenant: string): StoreCheck[] => {
      const request = facts({}, { 'x-tenant': tenant });
      const { label, hash } = policy!.group(request);
      return [{ policy: policy!, hash, group: label, limit: policy!.limit }];
    };
    const from = (address: string) => facts({ clientAddress: address });

    it('gives one client its share of new groups, then refuses only its new ones', () => {
      const budget = new GroupBudget({ max: 1000, maxBytes: 1 << 30, perClient: 10 }, 15_000);
      for (let i = 0; i < 10; i++) expect(budget.admit(check(`a${i}`), from('10.0.0.1'), 0), `group ${i}`).to.equal(undefined);
      const refusal = budget.admit(check('a10'), from('10.0.0.1'), 0);
      expect(refusal?.bound).to.equal('client');
      expect(refusal?.diagnostic).to.include('perClient 10');
      // Its groups made are still counted; another client is not touched.
      expect(budget.admit(check('a3'), from('10.0.0.1'), 1)).to.equal(undefined);
      expect(budget.admit(check('b0'), from('10.0.0.2'), 1)).to.equal(undefined);
      expect(budget.size).to.equal(11);
      // A token's client and subject name the client, whatever its address.
      const token = (address: string) => facts({ clientId: 'app', subject: 'mallory', clientAddress: address });
      for (let i = 0; i < 10; i++) expect(budget.admit(check(`t${i}`), token(`10.1.0.${i}`), 2)).to.equal(undefined);
      expect(budget.admit(check('t10'), token('10.1.0.99'), 2)?.bound).to.equal('client');
    });

    it('refuses new groups past the instance count or bytes, and frees them as their window passes', () => {
      const budget = new GroupBudget({ max: 5, maxBytes: 1 << 30, perClient: 100 }, 15_000);
      for (let i = 0; i < 5; i++) expect(budget.admit(check(`${i}`), from(`10.0.0.${i}`), 0)).to.equal(undefined);
      expect(budget.admit(check('5'), from('10.0.0.9'), 0)?.bound).to.equal('instance');
      // 60 s later (the policy's window after each group's last request) they are forgotten.
      expect(budget.admit(check('5'), from('10.0.0.9'), 60_000)).to.equal(undefined);
      expect(budget.size).to.equal(1);

      const bytes = groupBytes(policy!);
      const small = new GroupBudget({ max: 1000, maxBytes: 3 * bytes, perClient: 100 }, 15_000);
      for (let i = 0; i < 3; i++) expect(small.admit(check(`${i}`), from('10.0.0.1'), 0)).to.equal(undefined);
      expect(small.admit(check('3'), from('10.0.0.2'), 0)?.diagnostic).to.include('maxMegabytes');
      expect(small.bytes).to.equal(3 * bytes);
    });

    it('counts a sliding window at its limit in the bytes of a group', () => {
      const [sliding, fixed] = compileTrafficPolicies([
        { name: 's', metric: 'requests', limit: 100_000, windowSeconds: 60, groupBy: ['clientId'] },
        { name: 'f', metric: 'requests', limit: 100_000, windowSeconds: 60, window: 'fixed', groupBy: ['clientId'] },
      ]).all;
      expect(groupBytes(sliding!) - groupBytes(fixed!)).to.equal(800_000);
    });
  });

  describe('over serve: one client making a group per request', () => {
    let dir: string;
    let backend: Awaited<ReturnType<typeof echoBackend>>;
    let served: Served;
    let port: number;
    const agents = new Map<string, Agent>();

    before(async () => {
      backend = await echoBackend();
      dir = await mkdtemp(path.join(tmpdir(), 'gateway-group-budget-'));
      const config = path.join(dir, 'gateway.json');
      await writeFile(
        config,
        JSON.stringify({
          apis: [{ provider: 'Ente', name: 'Tenants', version: 1, backend: { url: backend.url } }],
          // The default share (1000 per client); an instance bound of 1500 groups.
          trafficControl: { groups: { max: 1500 }, policies: [PER_TENANT] },
        }),
      );
      served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0']);
      port = Number((await served.waitFor(/serving APIs at http:\/\/[^:]+:(\d+)/))[1]);
    });
    after(async () => {
      for (const agent of agents.values()) agent.destroy();
      await stop(served);
      await backend?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    /** One request from `address` in group `tenant`: its status and `Retry-After`. */
    const get = (address: string, tenant: string): Promise<{ status: number; retryAfter: string | undefined }> => {
      let agent = agents.get(address);
      if (agent === undefined) agents.set(address, (agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: address })));
      return new Promise((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/gateway/Ente/Tenants/v1/things', agent, headers: { 'x-tenant': tenant } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    };

    /** `count` requests from `address`, each in a tenant of its own, 8 at a time: their statuses. */
    async function flood(address: string, prefix: string, count: number): Promise<number[]> {
      const statuses: number[] = new Array<number>(count);
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let i = next++; i < count; i = next++) statuses[i] = (await get(address, `${prefix}-${i}`)).status;
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      return statuses;
    }

    it('gives that client its share (1000 groups), then 429 for its new groups only; its groups made and other clients go on', async () => {
      const first = await flood('127.0.0.1', 'mallory', GROUP_BUDGET_DEFAULTS.perClient);
      expect(
        first.filter((s) => s !== 201),
        'within its share',
      ).to.deep.equal([]);
      const past = await get('127.0.0.1', 'mallory-new');
      console.log(`      127.0.0.1: ${first.length} groups made, the next one ${past.status} (Retry-After ${past.retryAfter})`);
      expect(past.status).to.equal(429);
      expect(past.retryAfter).to.equal('60');
      // Before: a million such requests held a million groups (about 430 MB) for the window.
      expect((await get('127.0.0.1', 'mallory-7')).status, 'a group it made is still counted').to.equal(201);
      expect((await get('127.0.0.2', 'alice')).status, 'another client makes a new group').to.equal(201);
    });

    it('keeps at most groups.max groups: past it, new groups of any client get 429, known ones go on', async () => {
      const second = await flood('127.0.0.2', 'bob', 499);
      expect(second.filter((s) => s !== 201)).to.deep.equal([]);
      // 1000 + 1 + 499 = 1500: the instance's bound.
      const third = await get('127.0.0.3', 'carol');
      console.log(`      groups held 1500 (groups.max): a third client's new group ${third.status}`);
      expect(third.status).to.equal(429);
      expect((await get('127.0.0.3', 'alice')).status, 'a group another client made is known: counted, not refused').to.equal(201);
      expect(served.output()).to.not.match(/error/i);
    });
  });
});
