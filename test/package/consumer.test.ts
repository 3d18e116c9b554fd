/**
 * The package as a consumer sees it: pack the library, install the tarball into a fresh project with
 * Express, and use it the way users do (ESM import, CommonJS require, TypeScript against the
 * published types). Runs on the build made by `npm test`'s pretest step.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface PackResult {
  filename: string;
  files: Array<{ path: string }>;
}

describe('the published package', function () {
  this.timeout(240_000);
  let work: string;
  let packed: PackResult;

  before(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'eag-consumer-'));
    // --ignore-scripts: the pretest step already built dist/; prepack would only build it again.
    const { stdout } = await run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: repoRoot,
    });
    const results = JSON.parse(stdout) as PackResult[];
    expect(results).to.have.length(1);
    packed = results[0]!;
    const project = path.join(work, 'app');
    await run('mkdir', ['-p', project]);
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'consumer-app', version: '1.0.0', private: true, type: 'module' }),
    );
    const devTypes = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    // The consumer's own dependencies, at the versions this repository tests with (npm's cache has
    // them after `npm ci`, so --prefer-offline keeps this quick).
    await run(
      npm,
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--ignore-scripts',
        path.join(work, packed.filename),
        `express@${devTypes.devDependencies['express']}`,
        `@types/express@${devTypes.devDependencies['@types/express']}`,
        `@types/node@${devTypes.devDependencies['@types/node']}`,
      ],
      { cwd: project },
    );
  });

  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('contains dist (JS, .d.ts, source maps), README, LICENSE, CHANGELOG and nothing else', () => {
    const files = packed.files.map((f) => f.path).sort();
    const outside = files.filter((f) => !f.startsWith('dist/') && !['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(f));
    expect(outside, 'files outside dist/').to.deep.equal([]);
    for (const required of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/index.js.map',
      'dist/xacml/index.js',
      'dist/xacml/index.d.ts',
      'dist/xacml/cli.js',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
    ]) {
      expect(files, required).to.include(required);
    }
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|examples\/|secret/i.test(f))).to.deep.equal([]);
  });

  it("contains the consoles' page files, read from beside their modules at start-up", () => {
    const files = packed.files.map((f) => f.path);
    for (const page of ['console.html', 'console.css', 'console.js', 'texts.json'])
      expect(files).to.include(`dist/monitoring/page/${page}`);
    for (const page of ['configuration.html', 'configuration.css', 'configuration.js', 'texts.json'])
      expect(files).to.include(`dist/configuration/page/${page}`);
    expect(files).to.include('dist/page-assets/icon.svg');
    expect(files.filter((f) => f.endsWith('pages.d.ts'))).to.deep.equal([]);
  });

  it('imports every factory with ESM and evaluates a policy through the xacml subpath', async () => {
    const project = path.join(work, 'app');
    await writeFile(
      path.join(project, 'esm.mjs'),
      `import { requireToken, introspect, xacmlAuthorize, forwardTokenHeaders, recordTransaction,
         problemJsonErrorHandler, createGateway, monitoringConsole, MemoryTransactionStore, GatewayError } from 'express-access-gateway';
       import { createPdp } from 'express-access-gateway/xacml';
       const names = { requireToken, introspect, xacmlAuthorize, forwardTokenHeaders, recordTransaction,
         problemJsonErrorHandler, createGateway, monitoringConsole, MemoryTransactionStore, GatewayError, createPdp };
       const kinds = Object.fromEntries(Object.entries(names).map(([k, v]) => [k, typeof v]));
       const pdp = createPdp({ policies: [\`<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="p"
         RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:permit-overrides">
         <Target/><Rule RuleId="ok" Effect="Permit"/></Policy>\`] });
       const decision = pdp.evaluate({ subjects: [], resources: [{ attributes: [] }], action: { attributes: [] },
         environment: { attributes: [] } }).results[0].decision;
       console.log(JSON.stringify({ kinds, decision }));`,
    );
    const { stdout } = await run(process.execPath, ['esm.mjs'], { cwd: project });
    const out = JSON.parse(stdout) as { kinds: Record<string, string>; decision: string };
    for (const [name, kind] of Object.entries(out.kinds)) expect(kind, name).to.equal('function');
    expect(out.decision).to.equal('Permit');
  });

  it('loads with require() from CommonJS', async () => {
    const project = path.join(work, 'app');
    await writeFile(
      path.join(project, 'cjs.cjs'),
      `const gateway = require('express-access-gateway');
       const xacml = require('express-access-gateway/xacml');
       console.log(JSON.stringify([typeof gateway.requireToken, typeof gateway.createGateway, typeof xacml.createPdp]));`,
    );
    const { stdout } = await run(process.execPath, ['cjs.cjs'], { cwd: project });
    expect(JSON.parse(stdout)).to.deep.equal(['function', 'function', 'function']);
  });

  it('type-checks a TypeScript consumer against the published types, including req.gateway', async () => {
    const project = path.join(work, 'app');
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const consumer = `import express from 'express';
import { requireToken, introspect, problemJsonErrorHandler, GatewayError, type GatewayContext } from 'express-access-gateway';
import { createPdp, type XacmlResponse } from 'express-access-gateway/xacml';

const app = express();
app.get('/hello', (req, res) => {
  const context: GatewayContext | undefined = req.gateway;
  const subject: string | undefined = req.gateway?.token?.info?.subject;
  const scopes: string[] | undefined = req.gateway?.token?.info?.scopes;
  res.json({ id: context?.transactionId, subject, scopes });
});
const error = new GatewayError('ERR_TOKEN_MISSING', { realm: 'idp' });
const status: number = error.status;
const decide = (r: XacmlResponse): string => r.results[0]?.decision ?? 'none';
export { app, status, decide, requireToken, introspect, problemJsonErrorHandler, createPdp };
`;
    await writeFile(path.join(project, 'consumer.ts'), consumer);
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project });

    // The check must be able to fail: a wrong type on req.gateway is reported.
    await writeFile(
      path.join(project, 'consumer.ts'),
      consumer.replace('const subject: string | undefined', 'const subject: number | undefined'),
    );
    const failed = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).then(
      () => '',
      (e: { stdout?: string }) => e.stdout ?? 'failed',
    );
    expect(failed).to.match(/consumer\.ts.*TS2322/);
  });
});
