/**
 * Starts {@link ./gateway-process-main.ts} (xacmlAuthorize with a given policy, relaying to a
 * backend) in a child process, and measures how long unrelated requests wait while an attack
 * request is being answered.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the child gateway serves the PetStore API. */
export const GATEWAY_BASE = '/gateway/Ente/PetStore/v1';

/** A running child gateway. */
export interface GatewayProcess {
  /** Its base URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Kills it (SIGKILL: it may be frozen) and removes its policy file. */
  stop(): Promise<void>;
}

/**
 * Starts a gateway process with `policyXml`, relaying permitted requests to `backend`. Its server
 * keeps Node's defaults unless `maxHeadersCount` is given (Node keeps the first 1,000 or so
 * headers of a request by default, and drops the rest silently).
 */
export async function startGatewayProcess(
  policyXml: string,
  backend: string,
  { maxHeadersCount }: { maxHeadersCount?: number } = {},
): Promise<GatewayProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eag-xacml-attack-'));
  const policyFile = path.join(dir, 'policy.xml');
  await writeFile(policyFile, policyXml);
  const main = fileURLToPath(new URL('gateway-process-main.ts', import.meta.url));
  const args = ['--import', 'tsx', main, policyFile, backend, ...(maxHeadersCount === undefined ? [] : [String(maxHeadersCount)])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await rm(dir, { recursive: true, force: true });
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
    return { url, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** What {@link latencyDuring} saw. */
export interface LatencyReport {
  /** The attack's response (status and body), or why it failed. */
  attack: { status: number; body: string } | { error: string };
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
 * answered or the patience ran out while an unrelated request waited. Five unrelated requests go
 * first, unmeasured: the first requests of a new process are slow (code loaded and compiled on
 * first use) whatever the attack. With `warmUp`, the attack is also sent once first, unmeasured,
 * for the same reason (the first request with 1,500 headers takes some 100 ms in any Express app);
 * if that one is not answered within `patienceMs`, the report says so.
 */
export async function latencyDuring(
  attack: (signal: AbortSignal) => Promise<Response>,
  probeUrl: string,
  { patienceMs = 2000, warmUp = false }: { patienceMs?: number; warmUp?: boolean } = {},
): Promise<LatencyReport> {
  for (let i = 0; i < 5; i++) await (await fetch(probeUrl)).arrayBuffer();
  if (warmUp) {
    try {
      await (await attack(AbortSignal.timeout(patienceMs))).arrayBuffer();
    } catch (e) {
      return { attack: { error: `the first attack request: ${(e as Error).message}` }, latencies: [Infinity], statuses: [] };
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
    counting = true;
    let attackDone = false;
    const attackResult = attack(attackAbort.signal).then(
      async (res) => ({ status: res.status, body: await res.text() }),
      (e: unknown) => ({ error: (e as Error).message }),
    );
    void attackResult.then(() => {
      attackDone = true;
      waiting?.();
    });
    while ((latencies.length < 3 || !attackDone) && !latencies.includes(Infinity)) await nextLine();
    if (!attackDone) attackAbort.abort();
    return { attack: await attackResult, latencies, statuses };
  } finally {
    prober.stdin.end();
    await exited;
  }
}
