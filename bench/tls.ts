/**
 * HTTPS listener benchmark (standalone: `npx tsx bench/tls.ts`, after `npm run build`).
 *
 * Measures with autocannon, on loopback, with keep-alive connections, requests/second of a relay of
 * GET /pet/10 to the petstore backend by `serveGateway` (an API without token management: the
 * listener and the relay, nothing else) over HTTP and over HTTPS (`tls`), and by fastify +
 * @fastify/http-proxy over HTTP and over HTTPS (the peer). A certificate for 127.0.0.1 is made with
 * the `openssl` command for the run (the benchmark is skipped without it).
 *
 * Prints the target: the gateway over HTTPS ≥ 0.90 of fastify over HTTPS; and, for reference, what
 * TLS costs each of them (HTTPS over HTTP). Fairness as in bench/gateway.ts: each server alone in
 * its own child process, the backend in a third, interleaved rounds (BENCH_ROUNDS, default 9, of
 * BENCH_DURATION seconds, default 2, the order rotating every round), a case's ratio the median of
 * its per-round ratios to the baseline measured in the same round; the CPU time per request of
 * each server (`process.cpuUsage()`) beside its req/s.
 */
import { execFileSync, fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proxy from '@fastify/http-proxy';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { createGateway, serveGateway } from 'express-access-gateway';
import { startPetstoreBackend } from '../examples/petstore/backend.js';

const self = fileURLToPath(import.meta.url);
const DURATION = Number(process.env.BENCH_DURATION ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PREFIX = '/gateway/Ente/PetStore/v1';

interface ServerOptions {
  target?: string;
  tls?: { cert: string; key: string };
}

/** In a child: starts one server and reports its port; answers the parent's CPU questions. */
async function serverMain(kind: string, options: ServerOptions): Promise<void> {
  let port: number;
  if (kind === 'backend') {
    port = (await startPetstoreBackend({ port: 0 })).port;
  } else if (kind === 'gateway') {
    const gateway = createGateway({
      config: { apis: [{ provider: 'Ente', name: 'PetStore', version: 1, backend: { url: options.target! } }] },
    });
    await gateway.ready();
    const server = await serveGateway(gateway, { port: 0, adminPort: false, ...(options.tls === undefined ? {} : { tls: options.tls }) });
    port = server.port;
  } else {
    const app = Fastify({ logger: false, ...(options.tls === undefined ? {} : { https: options.tls }) });
    await app.register(proxy, { upstream: options.target!, prefix: PREFIX, rewritePrefix: '' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  }
  process.on('message', (message) => {
    if (message === 'cpu-usage') process.send?.({ cpuUsage: process.cpuUsage() });
  });
  process.on('SIGTERM', () => process.exit(0));
  process.send?.({ port });
}

function startServer(kind: string, options: ServerOptions = {}): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(self, ['server', kind, JSON.stringify(options)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (message) => resolve({ child, port: (message as { port: number }).port }));
    child.once('exit', (code) => reject(new Error(`server ${kind} exited with code ${String(code)}`)));
  });
}

function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      const usage = (message as { cpuUsage?: NodeJS.CpuUsage }).cpuUsage;
      if (usage === undefined) return;
      child.off('message', onMessage);
      resolve(usage.user + usage.system);
    };
    child.on('message', onMessage);
    child.send('cpu-usage');
  });
}

interface Round {
  rps: number;
  /** Server CPU time per request, µs. */
  cpuPerRequest: number;
}

interface Case {
  name: string;
  child: ChildProcess;
  url: string;
  rounds: Round[];
}

async function measure(c: Case, duration: number): Promise<Round> {
  const before = await cpuOf(c.child);
  const result = await autocannon({ url: c.url, connections: CONNECTIONS, pipelining: 1, duration });
  const cpu = (await cpuOf(c.child)) - before;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${c.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, cpuPerRequest: cpu / Math.max(1, result.requests.total) };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** Median per-round ratios of `c` to `base`: req/s, and CPU per request (base's µs over c's: above 1 is less work). */
function ratios(c: Case, base: Case): { rps: number; cpu: number } {
  return {
    rps: median(c.rounds.map((round, i) => round.rps / base.rounds[i]!.rps)),
    cpu: median(c.rounds.map((round, i) => base.rounds[i]!.cpuPerRequest / round.cpuPerRequest)),
  };
}

/** A self-signed certificate for 127.0.0.1, made for the run; `undefined` without openssl. */
function certificate(dir: string): { cert: string; key: string } | undefined {
  if (spawnSync('sh', ['-c', 'command -v openssl']).status !== 0) return undefined;
  const [certFile, keyFile] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-tls-'));
  const children: ChildProcess[] = [];
  try {
    const tls = certificate(dir);
    if (tls === undefined) {
      console.log('openssl is not on the PATH: the HTTPS benchmark is skipped');
      return;
    }
    const backend = await startServer('backend');
    children.push(backend.child);
    const target = `http://127.0.0.1:${backend.port}`;
    const cases: Case[] = [];
    for (const [name, kind, secure] of [
      ['fastify + @fastify/http-proxy, HTTPS (the peer)', 'fastify', true],
      ['serveGateway, HTTPS', 'gateway', true],
      ['fastify + @fastify/http-proxy, HTTP', 'fastify', false],
      ['serveGateway, HTTP', 'gateway', false],
    ] as const) {
      const { child, port } = await startServer(kind, { target, ...(secure ? { tls } : {}) });
      children.push(child);
      const c: Case = { name, child, url: `${secure ? 'https' : 'http'}://127.0.0.1:${port}${PREFIX}/pet/10`, rounds: [] };
      await measure(c, 1); // warm-up: JIT, keep-alive connections to the backend
      cases.push(c);
    }
    console.log(`${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} keep-alive connections, GET ${PREFIX}/pet/10 relayed`);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(round + i) % cases.length]!;
        c.rounds.push(await measure(c, DURATION));
      }
    }
    const [fastifyTls, gatewayTls, fastifyPlain, gatewayPlain] = cases as [Case, Case, Case, Case];
    for (const c of cases) {
      const r = ratios(c, fastifyTls);
      console.log(
        `  ${c.name.padEnd(48)} ${median(c.rounds.map((x) => x.rps))
          .toFixed(0)
          .padStart(7)} req/s  ${median(c.rounds.map((x) => x.cpuPerRequest))
          .toFixed(0)
          .padStart(5)} µs/req  vs peer ${r.rps.toFixed(2)} (cpu ${r.cpu.toFixed(2)})`,
      );
    }
    const target90 = ratios(gatewayTls, fastifyTls);
    console.log(
      `\n  serveGateway HTTPS / fastify HTTPS      ${target90.rps.toFixed(2)}  (target ≥ 0.90) ${target90.rps >= 0.9 ? 'met' : 'NOT MET'}; CPU per request ratio ${target90.cpu.toFixed(2)}`,
    );
    const gatewayCost = ratios(gatewayTls, gatewayPlain);
    const fastifyCost = ratios(fastifyTls, fastifyPlain);
    console.log(
      `  serveGateway HTTPS / HTTP               ${gatewayCost.rps.toFixed(2)}  (reference); CPU per request ratio ${gatewayCost.cpu.toFixed(2)}`,
    );
    console.log(
      `  fastify HTTPS / HTTP                    ${fastifyCost.rps.toFixed(2)}  (reference); CPU per request ratio ${fastifyCost.cpu.toFixed(2)}`,
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const [role, kind, json] = process.argv.slice(2);
if (role === 'server') {
  serverMain(kind!, JSON.parse(json ?? '{}') as ServerOptions).catch((err: unknown) => {
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
} else {
  void main();
}
