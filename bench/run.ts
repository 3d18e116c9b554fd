/**
 * `npm run bench`: runs every benchmark script of this folder in sequence, each in its own
 * process (so that one's heap and JIT state do not weigh on the next), and prints their tables.
 * Scripts: every `bench/*.ts` except this runner and the helpers it lists (the servers under test,
 * the profile summary).
 */
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Files that are not benchmarks themselves. */
const HELPERS = new Set(['run.ts', 'servers.ts', 'profile-summary.ts']);

function runScript(file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function main(): Promise<void> {
  const scripts = (await readdir(here)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !HELPERS.has(f)).sort();
  const failed: string[] = [];
  const started = Date.now();
  for (const script of scripts) {
    console.log(`\n=== bench/${script} ${'='.repeat(Math.max(0, 70 - script.length))}\n`);
    const code = await runScript(path.join(here, script));
    if (code !== 0) failed.push(script);
  }
  console.log(
    `\n${scripts.length} benchmark(s) in ${Math.round((Date.now() - started) / 1000)} s${failed.length > 0 ? `; failed: ${failed.join(', ')}` : ''}`,
  );
  if (failed.length > 0) process.exitCode = 1;
}

void main();
