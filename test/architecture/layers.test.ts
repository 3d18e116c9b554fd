/**
 * The rooms of src/ and the order they stand in: every module may import from its own folder and
 * from the layers below its own, never from a layer above or beside it. The table below is the one
 * place that says which layer a folder (or a root file) is in; a folder missing from it fails the
 * test until it is given one.
 *
 * The graph is read from every src/**\/*.ts file's import and export specifiers (type-only and
 * dynamic imports included: a type that points up is a dependency all the same).
 *
 * Run it alone: npx mocha --no-config --node-option import=tsx --extension ts test/architecture/layers.test.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import ts from 'typescript';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

/**
 * Low to high. A root file is named with its extension; a folder by its name. Units in one layer
 * import none of each other.
 */
const LAYERS: readonly (readonly string[])[] = [
  // What everything uses: the error catalogue, option checks, debug logging, issues with paths.
  ['errors.ts', 'options.ts', 'log.ts', 'issues.ts'],
  // Pure parts: the canonical request target and operation templates, the XACML evaluator,
  // PostgreSQL plumbing, the pages' file reading, trustProxy's compiled check.
  // The features' schemas are checked with schema.ts.
  ['url', 'xacml', 'postgres', 'page-assets', 'trust-proxy.ts', 'schema.ts'],
  // The per-request state (it carries the XACML decision).
  ['context.ts'],
  // What the gateway writes on and keeps of every exchange: the identity head, the relay's capture.
  ['exchange'],
  ['problem'],
  ['cluster'],
  // Traffic control's engine: policies, stores (local, Redis through the cluster's connection).
  ['traffic'],
  ['token'],
  ['authorize'],
  // The record model, the recorder, the stores.
  ['record'],
  // What every router of the admin listener shares.
  ['admin'],
  // The configuration file: its schema, checks, loading and cache.
  ['config'],
  ['operators'],
  ['observability'],
  ['monitoring'],
  // The configuration console (its page builds on the monitoring console's style sheet).
  ['configuration'],
  ['gateway'],
  ['server'],
  ['index.ts'],
];

const layerOf = new Map<string, number>();
LAYERS.forEach((units, layer) => units.forEach((unit) => layerOf.set(unit, layer)));

/** The unit of a path relative to src/: its folder, or the root file itself. */
function unitOf(file: string): string {
  return file.split('/')[0]!;
}

function sourceFiles(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) files.push(...sourceFiles(path.join(dir, entry.name), relative));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(relative);
  }
  return files;
}

interface Arrow {
  /** The importing file, relative to src/. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  /** The imported file, relative to src/. */
  target: string;
  from: string;
  to: string;
}

function arrows(): Arrow[] {
  const found: Arrow[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(path.join(SRC, file), 'utf8');
    // Static imports and exports (type-only included), `import('...')` and `import x = require(...)`.
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts');
      const from = unitOf(file);
      const to = unitOf(target);
      if (from !== to) found.push({ file, specifier, target, from, to });
    }
  }
  return found;
}

describe('the layers of src/', () => {
  const graph = arrows();

  it('reads the imports of every module', () => {
    expect(sourceFiles(SRC).length).to.be.greaterThan(150);
    expect(graph.length).to.be.greaterThan(300);
  });

  it('gives every folder and root file of src/ a layer', () => {
    const units = new Set(sourceFiles(SRC).map(unitOf));
    const missing = [...units].filter((unit) => !layerOf.has(unit));
    expect(missing, 'add them to LAYERS in test/architecture/layers.test.ts').to.deep.equal([]);
  });

  it('has no arrow up or sideways: each import points to a lower layer', () => {
    const wrong = graph
      .filter((arrow) => layerOf.has(arrow.from) && layerOf.has(arrow.to))
      .filter((arrow) => layerOf.get(arrow.to)! >= layerOf.get(arrow.from)!)
      .map(
        (arrow) =>
          `src/${arrow.file} imports '${arrow.specifier}' (${arrow.from} -> ${arrow.to}: ${layerOf.get(arrow.to)! > layerOf.get(arrow.from)! ? 'up' : 'sideways'})`,
      );
    expect(wrong).to.deep.equal([]);
  });

  it('has no pair of folders importing each other', () => {
    const pairs = new Map<string, Arrow>();
    for (const arrow of graph) if (!pairs.has(`${arrow.from} ${arrow.to}`)) pairs.set(`${arrow.from} ${arrow.to}`, arrow);
    const mutual: string[] = [];
    for (const [key, arrow] of pairs) {
      const back = pairs.get(`${arrow.to} ${arrow.from}`);
      if (back !== undefined && arrow.from < arrow.to) {
        mutual.push(
          `${key.replace(' ', ' <-> ')}: src/${arrow.file} imports '${arrow.specifier}', src/${back.file} imports '${back.specifier}'`,
        );
      }
    }
    expect(mutual).to.deep.equal([]);
  });
});
