/**
 * Starts {@link ./gateway-process-main.ts} (xacmlAuthorize with a given policy, relaying to a
 * backend) in a child process, and measures how much an attack request delays the gateway while it
 * is being answered: the gateway's own event-loop delay over that time (read from the gateway
 * process), and what an unrelated client (a process of its own) sees meanwhile.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import {
  describeFigures,
  probeFigures,
  probeWithinBounds,
  routeLoopDelay,
  type LoopDelay,
  type LoopDelaySource,
} from '../../security/support/loop-delay.js';

/** Where the child gateway serves the PetStore API. */
export const GATEWAY_BASE = '/gateway/Ente/PetStore/v1';

/** Where the child gateway answers its event-loop delay (see loop-delay.ts), outside the APIs. */
export const LOOP_DELAY_PATH = '/test/loop-delay';

/** A running child gateway. */
export interface GatewayProcess {
  /** Its base URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Its event-loop delay, read from the process. */
  readonly loopDelay: LoopDelaySource;
  /** Kills it (SIGKILL: it may be frozen), and removes what it was given (its policy file). */
  stop(): Promise<void>;
}

/** The options of {@link startGatewayProcess}. */
export interface GatewayProcessOptions {
  /** The server's `maxHeadersCount`; Node's default unless given. */
  maxHeadersCount?: number;
  /**
   * A control for the measure: a regular expression that the process matches, with JavaScript's
   * own (backtracking) engine, against each request's X-Tenant header on its event loop, before
   * the gateway: what a vulnerable gateway would do.
   */
  tenantPatternOnTheLoop?: string;
}

/**
 * Starts a gateway process with `policyXml`, relaying permitted requests to `backend`. Its server
 * keeps Node's defaults unless `maxHeadersCount` is given (Node keeps the first 1,000 or so
 * headers of a request by default, and drops the rest silently).
 */
export async function startGatewayProcess(
  policyXml: string,
  backend: string,
  options: GatewayProcessOptions = {},
): Promise<GatewayProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eag-xacml-attack-'));
  const policyFile = path.join(dir, 'policy.xml');
  await writeFile(policyFile, policyXml);
  const main = fileURLToPath(new URL('gateway-process-main.ts', import.meta.url));
  return startTestGateway(main, [policyFile, backend, JSON.stringify(options)], () => rm(dir, { recursive: true, force: true }));
}

/**
 * Starts a test's gateway process, `node --import tsx <main> ...args`, that prints
 * `{"url":"http://127.0.0.1:<port>"}` as its first line once it listens, and answers its
 * event-loop delay at {@link LOOP_DELAY_PATH} (loop-delay.ts's `loopDelayHandler`). Its `stop`
 * kills it (SIGKILL: it may be frozen), then calls `cleanUp`.
 */
export async function startTestGateway(
  main: string,
  args: string[],
  cleanUp: () => Promise<void> = async () => {},
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await cleanUp();
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        out += chunk;
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) resolve((JSON.parse(line) as { url: string }).url);
      });
      child.once('exit', (code) => reject(new Error(`gateway process exited with ${code}`)));
      child.once('error', reject);
    });
    return { url, loopDelay: routeLoopDelay(`${url}${LOOP_DELAY_PATH}`), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** What {@link latencyDuring} saw. */
export interface LatencyReport {
  /** The attack's response (status, content type and body), or why it failed. */
  attack: { status: number; contentType: string | null; body: string } | { error: string };
  /** The gateway's event-loop delay from just before the attack was sent until it was answered. */
  loopDelay: LoopDelay;
  /** The latency of each unrelated request, in ms (`Infinity` for one not answered in time). */
  latencies: number[];
  /** The statuses of the unrelated requests that were answered. */
  statuses: number[];
}

/**
 * Sends `attack`, and while it is in flight, unrelated requests to `probeUrl` every 10 ms (at
 * least three), from a process of its own (latency-probe-main.ts: timed from this one, a
 * collection pause of the test runner would count as the gateway's delay); each unrelated request
 * is given `patienceMs` before it counts as not answered (`Infinity`). Returns once the attack is
 * answered or the patience ran out while an unrelated request waited. The gateway's event-loop
 * delay (`loopDelay`) is read just before the attack is sent, which starts its window, and once it
 * is answered. Five unrelated requests go first, unmeasured: the first requests of a new process
 * are slow (code loaded and compiled on first use) whatever the attack. With `warmUp`, the attack
 * is also sent once first, unmeasured, for the same reason (the first request with 1,500 headers
 * takes some 100 ms in any Express app); if that one is not answered within `patienceMs`, the
 * report says so.
 */
export async function latencyDuring(
  attack: (signal: AbortSignal) => Promise<Response>,
  probeUrl: string,
  { patienceMs = 2000, warmUp = false, loopDelay }: { patienceMs?: number; warmUp?: boolean; loopDelay: LoopDelaySource },
): Promise<LatencyReport> {
  for (let i = 0; i < 5; i++) await (await fetch(probeUrl)).arrayBuffer();
  if (warmUp) {
    try {
      await (await attack(AbortSignal.timeout(patienceMs))).arrayBuffer();
    } catch (e) {
      return {
        attack: { error: `the first attack request: ${(e as Error).message}` },
        loopDelay: await loopDelay(),
        latencies: [Infinity],
        statuses: [],
      };
    }
  }
  const main = fileURLToPath(new URL('latency-probe-main.ts', import.meta.url));
  const prober = spawn(process.execPath, ['--import', 'tsx', main, probeUrl, String(patienceMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(prober, 'exit');
  const latencies: number[] = [];
  const statuses: number[] = [];
  let counting = false;
  let waiting: (() => void) | undefined;
  const attackAbort = new AbortController();
  let pending = '';
  prober.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      // The lines before the attack began are the prober's own warm-up.
      if (counting) {
        if (line === 'timeout') {
          latencies.push(Infinity);
          attackAbort.abort();
        } else {
          const [ms, status] = line.split(' ');
          latencies.push(Number(ms));
          statuses.push(Number(status));
        }
      }
      waiting?.();
    }
  });
  const nextLine = (): Promise<void> =>
    new Promise((resolve, reject) => {
      waiting = resolve;
      void exited.then(() => reject(new Error('the prober exited')));
    });
  try {
    await nextLine();
    // The window of the gateway's measure starts here.
    await loopDelay();
    counting = true;
    let attackDone = false;
    const attackResult = attack(attackAbort.signal).then(
      async (res) => ({ status: res.status, contentType: res.headers.get('content-type'), body: await res.text() }),
      (e: unknown) => ({ error: (e as Error).message }),
    );
    void attackResult.then(() => {
      attackDone = true;
      waiting?.();
    });
    while ((latencies.length < 3 || !attackDone) && !latencies.includes(Infinity)) await nextLine();
    if (!attackDone) attackAbort.abort();
    const answer = await attackResult;
    return { attack: answer, loopDelay: await loopDelay(), latencies, statuses };
  } finally {
    prober.stdin.end();
    await exited;
  }
}

/** The report's figures on one line. */
export function latencyFigures(report: LatencyReport): string {
  return describeFigures(report.loopDelay, probeFigures(report.latencies));
}

/**
 * The attack did not delay the gateway: its event loop was never held for more than `boundMs` (what
 * an unrelated request waited for the gateway, whatever the machine: loop-delay.ts), and the
 * unrelated client, whose figures hold the machine's scheduling too, saw every request within
 * loop-delay.ts's PROBE_WORST_MS and nine in ten within its PROBE_P90_MS. Prints the figures.
 */
export function expectNotDelayed(report: LatencyReport, boundMs: number): void {
  const figures = latencyFigures(report);
  console.log(`      ${figures}`);
  expect(report.loopDelay.maxMs, `the gateway's event-loop delay over the attack (ms): ${figures}`).to.be.at.most(boundMs);
  const shown = report.latencies.map((l) => l.toFixed(1)).join(', ');
  expect(probeWithinBounds(probeFigures(report.latencies)), `${figures}; unrelated request latencies (ms): ${shown}`).to.equal(true);
}

/**
 * The control of {@link expectNotDelayed}: work that holds the gateway's event loop is caught, both
 * by the gateway's event-loop delay (past `boundMs`) and by the unrelated client (past its bounds).
 * Prints the figures.
 */
export function expectDelayed(report: LatencyReport, boundMs: number): void {
  const figures = latencyFigures(report);
  console.log(`      ${figures}`);
  expect(report.loopDelay.maxMs, `the gateway's event-loop delay over the attack (ms): ${figures}`).to.be.above(boundMs);
  expect(probeWithinBounds(probeFigures(report.latencies)), `the unrelated client: ${figures}`).to.equal(false);
}
