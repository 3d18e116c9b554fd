/**
 * The `express-access-gateway serve` command as the tests run it: the built command in a child
 * process on loopback, its output collected.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { createClient } from 'redis';
import { repoRoot } from '../gateway/helpers.js';

export const cli = path.join(repoRoot, 'dist', 'server', 'cli.js');

/** A running `serve` child, its output so far, and helpers to wait on it. */
export interface Served {
  readonly child: ChildProcess;
  output(): string;
  /** What it wrote to each stream apart (the first 64 kB of each), where the stream matters. */
  streams(): { stdout: string; stderr: string };
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited(): Promise<number | null>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts `serve` with `args`. Its log is read as a person reads it on a terminal
 * (`LOG_FORMAT=pretty`), unless `env` asks for JSON.
 */
export function serve(args: string[], env: Record<string, string> = {}): Served {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, DEBUG: '', LOG_FORMAT: 'pretty', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  // The start of the output (what waitFor looks for) and its last megabyte: a child with debug
  // output on logs every request, and a long test under load must not hold all of it.
  const keep = (c: Buffer): void => {
    text += c.toString('utf8');
    if (text.length > 2_000_000) text = `${text.slice(0, 64_000)}\n…\n${text.slice(-1_000_000)}`;
  };
  const apart = { stdout: '', stderr: '' };
  const keepApart = (stream: 'stdout' | 'stderr') => (c: Buffer) => {
    if (apart[stream].length < 64_000) apart[stream] += c.toString('utf8');
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.stdout!.on('data', keepApart('stdout'));
  child.stderr!.on('data', keepApart('stderr'));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    streams: () => ({ ...apart }),
    exited: () => exit,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = pattern.exec(text);
        if (found !== null) return found;
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no ${pattern} in the output:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

export async function stop(served: Served | undefined): Promise<void> {
  if (served === undefined || served.child.exitCode !== null) return;
  served.child.kill('SIGTERM');
  await served.exited();
}

/** Removes what the instances left on the machine's PostgreSQL (their schema) and Redis (their key prefix). */
export async function dropSharedState(schema: string, keyPrefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
  const redis = createClient({ url: 'redis://127.0.0.1:6379' });
  await redis.connect();
  for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.del(keys);
  await redis.close();
}
