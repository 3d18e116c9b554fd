/**
 * Gateway benchmark (standalone: `npx tsx bench/gateway.ts`, after `npm run build`).
 *
 * Measures with autocannon, on loopback, requests/second of:
 *  (a) the same Express handler bare, behind the full middleware chain (recordTransaction,
 *      requireToken, introspect with its cache warm, xacmlAuthorize with the scenario policy,
 *      forwardTokenHeaders), and behind express-oauth2-jwt-bearer (local JWT validation: the peer);
 *  (b) a bare relay to the petstore backend (createRelay, undici) and the full gateway
 *      (createGateway from the example's configuration) relaying to the same backend.
 * Prints the ratios against the targets: chain ≥ 0.85 of bare, gateway ≥ 0.8 of the bare relay.
 *
 * Fairness: each server under test runs alone in its own child process (one event loop, one core),
 * the load generator in this process on the other core; the backend of (b) is a third process used
 * identically by both relays. Each case gets a warm-up (token cache, JIT, keep-alive connections)
 * and the same connections and duration (BENCH_DURATION seconds, default 6).
 *
 * Besides requests/second, each row shows how busy the server's event loop was during the
 * measurement (`busy%`, `performance.eventLoopUtilization()` in the server: 100 = saturated), its
 * CPU use (`cpu%`, `process.cpuUsage()`, all threads including GC helpers: 100 = one core) and its
 * CPU time per request (`µs/req`). A server whose event loop was well below 100% busy was not the
 * bottleneck (the load generator, or other processes on the machine, were), so its req/s
 * understates what it can do; the CPU-time ratio (`cpu ratio`: the baseline's µs/req over the
 * case's) compares the work each server does per request independently of that, and is printed
 * next to the req/s ratio.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EventLoopUtilization } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { startDemoAuthServer } from '../examples/petstore/auth-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const exampleDir = path.join(here, '..', 'examples', 'petstore');
const DURATION = Number(process.env.BENCH_DURATION ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU during the measurement (all its threads, GC helpers included), percent of one core. */
  cpuPercent: number;
  /** Share of the measurement the server's event loop was busy, percent (100: saturated). */
  busyPercent: number;
  /** Server CPU time per request, microseconds. */
  cpuPerRequest: number;
}

interface ServerUsage {
  /** CPU time so far (user + system, µs). */
  cpu: number;
  /** Event-loop utilization so far (`performance.eventLoopUtilization()`). */
  eventLoop: EventLoopUtilization;
}

/** The server's CPU time and event-loop utilization so far, asked over IPC. */
function serverUsage(child: ChildProcess): Promise<ServerUsage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown): void => {
      const { cpuUsage, eventLoop } = message as { cpuUsage?: NodeJS.CpuUsage; eventLoop?: EventLoopUtilization };
      if (cpuUsage === undefined || eventLoop === undefined) return;
      child.off('message', onMessage);
      resolve({ cpu: cpuUsage.user + cpuUsage.system, eventLoop });
    };
    child.on('message', onMessage);
    if (!child.send('cpu-usage')) reject(new Error('cannot ask the server for its CPU time'));
  });
}

function startServer(kind: string, options: Record<string, unknown> = {}): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, 'servers.ts'), [kind, JSON.stringify(options)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (message) => resolve({ child, port: (message as { port: number }).port }));
    child.once('exit', (code) => reject(new Error(`server ${kind} exited with code ${String(code)}`)));
  });
}

function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function load(url: string, headers: Record<string, string>, duration: number): Promise<autocannon.Result> {
  return autocannon({ url, headers, connections: CONNECTIONS, pipelining: 1, duration });
}

async function measure(name: string, kind: string, options: Record<string, unknown>, urlPath: string, headers: Record<string, string> = {}): Promise<Result> {
  const { child, port } = await startServer(kind, options);
  try {
    const url = `http://127.0.0.1:${port}${urlPath}`;
    const probe = await fetch(url, { headers });
    if (probe.status !== 200) throw new Error(`${name}: ${url} answered ${probe.status} ${await probe.text()}`);
    await load(url, headers, 1); // warm-up
    const before = await serverUsage(child);
    const started = performance.now();
    const result = await load(url, headers, DURATION);
    const elapsedMs = performance.now() - started;
    const after = await serverUsage(child);
    const cpu = after.cpu - before.cpu;
    const busy = performance.eventLoopUtilization(after.eventLoop, before.eventLoop).utilization;
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
    return {
      name,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      cpuPercent: cpu / 10 / elapsedMs,
      busyPercent: busy * 100,
      cpuPerRequest: cpu / Math.max(1, result.requests.total),
    };
  } finally {
    await stopServer(child);
  }
}

const HEADINGS = `${'req/s'.padStart(8)} ${'p50ms'.padStart(6)} ${'p99ms'.padStart(6)} ${'busy%'.padStart(5)} ${'cpu%'.padStart(5)} ${'µs/req'.padStart(7)} ${'ratio'.padStart(6)} ${'cpu ratio'.padStart(9)}`;

function row(result: Result, baseline: Result): string {
  const ratio = (result.rps / baseline.rps).toFixed(2);
  const cpuRatio = (baseline.cpuPerRequest / result.cpuPerRequest).toFixed(2);
  return `  ${result.name.padEnd(58)} ${Math.round(result.rps).toString().padStart(8)} ${result.p50.toString().padStart(6)} ${result.p99.toString().padStart(6)} ${Math.round(result.busyPercent).toString().padStart(5)} ${Math.round(result.cpuPercent).toString().padStart(5)} ${Math.round(result.cpuPerRequest).toString().padStart(7)} ${ratio.padStart(6)} ${cpuRatio.padStart(9)}`;
}

async function main(): Promise<void> {
  const as = await startDemoAuthServer({ port: 0 });
  const dir = await mkdtemp(path.join(tmpdir(), 'gateway-bench-'));
  const children: ChildProcess[] = [];
  try {
    const opaque = await as.issueToken('client1', 'client1-secret');
    const jwt = await as.issueToken('client1', 'client1-secret', { format: 'jwt' });
    const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });
    const policyFile = path.join(exampleDir, 'policies', 'petstore.xml');

    console.log(`Gateway benchmark: autocannon, ${CONNECTIONS} connections, pipelining 1, ${DURATION} s per case after a 1 s warm-up, loopback.`);
    console.log('Each server under test runs alone in a child process (started fresh per case); the load generator runs in this one.');
    console.log(`Node ${process.version}, ${availableParallelism()} CPU(s), load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at start.`);
    console.log('busy% = server event loop busy during the run (100 = saturated); cpu% = server CPU, all threads (100 = one core);');
    console.log('µs/req = server CPU per request; cpu ratio = baseline µs/req / case µs/req (the work per request, whatever set the pace).');
    console.log(`\n  ${'(a) the same handler, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
    const bare = await measure('bare Express handler', 'bare', {}, '/pet/10');
    console.log(row(bare, bare));
    const chain = await measure('full chain (record, token, introspect, XACML, forward)', 'chain', { issuer: as.issuer, policyFile }, '/pet/10', bearer(opaque));
    console.log(row(chain, bare));
    const peer = await measure('peer: express-oauth2-jwt-bearer (local JWT)', 'peer', { issuer: as.issuer, audience: as.audience }, '/pet/10', bearer(jwt));
    console.log(row(peer, bare));

    const backend = await startServer('backend');
    children.push(backend.child);
    const target = `http://127.0.0.1:${backend.port}`;
    const config = JSON.parse(await readFile(path.join(exampleDir, 'gateway.config.json'), 'utf8')) as {
      tokenPolicies: Record<string, { issuer: string }>;
      apis: Array<{ backend: { url: string }; authorization: { policy?: string } }>;
    };
    for (const policy of Object.values(config.tokenPolicies)) policy.issuer = as.issuer;
    for (const api of config.apis) {
      api.backend.url = target;
      if (api.authorization.policy !== undefined) api.authorization.policy = path.join(exampleDir, api.authorization.policy);
    }
    const configFile = path.join(dir, 'gateway.config.json');
    await writeFile(configFile, JSON.stringify(config));

    console.log(`\n  ${'(b) relaying GET /pet/10 to the petstore backend'.padEnd(58)} ${HEADINGS}`);
    const relay = await measure('bare relay (createRelay, undici keep-alive)', 'relay', { target }, '/gateway/Ente/PetStore/v1/pet/10');
    console.log(row(relay, relay));
    const gateway = await measure('full gateway (createGateway, example configuration)', 'gateway', { configFile }, '/gateway/Ente/PetStore/v1/pet/10', bearer(opaque));
    console.log(row(gateway, relay));

    const chainRatio = chain.rps / bare.rps;
    const gatewayRatio = gateway.rps / relay.rps;
    const cpuRatio = (a: Result, b: Result): string => (a.cpuPerRequest / b.cpuPerRequest).toFixed(2);
    console.log('');
    console.log(`  full chain / bare handler   ${chainRatio.toFixed(2)}  (target ≥ 0.85) ${chainRatio >= 0.85 ? 'met' : 'NOT MET'}; CPU per request ratio ${cpuRatio(bare, chain)}`);
    console.log(`  JWT-only peer / bare        ${(peer.rps / bare.rps).toFixed(2)}  (for reference); CPU per request ratio ${cpuRatio(bare, peer)}`);
    console.log(`  full gateway / bare relay   ${gatewayRatio.toFixed(2)}  (target ≥ 0.80) ${gatewayRatio >= 0.8 ? 'met' : 'NOT MET'}; CPU per request ratio ${cpuRatio(relay, gateway)}`);
    const unsaturated = [bare, chain, peer, relay, gateway].filter((r) => r.busyPercent < 90).map((r) => `${r.name} (${Math.round(r.busyPercent)}%)`);
    if (unsaturated.length > 0) {
      console.log(`  Not saturated (event loop busy below 90%, so the load generator or the machine set the pace): ${unsaturated.join('; ')}.`);
    }
  } finally {
    for (const child of children) await stopServer(child);
    await as.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
