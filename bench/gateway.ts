/**
 * Gateway benchmark (standalone: `npx tsx bench/gateway.ts`, after `npm run build`).
 *
 * Measures with autocannon, on loopback, requests/second of:
 *  (a) the same handler bare, behind the full middleware chain (recordTransaction, requireToken,
 *      introspect with its cache warm, xacmlAuthorize with the scenario policy, forwardTokenHeaders),
 *      behind express-oauth2-jwt-bearer (local JWT validation: the peer), and behind a hand-written
 *      minimum of the chain's work (bench/servers.ts `minimal`), in Express; and the handler bare
 *      and behind the same chain on plain node:http;
 *  (b) relays of GET /pet/10 to the petstore backend: fastify + @fastify/http-proxy (the baseline),
 *      a dozen lines of node:http + undici, createRelay in Express, the full gateway (createGateway
 *      from the example's configuration) mounted in Express and served by gateway.handler, and
 *      nginx proxy_pass when nginx is on the PATH;
 *  (c) gateway.handler with everything in memory (the baseline), with token results shared in Redis
 *      (BENCH_REDIS_URL, default redis://127.0.0.1:6379), and with records in PostgreSQL
 *      (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test), without and with the
 *      record journal; skipped when they do not answer;
 *  (d) gateway.handler with its Prometheus metrics on (the default) and off, no OpenTelemetry SDK;
 *  (e) gateway.handler with a traffic-control `requests` policy (sliding window, per client id, a
 *      limit never reached) against none: counts in the local store, and in Redis (against the same
 *      gateway on Redis without a policy); the local policy again with `headers: "none"` (the
 *      decision without the five rate-limit fields on every answer, for reference); a second server
 *      without a policy, measured like the others, prints what two identical servers differ by in
 *      the run;
 *  (f) gateway.handler with a DPoP token policy (`dpop: allowed`): a DPoP request (a bound token,
 *      cached, with a fresh ES256 proof each request, made by the load generator) against a Bearer
 *      request of an unbound token of the same client on the same gateway (a bound token is never
 *      accepted as Bearer), which carries an unchecked proof too so that both are paced alike;
 *      target: CPU per request ≤ 1.5x, with the proof checks' share printed.
 * BENCH_GROUPS (a comma list, default a,b,c,d,e,f) measures only some groups. BENCH_CPU_PROF=<dir> writes
 * a V8 CPU profile of each server under test into <dir> (summed by `bench/profile-summary.ts`).
 * BENCH_NODE_FLAGS (space-separated) are given to every server's Node (`--trace-gc`, say).
 * Prints the targets: gateway.handler ≥ 0.90 of fastify's relay, and its CPU per request within
 * 1.5x of the dozen-line node:http + undici relay (the 3x-of-Express target is retired);
 * the CPU the chain adds per request inside Express ≤ 2x what it adds on plain node:http; with Redis
 * behind the local cache, ≥ 0.95 of the CPU-per-request ratio of memory only; with records in
 * PostgreSQL, ≥ 0.90 of the gateway process's CPU-per-request ratio of records in memory (with
 * PostgreSQL's own CPU per record printed beside it), and with the record journal on ≤ 1.05 of the
 * CPU per request without it (the journal's bytes per record printed beside it); with metrics on, ≥ 0.97 of the req/s with
 * metrics off; a traffic policy on the local store ≥ 0.97 of the req/s without, on Redis ≥ 0.90 of
 * the req/s and ≤ 1.10 of the CPU per request without.
 *
 * Fairness: each server under test runs alone in its own child process (one event loop, one core),
 * the load generator in this process on the other core; the backend of (b) is a third process used
 * identically by both relays. Each server gets a warm-up (token cache, JIT, keep-alive
 * connections), then the cases of a group are measured in interleaved rounds (BENCH_ROUNDS,
 * default 9, of BENCH_DURATION seconds each, default 2; the order rotates every round), one server
 * loaded at a time. A case's ratio is the median of its per-round ratios to the baseline measured
 * in the same round: on a shared machine whose speed drifts by 10-20% over tens of seconds, cases
 * measured seconds apart compare fairly, where one long run per case does not.
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
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { createHash, createPrivateKey, createPublicKey, sign, verify, type JsonWebKey } from 'node:crypto';
import autocannon from 'autocannon';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import pg from 'pg';
import { startDemoAuthServer } from '../examples/petstore/auth-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const exampleDir = path.join(here, '..', 'examples', 'petstore');
// Many short rounds rather than a few long ones: per-round ratios on this kind of shared machine
// swing by ±15% (slow spells of a few seconds), and the median of 9 steadies where that of 5 did not.
const DURATION = Number(process.env.BENCH_DURATION ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
// BENCH_GROUPS=b,c measures only those groups (all by default), to iterate on one target.
const GROUPS = new Set((process.env.BENCH_GROUPS ?? 'a,b,c,d,e,f').split(',').map((g) => g.trim().toLowerCase()));

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
  /** Event-loop utilization so far (`performance.eventLoopUtilization()`); none for a server that is not Node. */
  eventLoop?: EventLoopUtilization;
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
    const profileDir = process.env.BENCH_CPU_PROF;
    const child = fork(path.join(here, 'servers.ts'), [kind, JSON.stringify(options)], {
      execArgv: [
        '--import',
        'tsx',
        ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
        ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
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

async function load(
  url: string,
  headers: Record<string, string>,
  duration: number,
  perRequest?: () => Record<string, string>,
): Promise<autocannon.Result> {
  // Headers that change with every request (a DPoP proof) are made as each request is built.
  const requests =
    perRequest === undefined
      ? undefined
      : [{ setupRequest: (request: { headers?: Record<string, string> }) => ({ ...request, headers: { ...headers, ...perRequest() } }) }];
  return autocannon({ url, headers, connections: CONNECTIONS, pipelining: 1, duration, ...(requests === undefined ? {} : { requests }) });
}

/** A server under test: started once, warmed up, then measured round after round. */
interface Case {
  name: string;
  /** The server's CPU time and event-loop use so far. */
  usage: () => Promise<ServerUsage>;
  child: ChildProcess;
  url: string;
  headers: Record<string, string>;
  rounds: Result[];
  /** Headers made anew for each request (a DPoP proof), merged over `headers`. */
  perRequest?: () => Record<string, string>;
}

async function startCase(
  name: string,
  kind: string,
  options: Record<string, unknown>,
  urlPath: string,
  headers: Record<string, string> = {},
): Promise<Case> {
  const { child, port } = await startServer(kind, options);
  return warmCase({ name, usage: () => serverUsage(child), child, url: `http://127.0.0.1:${port}${urlPath}`, headers, rounds: [] });
}

async function warmCase(c: Case): Promise<Case> {
  const probe = await fetch(c.url, { headers: { ...c.headers, ...c.perRequest?.() } });
  if (probe.status !== 200) throw new Error(`${c.name}: ${c.url} answered ${probe.status} ${await probe.text()}`);
  await load(c.url, c.headers, 1, c.perRequest); // warm-up
  return c;
}

/**
 * nginx `proxy_pass` with upstream keep-alive, for reference, when `nginx` is on the PATH (one
 * worker process, like the one event loop of the Node servers). Its CPU comes from /proc.
 */
async function startNginx(dir: string, target: string): Promise<Case | undefined> {
  const which = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  const binary = which.stdout.trim();
  if (which.status !== 0 || binary === '') return undefined;
  const port = await freePort();
  const prefix = path.join(dir, 'nginx');
  await mkdir(path.join(prefix, 'logs'), { recursive: true });
  await writeFile(
    path.join(prefix, 'nginx.conf'),
    `worker_processes 1; daemon off; master_process off; error_log ${prefix}/logs/error.log; pid ${prefix}/nginx.pid;
events { worker_connections 1024; }
http { access_log off;
  upstream backend { server ${new URL(target).host}; keepalive 64; }
  server { listen 127.0.0.1:${port};
    location /gateway/Ente/PetStore/v1/ { proxy_pass ${target}/; proxy_http_version 1.1; proxy_set_header Connection ""; } } }
`,
  );
  const child = spawn(binary, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')], { stdio: 'ignore' });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const usage = async (): Promise<ServerUsage> => {
    const fields = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks (100 per second on Linux): fields 14 and 15 of stat.
    return { cpu: (Number(fields[11]) + Number(fields[12])) * 10_000 };
  };
  return warmCase({
    name: 'reference: nginx proxy_pass, upstream keep-alive',
    usage,
    child,
    url: `http://127.0.0.1:${port}/gateway/Ente/PetStore/v1/pet/10`,
    headers: {},
    rounds: [],
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function measureRound(c: Case): Promise<void> {
  const before = await c.usage();
  const started = performance.now();
  const result = await load(c.url, c.headers, DURATION, c.perRequest);
  const elapsedMs = performance.now() - started;
  const after = await c.usage();
  const cpu = after.cpu - before.cpu;
  const busy =
    after.eventLoop === undefined || before.eventLoop === undefined
      ? Number.NaN
      : performance.eventLoopUtilization(after.eventLoop, before.eventLoop).utilization;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${c.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  c.rounds.push({
    name: c.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuPercent: cpu / 10 / elapsedMs,
    busyPercent: busy * 100,
    cpuPerRequest: cpu / Math.max(1, result.requests.total),
  });
}

/** Measures the cases in ROUNDS interleaved rounds, the order rotating each round. */
async function measureGroup(cases: Case[]): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) await measureRound(cases[(round + i) % cases.length]!);
  }
}

/**
 * Bytes the journal writes per record: the JSON line of a record (as the store writes it) of a
 * sample of the journaled case's records.
 */
async function journalBytesPerRecord(databaseUrl: string, schema: string): Promise<number | undefined> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ record: unknown }>(`SELECT record FROM ${schema}.gateway_transactions LIMIT 200`);
    if (rows.length === 0) return undefined;
    return rows.reduce((n, row) => n + Buffer.byteLength(JSON.stringify(row.record)) + 1, 0) / rows.length;
  } catch {
    return undefined;
  } finally {
    await pool.end();
  }
}

/**
 * CPU time (µs) of every PostgreSQL server process on this machine so far, read from /proc: what the
 * database spends on the records, beside the gateway's own CPU. `undefined` where /proc or the
 * processes cannot be read (another OS, a remote database).
 */
async function postgresCpu(): Promise<number | undefined> {
  const ticks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  let total = 0;
  let seen = 0;
  try {
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      const close = stat.lastIndexOf(')');
      if (close === -1 || !stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
      const fields = stat.slice(close + 2).split(' ');
      // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
      total += Number(fields[11]) + Number(fields[12]);
      seen++;
    }
  } catch {
    return undefined;
  }
  return seen === 0 ? undefined : (total / ticks) * 1e6;
}

/** Requests a case answered over its measured rounds. */
function requestsOf(c: Case): number {
  return c.rounds.reduce((sum, r) => sum + r.rps * DURATION, 0);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A case's figures: the median of its rounds. */
function summary(c: Case): Result {
  const of = (field: keyof Omit<Result, 'name'>): number => median(c.rounds.map((r) => r[field]));
  return {
    name: c.name,
    rps: of('rps'),
    p50: of('p50'),
    p99: of('p99'),
    cpuPercent: of('cpuPercent'),
    busyPercent: of('busyPercent'),
    cpuPerRequest: of('cpuPerRequest'),
  };
}

/** Median over rounds of the case's req/s and CPU-per-request ratios to the baseline of the same round. */
function ratios(c: Case, baseline: Case): { rps: number; cpu: number; perRound: number[] } {
  const perRound = c.rounds.map((r, i) => r.rps / baseline.rounds[i]!.rps);
  return { rps: median(perRound), cpu: median(c.rounds.map((r, i) => baseline.rounds[i]!.cpuPerRequest / r.cpuPerRequest)), perRound };
}

const HEADINGS = `${'req/s'.padStart(8)} ${'p50ms'.padStart(6)} ${'p99ms'.padStart(6)} ${'busy%'.padStart(5)} ${'cpu%'.padStart(5)} ${'µs/req'.padStart(7)} ${'ratio'.padStart(6)} ${'cpu ratio'.padStart(9)}`;

function row(c: Case, baseline: Case): string {
  const result = summary(c);
  const r = ratios(c, baseline);
  return `  ${result.name.padEnd(58)} ${Math.round(result.rps).toString().padStart(8)} ${result.p50.toString().padStart(6)} ${result.p99.toString().padStart(6)} ${(Number.isNaN(result.busyPercent) ? '-' : Math.round(result.busyPercent).toString()).padStart(5)} ${Math.round(result.cpuPercent).toString().padStart(5)} ${Math.round(result.cpuPerRequest).toString().padStart(7)} ${r.rps.toFixed(2).padStart(6)} ${r.cpu.toFixed(2).padStart(9)}`;
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

    console.log(
      `Gateway benchmark: autocannon, ${CONNECTIONS} connections, pipelining 1, loopback; ${ROUNDS} interleaved rounds of ${DURATION} s per case, after a 1 s warm-up.`,
    );
    console.log('Each server under test runs alone in a child process, loaded one at a time; the load generator runs in this one.');
    console.log(
      `Node ${process.version}, ${availableParallelism()} CPU(s), load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at start.`,
    );
    console.log('Figures are medians over the rounds; ratio = median of the per-round req/s ratios to the baseline (same round).');
    console.log('busy% = server event loop busy during the run (100 = saturated); cpu% = server CPU, all threads (100 = one core);');
    console.log(
      'µs/req = server CPU per request; cpu ratio = baseline µs/req / case µs/req (the work per request, whatever set the pace).',
    );

    const rounds = (r: { perRound: number[] }): string => r.perRound.map((x) => x.toFixed(2)).join(' ');
    const unsaturated: Case[] = [];

    if (GROUPS.has('a')) {
      const groupA: Case[] = [];
      try {
        groupA.push(await startCase('bare Express handler', 'bare', {}, '/pet/10'));
        groupA.push(
          await startCase(
            'full chain (record, token, introspect, XACML, forward)',
            'chain',
            { issuer: as.issuer, policyFile },
            '/pet/10',
            bearer(opaque),
          ),
        );
        groupA.push(
          await startCase(
            'peer: express-oauth2-jwt-bearer (local JWT)',
            'peer',
            { issuer: as.issuer, audience: as.audience },
            '/pet/10',
            bearer(jwt),
          ),
        );
        groupA.push(
          await startCase('reference: hand-written minimum of the chain', 'minimal', { issuer: as.issuer }, '/pet/10', bearer(opaque)),
        );
        groupA.push(await startCase('the handler on plain node:http', 'bare-node', {}, '/pet/10'));
        groupA.push(
          await startCase('the full chain on plain node:http', 'chain-node', { issuer: as.issuer, policyFile }, '/pet/10', bearer(opaque)),
        );
        await measureGroup(groupA);
      } finally {
        for (const c of groupA) await stopServer(c.child);
      }
      unsaturated.push(...groupA);
      const [bare, chain, peer, minimal, bareNode, chainNode] = groupA as [Case, Case, Case, Case, Case, Case];
      console.log(`\n  ${'(a) the same handler, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
      for (const c of groupA) console.log(row(c, bare));
      const chainRatio = ratios(chain, bare);
      const peerRatio = ratios(peer, bare);
      const minimalRatio = ratios(minimal, bare);
      // What the chain adds per request, in CPU: inside Express, and on plain node:http (same run).
      const added = (withChain: Case, alone: Case): number => summary(withChain).cpuPerRequest - summary(alone).cpuPerRequest;
      const expressAdds = added(chain, bare);
      const nodeAdds = added(chainNode, bareNode);
      console.log(
        `  chain's CPU in Express / on node:http     ${(expressAdds / nodeAdds).toFixed(2)}  (target ≤ 2) ${expressAdds / nodeAdds <= 2 ? 'met' : 'NOT MET'}; ${Math.round(expressAdds)} µs against ${Math.round(nodeAdds)} µs per request`,
      );
      console.log(
        `  full chain / bare handler (Express)       ${chainRatio.rps.toFixed(2)}  (for reference; retired target 0.85); CPU per request ratio ${chainRatio.cpu.toFixed(2)}; rounds ${rounds(chainRatio)}`,
      );
      console.log(
        `  JWT-only peer / bare (Express)            ${peerRatio.rps.toFixed(2)}  (the chain stays ahead: ${chainRatio.rps > peerRatio.rps ? 'yes' : 'NO'}); CPU per request ratio ${peerRatio.cpu.toFixed(2)}; rounds ${rounds(peerRatio)}`,
      );
      console.log(
        `  hand-written minimum / bare (Express)     ${minimalRatio.rps.toFixed(2)}  (for reference); CPU per request ratio ${minimalRatio.cpu.toFixed(2)}; rounds ${rounds(minimalRatio)}`,
      );
    }

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
    const url = '/gateway/Ente/PetStore/v1/pet/10';

    if (GROUPS.has('b')) {
      const groupB: Case[] = [];
      let nginx: Case | undefined;
      try {
        groupB.push(await startCase('fastify + @fastify/http-proxy (bare relay)', 'fastify-proxy', { target }, url));
        groupB.push(await startCase('node:http + undici relay, a dozen lines', 'node-relay', { target }, url));
        groupB.push(await startCase('createRelay in Express (bare relay)', 'relay', { target }, url));
        groupB.push(await startCase('full gateway, gateway.router in Express', 'gateway', { configFile }, url, bearer(opaque)));
        groupB.push(await startCase('full gateway, gateway.handler on node:http', 'gateway-handler', { configFile }, url, bearer(opaque)));
        nginx = await startNginx(dir, target);
        if (nginx !== undefined) groupB.push(nginx);
        await measureGroup(groupB);
      } finally {
        for (const c of groupB) await stopServer(c.child);
      }
      unsaturated.push(...groupB);
      const [fastify, nodeRelay, relay, gateway, gatewayHandler] = groupB as [Case, Case, Case, Case, Case];
      console.log(`\n  ${'(b) relaying GET /pet/10 to the petstore backend'.padEnd(58)} ${HEADINGS}`);
      for (const c of groupB) console.log(row(c, fastify));
      if (nginx === undefined) console.log('  nginx proxy_pass: skipped (nginx is not on the PATH)');
      const gatewayRatio = ratios(gateway, relay);
      const handlerVsFastify = ratios(gatewayHandler, fastify);
      const handlerVsExpress = ratios(gatewayHandler, gateway);
      console.log(
        `  gateway.handler / fastify http-proxy      ${handlerVsFastify.rps.toFixed(2)}  (target ≥ 0.90) ${handlerVsFastify.rps >= 0.9 ? 'met' : 'NOT MET'}; CPU per request ratio ${handlerVsFastify.cpu.toFixed(2)}; rounds ${rounds(handlerVsFastify)}`,
      );
      console.log(
        `  gateway.handler / gateway in Express      ${handlerVsExpress.rps.toFixed(2)}  (for reference: the 3x target is retired, Express's own cost per request makes it unreachable); CPU per request ratio ${handlerVsExpress.cpu.toFixed(2)}; rounds ${rounds(handlerVsExpress)}`,
      );
      // How far the whole gateway is from a relay that does nothing else, in CPU per request.
      const handlerVsNodeRelay = 1 / ratios(gatewayHandler, nodeRelay).cpu;
      console.log(
        `  gateway.handler CPU / node:http + undici  ${handlerVsNodeRelay.toFixed(2)}x  (goal ≤ 1.5) ${handlerVsNodeRelay <= 1.5 ? 'met' : 'NOT MET'}; ${Math.round(summary(gatewayHandler).cpuPerRequest)} against ${Math.round(summary(nodeRelay).cpuPerRequest)} µs per request`,
      );
      console.log(
        `  gateway in Express / createRelay          ${gatewayRatio.rps.toFixed(2)}  (for reference); CPU per request ratio ${gatewayRatio.cpu.toFixed(2)}; rounds ${rounds(gatewayRatio)}`,
      );
    }

    // (c) the same gateway on the services several instances share: token results in Redis
    // behind the local cache (the cached path reads only the local cache), records in PostgreSQL.
    if (GROUPS.has('c')) {
      const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
      const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
      const databaseSchema = `gateway_bench_${process.pid}`;
      const groupC: Case[] = [];
      let shared: { redis: Case; postgres: Case; local: Case; journaled: Case } | undefined;
      let databasePerRecord: number | undefined;
      let journalBytes: number | undefined;
      try {
        groupC.push(await startCase('gateway.handler, memory only', 'gateway-handler', { configFile }, url, bearer(opaque)));
        groupC.push(
          await startCase(
            'gateway.handler, token results shared in Redis',
            'gateway-handler',
            { configFile, redisUrl },
            url,
            bearer(opaque),
          ),
        );
        groupC.push(
          await startCase(
            'gateway.handler, records in PostgreSQL',
            'gateway-handler',
            { configFile, databaseUrl, databaseSchema },
            url,
            bearer(opaque),
          ),
        );
        groupC.push(
          await startCase(
            'gateway.handler, records in PostgreSQL, journaled',
            'gateway-handler',
            { configFile, databaseUrl, databaseSchema: `${databaseSchema}_journal`, journal: true },
            url,
            bearer(opaque),
          ),
        );
        const databaseBefore = await postgresCpu();
        await measureGroup(groupC);
        const databaseAfter = await postgresCpu();
        shared = { local: groupC[0]!, redis: groupC[1]!, postgres: groupC[2]!, journaled: groupC[3]! };
        journalBytes = await journalBytesPerRecord(databaseUrl, `${databaseSchema}_journal`);
        if (databaseBefore !== undefined && databaseAfter !== undefined) {
          databasePerRecord = (databaseAfter - databaseBefore) / requestsOf(shared.postgres);
        }
      } catch (err) {
        console.log(`\n  (c) Redis and PostgreSQL: skipped (${(err as Error).message}); set BENCH_REDIS_URL and BENCH_DATABASE_URL`);
      } finally {
        for (const c of groupC) await stopServer(c.child);
        const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
        await pool.query(`DROP SCHEMA IF EXISTS ${databaseSchema} CASCADE`).catch(() => undefined);
        await pool.query(`DROP SCHEMA IF EXISTS ${databaseSchema}_journal CASCADE`).catch(() => undefined);
        await pool.end();
      }
      if (shared !== undefined) {
        unsaturated.push(...groupC);
        console.log(`\n  ${'(c) the gateway on shared services, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
        for (const c of groupC) console.log(row(c, shared.local));
        const redisRatio = ratios(shared.redis, shared.local);
        const postgresRatio = ratios(shared.postgres, shared.local);
        console.log(
          `  Redis behind the local cache / memory only ${redisRatio.cpu.toFixed(2)}  CPU per request ratio (target ≥ 0.95) ${redisRatio.cpu >= 0.95 ? 'met' : 'NOT MET'}; req/s ratio ${redisRatio.rps.toFixed(2)}; rounds ${rounds(redisRatio)}`,
        );
        console.log(
          `  records in PostgreSQL / in memory          ${postgresRatio.cpu.toFixed(2)}  CPU per request ratio of the gateway process (target ≥ 0.90) ${postgresRatio.cpu >= 0.9 ? 'met' : 'NOT MET'}; req/s ratio ${postgresRatio.rps.toFixed(2)}; PostgreSQL's own CPU ${databasePerRecord === undefined ? 'not measured' : `${Math.round(databasePerRecord)} µs per record`}; rounds ${rounds(postgresRatio)}`,
        );
        // CPU per request of the journaled case over the plain one (ratios() gives plain/journaled).
        const journalRatio = ratios(shared.journaled, shared.postgres);
        const journalCost = 1 / journalRatio.cpu;
        console.log(
          `  records in PostgreSQL, journal / without   ${journalCost.toFixed(2)}  CPU per request of the gateway process (target ≤ 1.05) ${journalCost <= 1.05 ? 'met' : 'NOT MET'}; req/s ratio ${journalRatio.rps.toFixed(2)}; journal ${journalBytes === undefined ? 'not measured' : `${Math.round(journalBytes)} bytes per record`}; rounds ${rounds(journalRatio)}`,
        );
      }
    }

    // (d) the cost of the metrics: the same gateway.handler with metrics on and off, no OpenTelemetry SDK.
    if (GROUPS.has('d')) {
      const groupD: Case[] = [];
      try {
        groupD.push(
          await startCase('gateway.handler, metrics off', 'gateway-handler', { configFile, metrics: false }, url, bearer(opaque)),
        );
        groupD.push(
          await startCase('gateway.handler, metrics on (no OpenTelemetry SDK)', 'gateway-handler', { configFile }, url, bearer(opaque)),
        );
        await measureGroup(groupD);
      } finally {
        for (const c of groupD) await stopServer(c.child);
      }
      unsaturated.push(...groupD);
      const [metricsOff, metricsOn] = groupD as [Case, Case];
      console.log(`\n  ${'(d) metrics on and off, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
      for (const c of groupD) console.log(row(c, metricsOff));
      const metricsRatio = ratios(metricsOn, metricsOff);
      console.log(
        `  metrics on / metrics off                  ${metricsRatio.rps.toFixed(2)}  (target ≥ 0.97) ${metricsRatio.rps >= 0.97 ? 'met' : 'NOT MET'}; CPU per request ratio ${metricsRatio.cpu.toFixed(2)}; rounds ${rounds(metricsRatio)}`,
      );
    }

    // (e) traffic control: a requests policy whose limit is never reached, so that every request
    // pays the decision and none is refused.
    if (GROUPS.has('e')) {
      const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
      const withPolicy = async (store: 'local' | 'redis', headers?: 'none'): Promise<string> => {
        const file = path.join(dir, `gateway.traffic-${store}${headers === undefined ? '' : `-${headers}`}.json`);
        const policy = { name: 'per-client', metric: 'requests', limit: 1_000_000_000, windowSeconds: 10, groupBy: ['clientId'] };
        await writeFile(
          file,
          JSON.stringify({ ...config, trafficControl: { store, ...(headers === undefined ? {} : { headers }), policies: [policy] } }),
        );
        return file;
      };
      const groupE: Case[] = [];
      try {
        groupE.push(await startCase('gateway.handler, no traffic policy', 'gateway-handler', { configFile }, url, bearer(opaque)));
        // The same server again, measured as the others: what two identical servers differ by in
        // this run, beside which the policy's ratio is read.
        groupE.push(
          await startCase('gateway.handler, no traffic policy (a second server)', 'gateway-handler', { configFile }, url, bearer(opaque)),
        );
        groupE.push(
          await startCase(
            'gateway.handler, a requests policy, local store',
            'gateway-handler',
            { configFile: await withPolicy('local') },
            url,
            bearer(opaque),
          ),
        );
        // The same policy without its five rate-limit fields on the answers: the decision alone.
        groupE.push(
          await startCase(
            'gateway.handler, the same policy, headers: "none"',
            'gateway-handler',
            { configFile: await withPolicy('local', 'none') },
            url,
            bearer(opaque),
          ),
        );
        groupE.push(
          await startCase('gateway.handler on Redis, no traffic policy', 'gateway-handler', { configFile, redisUrl }, url, bearer(opaque)),
        );
        groupE.push(
          await startCase(
            'gateway.handler on Redis, a requests policy in Redis',
            'gateway-handler',
            { configFile: await withPolicy('redis'), redisUrl },
            url,
            bearer(opaque),
          ),
        );
        await measureGroup(groupE);
      } finally {
        for (const c of groupE) await stopServer(c.child);
      }
      unsaturated.push(...groupE);
      const [none, noneAgain, local, localNoFields, redisNone, redisPolicy] = groupE as [Case, Case, Case, Case, Case, Case];
      console.log(`\n  ${'(e) traffic control, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
      for (const c of groupE) console.log(row(c, none));
      const localRatio = ratios(local, none);
      const noFieldsRatio = ratios(localNoFields, none);
      const noise = ratios(noneAgain, none);
      const redisRatio = ratios(redisPolicy, redisNone);
      // ratios().cpu is the baseline's µs/req over the case's: its inverse is the case's CPU per request relative to the baseline.
      const redisCpu = 1 / redisRatio.cpu;
      console.log(
        `  the same server twice (this run's noise)   ${noise.rps.toFixed(2)}  req/s ratio of two identical servers; CPU per request ratio ${noise.cpu.toFixed(2)}; rounds ${rounds(noise)}`,
      );
      console.log(
        `  policy on the local store / none          ${localRatio.rps.toFixed(2)}  (target ≥ 0.97) ${localRatio.rps >= 0.97 ? 'met' : 'NOT MET'}; CPU per request ratio ${localRatio.cpu.toFixed(2)}; rounds ${rounds(localRatio)}`,
      );
      console.log(
        `  the same, headers: "none" / none            ${noFieldsRatio.rps.toFixed(2)}  the decision without its rate-limit fields, for reference; CPU per request ratio ${noFieldsRatio.cpu.toFixed(2)}; rounds ${rounds(noFieldsRatio)}`,
      );
      console.log(
        `  policy in Redis / none (both on Redis)    ${redisRatio.rps.toFixed(2)}  (target ≥ 0.90) ${redisRatio.rps >= 0.9 ? 'met' : 'NOT MET'}; CPU per request ${redisCpu.toFixed(2)}x (target ≤ 1.10) ${redisCpu <= 1.1 ? 'met' : 'NOT MET'}; rounds ${rounds(redisRatio)}`,
      );
    }

    // (f) DPoP: the proof checks on top of a cached token's path.
    if (GROUPS.has('f')) {
      const publicBaseUrl = 'https://api.bench.example';
      const dpopFile = path.join(dir, 'gateway.dpop.json');
      const dpopConfig = { ...config, publicBaseUrl, tokenPolicies: {} as Record<string, unknown> };
      for (const [name, policy] of Object.entries(config.tokenPolicies)) dpopConfig.tokenPolicies[name] = { ...policy, dpop: 'allowed' };
      await writeFile(dpopFile, JSON.stringify(dpopConfig));
      const client = await dpopClient(`${publicBaseUrl}${url}`);
      const bound = await as.issueToken('client1', 'client1-secret', { dpop: client.key });
      const groupF: Case[] = [];
      try {
        // The Bearer request carries a proof too (not looked at under Bearer): both cases are paced
        // alike by the load generator, which signs a proof for every request, and are the same size.
        const bearerCase = await startServer('gateway-handler', { configFile: dpopFile });
        groupF.push(
          await warmCase({
            name: 'gateway.handler, dpop allowed, Bearer (unbound token)',
            usage: () => serverUsage(bearerCase.child),
            child: bearerCase.child,
            url: `http://127.0.0.1:${bearerCase.port}${url}`,
            headers: bearer(opaque),
            perRequest: () => ({ DPoP: client.proof(opaque) }),
            rounds: [],
          }),
        );
        const dpopCase = await startServer('gateway-handler', { configFile: dpopFile });
        groupF.push(
          await warmCase({
            name: 'gateway.handler, dpop allowed, DPoP (ES256 proof)',
            usage: () => serverUsage(dpopCase.child),
            child: dpopCase.child,
            url: `http://127.0.0.1:${dpopCase.port}${url}`,
            headers: { Authorization: `DPoP ${bound}` },
            perRequest: () => ({ DPoP: client.proof(bound) }),
            rounds: [],
          }),
        );
        await measureGroup(groupF);
      } finally {
        for (const c of groupF) await stopServer(c.child);
      }
      unsaturated.push(...groupF);
      const [bearerCase, dpopCase] = groupF as [Case, Case];
      console.log(`\n  ${'(f) DPoP against Bearer, GET /pet/10'.padEnd(58)} ${HEADINGS}`);
      for (const c of groupF) console.log(row(c, bearerCase));
      const dpopRatio = ratios(dpopCase, bearerCase);
      const dpopCpu = 1 / dpopRatio.cpu;
      const [withProof, without] = [summary(dpopCase).cpuPerRequest, summary(bearerCase).cpuPerRequest];
      console.log(
        `  DPoP / Bearer, gateway.handler            ${dpopCpu.toFixed(2)}x CPU per request (target ≤ 1.5) ${dpopCpu <= 1.5 ? 'met' : 'NOT MET'}; the proof checks ${Math.round(withProof - without)} µs, ${Math.round((100 * (withProof - without)) / withProof)}% of a DPoP request's ${Math.round(withProof)} µs; req/s ratio ${dpopRatio.rps.toFixed(2)}; rounds ${rounds(dpopRatio)}`,
      );
      console.log(
        `  of which the ES256 signature check alone  ${Math.round(client.verifyCost(bound))} µs (node:crypto verify, measured in this process): the floor of a proof's cost`,
      );
    }

    const notSaturated = unsaturated
      .map(summary)
      .filter((r) => r.busyPercent < 90)
      .map((r) => `${r.name} (${Math.round(r.busyPercent)}%)`);
    if (notSaturated.length > 0) {
      console.log(
        `\n  Not saturated (event loop busy below 90%, so the load generator or the machine set the pace): ${notSaturated.join('; ')}.`,
      );
    }
  } finally {
    for (const child of children) await stopServer(child);
    await as.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A DPoP client for the load generator: its ES256 key (as jose wants it for the token request) and
 * a proof for `htu` made with node:crypto, synchronously, for each request (a fresh `jti` and `iat`).
 */
async function dpopClient(htu: string): Promise<{
  key: { privateKey: CryptoKey; publicJwk: JWK; alg: string };
  proof: (token: string) => string;
  /** CPU µs of one signature check of a proof, over a few hundred. */
  verifyCost: (token: string) => number;
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const signer = createPrivateKey({ key: (await exportJWK(privateKey)) as JsonWebKey, format: 'jwk' });
  const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicJwk })).toString('base64url');
  const hashes = new Map<string, string>();
  let sent = 0;
  const verifier = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' });
  const client = {
    key: { privateKey, publicJwk, alg: 'ES256' },
    verifyCost(token: string): number {
      const proofs = Array.from({ length: 500 }, () => client.proof(token).split('.'));
      const started = process.cpuUsage();
      for (const [h, p, signature] of proofs)
        verify('sha256', Buffer.from(`${h}.${p}`), { key: verifier, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature!, 'base64url'));
      const used = process.cpuUsage(started);
      return (used.user + used.system) / proofs.length;
    },
    proof(token: string): string {
      let ath = hashes.get(token);
      if (ath === undefined) hashes.set(token, (ath = createHash('sha256').update(token).digest('base64url')));
      const claims = { jti: `${process.pid}-${++sent}`, htm: 'GET', htu, iat: Math.floor(Date.now() / 1000), ath };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${sign('sha256', Buffer.from(input), { key: signer, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    },
  };
  return client;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
