/**
 * Keeps the guides honest: every ```ts block of README.md and docs/*.md is extracted and type-checked
 * against the built package (imported as `express-access-gateway`, the way users import it). A block
 * that is deliberately partial starts with the line `// fragment` and is skipped by the type-check
 * (they are few, and still read by people); blocks that run are also executed by the guide tests.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { tsBlocks } from './support/markdown.js';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('code samples in the README and the guides', function () {
  this.timeout(120_000);
  const outDir = path.join(repoRoot, 'test', 'artifacts', 'samples');

  it('type-check against the published types', async () => {
    const docs = ['README.md', ...(await readdir(path.join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    await rm(outDir, { recursive: true, force: true });
    await mkdir(outDir, { recursive: true });
    const files: string[] = [];
    const writes: Array<Promise<void>> = [];
    for (const doc of docs) {
      const blocks = tsBlocks(await readFile(path.join(repoRoot, doc), 'utf8'));
      blocks.forEach((block, i) => {
        if (block.startsWith('// fragment')) return;
        const name = `${doc.replace(/[/.]/g, '_')}_${i + 1}.ts`;
        files.push(name);
        // Each sample is its own module, so names do not clash between samples.
        writes.push(writeFile(path.join(outDir, name), `${block}\nexport {};\n`));
      });
    }
    expect(files.length, 'number of samples found').to.be.greaterThan(0);
    await Promise.all(writes);
    await writeFile(
      path.join(outDir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../../tsconfig.base.json',
        compilerOptions: { noEmit: true, noUnusedLocals: false, types: ['node'] },
        files,
      }),
    );
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', path.join(outDir, 'tsconfig.json')], { cwd: outDir }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout ?? String(e),
    );
    expect(result, 'type errors in documentation samples').to.equal('');
  });
});
