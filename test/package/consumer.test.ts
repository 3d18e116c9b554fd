/**
 * The package as a consumer sees it: pack the library, install the tarball into fresh projects
 * (offline, see support/packed.ts) and use it the way users do: plain JavaScript with `require`
 * and with `import`, TypeScript in CommonJS under `"module": "node16"`, in ESM under `nodenext`,
 * and with `bundler` resolution; and `attw` checks the types of every entry point under every
 * module resolution. Runs on the build made by `npm test`'s pretest step.
 */
import { rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';
import { PACKAGE_NAME, installOffline, packPackage, repoRoot, run, temporaryFolder, type PackedPackage } from './support/packed.js';

const attw = path.join(repoRoot, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');

/**
 * A gateway for one API relayed to a backend the script starts, asked twice (a relayed 200 and a
 * 404 problem+json for an API it does not have), then a policy evaluated through the xacml
 * subpath; prints what it saw as JSON. `load` is how the script gets the package.
 */
function gatewayScript(load: string): string {
  return `${load}
const backend = http.createServer((req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ path: req.url })));
const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(\`http://127.0.0.1:\${server.address().port}\`)));
const main = async () => {
  const backendUrl = await listen(backend);
  const gateway = createGateway({
    config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: backendUrl } }] },
    messages: 'en',
  });
  await gateway.ready();
  const app = express();
  app.use(gateway.router);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = \`http://127.0.0.1:\${server.address().port}/gateway\`;
  const relayed = await fetch(\`\${url}/Ente/Echo/v1/pets/10?x=1\`);
  const unknown = await fetch(\`\${url}/Ente/Nope/v1/pets\`);
  const pdp = createPdp({ policies: [\`<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os" PolicyId="p"
    RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:permit-overrides">
    <Target/><Rule RuleId="ok" Effect="Permit"/></Policy>\`] });
  const decision = pdp.evaluate({ subjects: [], resources: [{ attributes: [] }], action: { attributes: [] },
    environment: { attributes: [] } }).results[0].decision;
  console.log(JSON.stringify({
    relayed: { status: relayed.status, body: await relayed.json(), transaction: relayed.headers.get('gateway-transaction-id') },
    unknown: { status: unknown.status, type: unknown.headers.get('content-type'), body: await unknown.json() },
    decision,
    isGatewayError: new GatewayError('ERR_TOKEN_MISSING', { realm: 'r' }) instanceof Error,
  }));
  server.close();
  backend.close();
  await gateway.close();
};
main().catch((error) => { console.error(error); process.exitCode = 1; });
`;
}

interface GatewayRun {
  relayed: { status: number; body: unknown; transaction: string | null };
  unknown: { status: number; type: string | null; body: { status: number; gateway_status: string } };
  decision: string;
  isGatewayError: boolean;
}

function expectGatewayRun(stdout: string): void {
  const out = JSON.parse(stdout) as GatewayRun;
  expect(out.relayed.status).to.equal(200);
  expect(out.relayed.body).to.deep.equal({ path: '/pets/10?x=1' });
  expect(out.relayed.transaction).to.match(/^[0-9a-f-]{36}$/);
  expect(out.unknown.status).to.equal(404);
  expect(out.unknown.type).to.match(/^application\/problem\+json/);
  expect(out.unknown.body).to.include({ status: 404, gateway_status: 'protocol:GATEWAY-404' });
  expect(out.decision).to.equal('Permit');
  expect(out.isGatewayError).to.equal(true);
}

/** A TypeScript consumer: the gateway on a typed Express app, `req.gateway` and an xacml type. */
const TS_CONSUMER = `import express from 'express';
import { createGateway, requireToken, introspect, problemJsonErrorHandler, GatewayError, type GatewayContext } from 'express-access-gateway';
import { createPdp, type XacmlResponse } from 'express-access-gateway/xacml';

const app = express();
app.get('/hello', (req, res) => {
  const context: GatewayContext | undefined = req.gateway;
  const subject: string | undefined = req.gateway?.token?.info?.subject;
  const scopes: string[] | undefined = req.gateway?.token?.info?.scopes;
  // @ts-expect-error -- the check can fail: req.gateway is typed (were it any, this would be an unused directive)
  const wrong: number | undefined = req.gateway?.token?.info?.subject;
  res.json({ id: context?.transactionId, subject, scopes, wrong });
});
const error = new GatewayError('ERR_TOKEN_MISSING', { realm: 'idp' });
const status: number = error.status;
const decide = (r: XacmlResponse): string => r.results[0]?.decision ?? 'none';
const gateway = createGateway({ config: { apis: [] } });
console.log(JSON.stringify({ status, router: typeof gateway.router, decide: decide({ results: [] }) }));
void gateway.close();
export { app, requireToken, introspect, problemJsonErrorHandler, createPdp };
`;

// Parsed and bound declaration files, shared by the consumers' programs: the three projects read
// the same @types/node, Express and dependency declarations (a file's key has its module format).
const sourceFiles = new Map<string, ts.SourceFile>();

function cachingHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.endsWith('.d.ts') && !fileName.endsWith('.d.cts') && !fileName.endsWith('.d.mts'))
      return read(fileName, languageVersion, onError, shouldCreate);
    const key = `${fileName} ${JSON.stringify(languageVersion)}`;
    let file = sourceFiles.get(key);
    if (!file) {
      file = read(fileName, languageVersion, onError, shouldCreate);
      if (file) sourceFiles.set(key, file);
    }
    return file;
  };
  return host;
}

/**
 * Type-checks a consumer project the way `tsc -p` does, with `skipLibCheck` off for this package's
 * declarations only (a consumer without skipLibCheck must get no error from them; checking all of
 * @types/node as well would only cost time). Returns the errors, formatted, and the package's
 * declaration files the program read.
 */
function typeCheck(dir: string, emit: boolean): { errors: string[]; declarations: string[] } {
  const host: ts.ParseConfigFileHost = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  };
  const config = ts.getParsedCommandLineOfConfigFile(path.join(dir, 'tsconfig.json'), { skipLibCheck: false }, host);
  if (!config) throw new Error(`no tsconfig.json in ${dir}`);
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options, host: cachingHost(config.options) });
  const ours = program.getSourceFiles().filter((f) => !f.isDeclarationFile || f.fileName.includes(`/node_modules/${PACKAGE_NAME}/`));
  const diagnostics = [
    ...config.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
    // Emit only the consumer's own files: emit() alone would first check every file, @types/node included.
    ...(emit ? ours.filter((f) => !f.isDeclarationFile).flatMap((f) => program.emit(f).diagnostics) : []),
  ];
  const format = (d: ts.Diagnostic): string =>
    `${d.file ? path.relative(dir, d.file.fileName) : ''} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  return {
    errors: diagnostics.map(format),
    declarations: ours.filter((f) => f.isDeclarationFile).map((f) => path.relative(dir, f.fileName)),
  };
}

/** A project folder with this package.json and tsconfig.json, the tarball installed, and TS_CONSUMER. */
async function tsProject(
  root: string,
  name: string,
  manifest: Record<string, unknown>,
  compilerOptions: Record<string, unknown>,
  packed: PackedPackage,
): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, ...manifest }));
  const options = { strict: true, target: 'ES2022', types: ['node'], esModuleInterop: true, ...compilerOptions };
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: ['consumer.ts'] }));
  await writeFile(path.join(dir, 'consumer.ts'), TS_CONSUMER);
  await installOffline(dir, packed.tarball, ['express', '@types/express', '@types/node']);
  return dir;
}

describe('the published package', function () {
  this.timeout(120_000);
  let work: string;
  let packed: PackedPackage;

  let attwRun: Promise<{ stdout: string }>;

  before(async () => {
    packed = await packPackage();
    // attw reads the tarball in a process of its own, alongside the consumers below.
    attwRun = run(process.execPath, [attw, packed.tarball, '--format', 'json'], { cwd: repoRoot }).catch((e: { stdout?: string }) => ({
      stdout: e.stdout ?? '{}',
    }));
    work = await temporaryFolder('eag-consumer-');
    process.once('exit', () => rmSync(work, { recursive: true, force: true }));
  });

  it('contains dist (JS, .d.ts, .d.cts, source maps), README, LICENSE, CHANGELOG and nothing else', () => {
    const files = [...packed.files].sort();
    const outside = files.filter((f) => !f.startsWith('dist/') && !['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'].includes(f));
    expect(outside, 'files outside dist/').to.deep.equal([]);
    for (const required of [
      'dist/index.js',
      'dist/index.cjs',
      'dist/index.d.ts',
      'dist/index.d.cts',
      'dist/index.js.map',
      'dist/xacml/index.js',
      'dist/xacml/index.cjs',
      'dist/xacml/index.d.ts',
      'dist/xacml/index.d.cts',
      'dist/xacml/cli.js',
      'dist/config.schema.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
    ]) {
      expect(files, required).to.include(required);
    }
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|examples\/|secret|\.tsbuildinfo$/i.test(f))).to.deep.equal([]);
    // Every declaration has its CommonJS twin, so no CommonJS import ends on an ES module's types.
    const declarations = files.filter((f) => f.endsWith('.d.ts'));
    expect(declarations.filter((f) => !files.includes(f.replace(/\.d\.ts$/, '.d.cts')))).to.deep.equal([]);
  });

  it("contains the consoles' page files, read from beside their modules at start-up", () => {
    for (const page of ['console.html', 'console.css', 'console.js', 'texts.json'])
      expect(packed.files).to.include(`dist/monitoring/page/${page}`);
    for (const page of ['configuration.html', 'configuration.css', 'configuration.js', 'texts.json'])
      expect(packed.files).to.include(`dist/configuration/page/${page}`);
    expect(packed.files).to.include('dist/page-assets/icon.svg');
    expect(packed.files.filter((f) => f.endsWith('pages.d.ts'))).to.deep.equal([]);
  });

  describe('plain JavaScript', () => {
    let dir: string;

    before(async () => {
      dir = path.join(work, 'js');
      await mkdir(dir, { recursive: true });
      // What `npm init -y` writes: no "type", so .js files are CommonJS.
      await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'js-consumer', version: '1.0.0' }));
      await installOffline(dir, packed.tarball, ['express']);
    });

    it('CommonJS: require() gives a gateway that relays and answers problem+json, and the xacml subpath', async () => {
      const load = `const http = require('node:http');
const express = require('express');
const { createGateway, GatewayError } = require('express-access-gateway');
const { createPdp } = require('express-access-gateway/xacml');`;
      await writeFile(path.join(dir, 'index.js'), gatewayScript(load));
      const { stdout, stderr } = await run(process.execPath, ['index.js'], { cwd: dir });
      expectGatewayRun(stdout);
      expect(stderr, 'no warning (require of an ES module from node_modules is silent)').to.equal('');
    });

    it('ESM: import gives the same, and require and import share one module instance', async () => {
      const load = `import http from 'node:http';
import { createRequire } from 'node:module';
import express from 'express';
import { createGateway, GatewayError } from 'express-access-gateway';
import { createPdp } from 'express-access-gateway/xacml';
const required = createRequire(import.meta.url)('express-access-gateway');
if (required.GatewayError !== GatewayError || required.createGateway !== createGateway) throw new Error('two instances');`;
      await writeFile(path.join(dir, 'index.mjs'), gatewayScript(load));
      const { stdout, stderr } = await run(process.execPath, ['index.mjs'], { cwd: dir });
      expectGatewayRun(stdout);
      expect(stderr).to.equal('');
    });
  });

  describe('TypeScript, against the published types (req.gateway included; their own errors reported too)', () => {
    /** The package's declarations a program read: the CommonJS ones or the ESM ones, and never both. */
    function expectDeclarations(declarations: string[], extension: '.d.cts' | '.d.ts'): void {
      const other = extension === '.d.ts' ? '.d.cts' : '.d.ts';
      expect(declarations.filter((f) => f.endsWith(extension)).length, `${extension} files read`).to.be.greaterThan(20);
      expect(
        declarations.filter((f) => f.endsWith(other)),
        `${other} files read`,
      ).to.deep.equal([]);
    }

    it('CommonJS under "module": "node16": type-checks, compiles to require() and runs', async () => {
      const dir = await tsProject(work, 'ts-node16-cjs', {}, { module: 'node16', moduleResolution: 'node16', outDir: 'out' }, packed);
      const { errors, declarations } = typeCheck(dir, true);
      expect(errors).to.deep.equal([]);
      expectDeclarations(declarations, '.d.cts');
      const { stdout } = await run(process.execPath, ['out/consumer.js'], { cwd: dir });
      expect(JSON.parse(stdout)).to.deep.equal({ status: 400, router: 'function', decide: 'none' });
    });

    it('ESM under "module": "nodenext": type-checks', async () => {
      const dir = await tsProject(work, 'ts-nodenext-esm', { type: 'module' }, { module: 'nodenext', noEmit: true }, packed);
      const { errors, declarations } = typeCheck(dir, false);
      expect(errors).to.deep.equal([]);
      expectDeclarations(declarations, '.d.ts');
    });

    it('"moduleResolution": "bundler": type-checks', async () => {
      const options = { module: 'preserve', moduleResolution: 'bundler', noEmit: true };
      const dir = await tsProject(work, 'ts-bundler', { type: 'module' }, options, packed);
      const { errors, declarations } = typeCheck(dir, false);
      expect(errors).to.deep.equal([]);
      expectDeclarations(declarations, '.d.ts');
    });
  });

  // Last, so that attw (started in before()) ran while the consumers did.
  describe('attw', () => {
    it('finds no problem: every entry point has types under node10, node16 (CommonJS and ESM) and bundler', async () => {
      const { stdout } = await attwRun;
      const report = JSON.parse(stdout) as {
        problems: Record<string, unknown>;
        analysis: { entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string } }> }> };
      };
      expect(report.problems, JSON.stringify(report.problems, null, 2)).to.deep.equal({});
      for (const entry of ['.', './xacml']) {
        const resolutions = report.analysis.entrypoints[entry]?.resolutions ?? {};
        const types = Object.fromEntries(
          Object.entries(resolutions).map(([kind, r]) => [kind, path.basename(r.resolution?.fileName ?? '')]),
        );
        expect(types, entry).to.deep.equal({
          node10: 'index.d.cts',
          'node16-cjs': 'index.d.cts',
          'node16-esm': 'index.d.ts',
          bundler: 'index.d.ts',
        });
      }
    });
  });
});
