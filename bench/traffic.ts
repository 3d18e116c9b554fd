/**
 * Traffic control benchmark (standalone: `npx tsx bench/traffic.ts`).
 *
 * - Decisions per second and CPU microseconds per decision, local store and Redis store (a
 *   `redis-server` of its own on a free port, BENCH_TRAFFIC_DECISIONS decisions, 64 in flight).
 * - Redis commands per decision (at most 1: the decisions of one event-loop turn share one):
 *   `INFO commandstats` (EVALSHA + EVAL calls) before and after, and
 *   the connection's own count; then every key the run left is checked for a TTL.
 * - Memory per group of the local store: heap used (after a full GC) by a million distinct groups
 *   of a sliding and of a fixed window, each holding one request, against LOCAL_BYTES_PER_GROUP_BOUND.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createClient } from 'redis';
import { connectRedis } from '../src/cluster/redis.js';
import { LOCAL_BYTES_PER_GROUP_BOUND } from '../src/traffic/local-store.js';
import { compileTrafficPolicies, createTrafficLimiter, type CompiledTrafficPolicies, type TrafficLimiter } from '../src/traffic/index.js';
import type { TrafficFacts } from '../src/traffic/types.js';

const DECISIONS = Number(process.env.BENCH_TRAFFIC_DECISIONS ?? 50_000);
const GROUPS = 1_000_000;
const IN_FLIGHT = 64;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function facts(clientId: string): TrafficFacts {
  return { api: 'Ente/PetStore/v1', operation: 'getPet', clientId, header: () => undefined };
}

const policies = compileTrafficPolicies([
  { name: 'per-client', metric: 'requests', limit: 1_000_000, windowSeconds: 60, groupBy: ['clientId'] },
  { name: 'per-api', metric: 'requests', limit: 1_000_000_000, windowSeconds: 1, window: 'fixed', groupBy: ['api'] },
]);

/** Runs `n` decisions, `inFlight` at a time; returns decisions/s and CPU µs per decision. */
async function run(
  limiter: TrafficLimiter,
  set: CompiledTrafficPolicies,
  n: number,
  inFlight: number,
): Promise<{ rate: number; cpuUs: number }> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < n) await limiter.decide(facts(`client${next++ % 1000}`), set);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { rate: n / seconds, cpuUs: (used.user + used.system) / n };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startRedis(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const probe = createClient({ url, socket: { reconnectStrategy: false } });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      probe.destroy();
      return { url, stop: () => child.kill('SIGKILL') };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

function scriptCalls(info: string): number {
  let calls = 0;
  for (const name of ['evalsha', 'eval']) calls += Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls;
}

async function redisBench(): Promise<void> {
  const server = await startRedis();
  const plain = createClient({ url: server.url });
  await plain.connect();
  const redis = await connectRedis(server.url, { commandTimeoutMs: 1000 });
  const limiter = createTrafficLimiter({ store: 'redis' }, { redis });
  try {
    await run(limiter, policies, 1000, IN_FLIGHT);
    const before = scriptCalls(await plain.info('commandstats'));
    const sent = redis.stats.commands;
    const { rate, cpuUs } = await run(limiter, policies, DECISIONS, IN_FLIGHT);
    const scripts = scriptCalls(await plain.info('commandstats')) - before;
    console.log(
      `redis store: ${Math.round(rate)} decisions/s, ${cpuUs.toFixed(1)} CPU µs per decision (this process), ${IN_FLIGHT} in flight`,
    );
    console.log(
      `redis commands per decision: ${(scripts / DECISIONS).toFixed(3)} (INFO commandstats: ${scripts} EVALSHA/EVAL for ${DECISIONS}); connection: ${((redis.stats.commands - sent) / DECISIONS).toFixed(3)}`,
    );
    let keys = 0;
    let withoutTtl = 0;
    let maxTtl = 0;
    for await (const batch of plain.scanIterator({ MATCH: 'eag:traffic:*', COUNT: 1000 })) {
      for (const key of Array.isArray(batch) ? batch : [batch]) {
        keys++;
        const ttl = await plain.pTTL(key);
        // -2: expired since the scan (a fixed window's key at its window's end).
        if (ttl === -1) withoutTtl++;
        maxTtl = Math.max(maxTtl, ttl);
      }
    }
    console.log(`redis keys: ${keys}, without a TTL: ${withoutTtl}, longest TTL ${maxTtl} ms${withoutTtl === 0 ? '' : '  <-- FAIL'}`);
    if (withoutTtl > 0) process.exitCode = 1;
  } finally {
    await limiter.close();
    await redis.close();
    plain.destroy();
    server.stop();
  }
}

async function memoryBench(window: 'sliding' | 'fixed'): Promise<void> {
  const set = compileTrafficPolicies([{ name: 'm', metric: 'requests', limit: 100, windowSeconds: 3600, window, groupBy: ['clientId'] }]);
  const limiter = createTrafficLimiter({}, { sweepMs: 0 });
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < GROUPS; i++) await limiter.decide(facts(`client-${i}`), set);
  gc();
  const perGroup = (process.memoryUsage().heapUsed - before) / GROUPS;
  const verdict = perGroup <= LOCAL_BYTES_PER_GROUP_BOUND ? 'within' : 'OVER  <-- FAIL';
  console.log(
    `local store, ${window}: ${Math.round(perGroup)} bytes per group (${GROUPS} groups), ${verdict} the bound of ${LOCAL_BYTES_PER_GROUP_BOUND}`,
  );
  if (perGroup > LOCAL_BYTES_PER_GROUP_BOUND) process.exitCode = 1;
  await limiter.close();
}

async function main(): Promise<void> {
  const local = createTrafficLimiter({}, {});
  await run(local, policies, 10_000, 1);
  const { rate, cpuUs } = await run(local, policies, DECISIONS * 4, 1);
  console.log(`local store: ${Math.round(rate)} decisions/s, ${cpuUs.toFixed(2)} CPU µs per decision (2 policies, 1000 groups)`);
  await local.close();
  await redisBench();
  await memoryBench('sliding');
  await memoryBench('fixed');
}

await main();
