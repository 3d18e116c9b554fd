/**
 * Runs every ```ts sample of the README and the guides that `guides.test.ts` does not already run
 * against a real authorization server: each in its own process, importing the built package the
 * way users do. Our factories validate their options when called, so a sample that drifted from the
 * API (a renamed option, a missing export) fails here. A sample must either finish with exit code 0
 * or, if it starts a server, still be up and silent after a few seconds. Fixed ports in samples are
 * swapped for ephemeral ones so the run never collides with anything on the machine.
 */
import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { tsBlocks } from './support/markdown.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const outDir = path.join(repoRoot, 'test', 'artifacts', 'run-samples');
// Run against a real authorization server by test/docs/getting-started.test.ts and guides.test.ts.
const RUN_ELSEWHERE = new Set(['docs/getting-started.md', 'docs/identity-providers.md']);
const SETTLE_MS = 4000;

interface Outcome {
  code: number | null;
  stillRunning: boolean;
  stderr: string;
}

function runSample(file: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: outDir,
      env: {
        ...process.env,
        CLIENT_SECRET: 'sample-secret',
        ADMIN_PASSWORD: 'sample-admin-password',
        ADMIN_TOKEN: 'sample-admin-token',
        ALICE_PASSWORD: 'sample-alice',
        BOB_PASSWORD: 'sample-bob',
        DEBUG: '',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: null, stillRunning: true, stderr });
    }, SETTLE_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stillRunning: false, stderr });
    });
  });
}

describe('code samples of the README and the guides, run', function () {
  this.timeout(120_000);
  const samples: Array<{ name: string; doc: string; code: string }> = [];

  before(async () => {
    await rm(outDir, { recursive: true, force: true });
    await mkdir(outDir, { recursive: true });
    // The gateway guide's samples load ./gateway.config.json: the example's, as a reader has it.
    await cp(path.join(repoRoot, 'examples', 'petstore', 'gateway.config.json'), path.join(outDir, 'gateway.config.json'));
    await cp(path.join(repoRoot, 'examples', 'petstore', 'policies'), path.join(outDir, 'policies'), { recursive: true });
    const docs = ['README.md', ...(await readdir(path.join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    for (const doc of docs) {
      if (RUN_ELSEWHERE.has(doc)) continue;
      tsBlocks(await readFile(path.join(repoRoot, doc), 'utf8')).forEach((block, i) => {
        if (block.startsWith('// fragment')) return;
        const code = block.replace(/\.listen\(\s*\d+/g, '.listen(0');
        samples.push({ name: `${doc.replace(/[/.]/g, '_')}_${i + 1}.ts`, doc: `${doc} sample ${i + 1}`, code });
      });
    }
    await Promise.all(samples.map((s) => writeFile(path.join(outDir, s.name), `${s.code}\nexport {};\n`)));
  });

  it('finds samples to run', () => {
    expect(samples.length).to.be.greaterThan(10);
  });

  it('every sample runs: exits 0, or serves without an error', async () => {
    const failures: string[] = [];
    // Two at a time: the machine has two cores, and each sample starts a Node process.
    for (let i = 0; i < samples.length; i += 2) {
      const batch = samples.slice(i, i + 2);
      const outcomes = await Promise.all(batch.map((s) => runSample(s.name)));
      outcomes.forEach((o, j) => {
        const ok = (o.code === 0 || o.stillRunning) && !/Error|error TS/.test(o.stderr);
        if (!ok) failures.push(`${batch[j]!.doc}: exit ${String(o.code)}\n${o.stderr.slice(0, 800)}`);
      });
    }
    expect(failures, failures.join('\n\n')).to.deep.equal([]);
  });
});
