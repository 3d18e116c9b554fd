/**
 * Helpers of the guide tests: cut fenced blocks out of a Markdown page, and run a sample as a user
 * would (its own file, its own process, `node --import tsx`), waiting for the line in which it
 * prints its URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (samples are written inside it, so that the package resolves to itself). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The fenced blocks of `lang` (```ts also matches ```typescript) of a Markdown text, in order. */
export function fencedBlocks(markdown: string, lang: string): string[] {
  const names = lang === 'ts' ? 'ts|typescript' : lang;
  const fence = new RegExp('^```(?:' + names + ')[ \\t]*\\n([\\s\\S]*?)^```[ \\t]*$', 'gm');
  const blocks: string[] = [];
  for (let m = fence.exec(markdown); m; m = fence.exec(markdown)) blocks.push(m[1]!);
  return blocks;
}

/** One `HTTP/1.1 <status> <reason>` block of a guide, with its headers (lower-cased names). */
export interface HttpExample {
  status: number;
  headers: Record<string, string>;
}

/** Parses an ```http block showing a response head. */
export function parseHttpExample(block: string): HttpExample {
  const [statusLine = '', ...lines] = block.trim().split('\n');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine);
  if (!status) throw new Error(`not a response head: ${statusLine}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(status[1]), headers };
}

/** A sample running in its own process. */
export interface RunningSample {
  /** The URL the sample printed (`listening on <url>`). */
  readonly url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** Stops it (SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Writes the sample and its side files into `test/artifacts/guides/<name>/` (emptied first). */
export async function prepareSample(name: string, files: Record<string, string>): Promise<string> {
  const dir = path.join(repoRoot, 'test', 'artifacts', 'guides', name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(path.join(dir, file), text);
  return dir;
}

/** Runs `node --import tsx <file>` in `dir` and resolves once it printed `listening on http://...`. */
export function startSample(dir: string, file: string, env: Record<string, string>, timeoutMs = 45_000): Promise<RunningSample> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: dir,
    env: { ...process.env, DEBUG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${file} did not print its URL within ${timeoutMs} ms; output:\n${text}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('utf8');
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, output: () => text, stop });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${code ?? signal}) before printing its URL; output:\n${text}`));
    });
  });
}

/** Runs `node --import tsx <file>` in `dir` to completion. */
export function runSample(
  dir: string,
  file: string,
  env: Record<string, string>,
  timeoutMs = 45_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: dir,
    env: { ...process.env, DEBUG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not finish within ${timeoutMs} ms; output:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
