/**
 * The package's CommonJS face, written into dist/ after `tsc`: the library is ESM, and Node >= 20.19
 * loads it with `require()`, but TypeScript under `"module": "node16"` refuses to give a CommonJS
 * file the types of an ES module (TS1479). So each entry point gets
 *
 * - `index.cjs`, `module.exports = require('./index.js')`: CommonJS and ESM consumers share the one
 *   ES module instance (no dual-package state: one token cache, one store);
 * - a `.d.cts` beside every `.d.ts`: the same declarations, read as CommonJS. Relative specifiers
 *   point at the `.d.cts` siblings, and imports of packages that are ES modules only (`jose`,
 *   `openid-client`) become type-only imports with `resolution-mode: import`, so that a CommonJS
 *   consumer type-checks even without `skipLibCheck`.
 *
 * package.json's `require` conditions name these files; `attw` (test/package/consumer.test.ts) checks
 * the result for every module resolution.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const dist = path.resolve(process.argv[2] ?? 'dist');
const ENTRY_POINTS = ['index.js', 'xacml/index.js'];

function declarationFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.d.ts'))
    .map((file) => path.join(dir, file));
}

/** The format TypeScript gives a declaration file: `.d.mts` and `.d.ts` in a "type": "module" package are ESM. */
function isEsmDeclaration(file: string): boolean {
  if (file.endsWith('.d.mts')) return true;
  if (file.endsWith('.d.cts')) return false;
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { type?: string }).type === 'module';
    } catch {
      // no package.json here: look one folder up
    }
  }
  return false;
}

const esmOnly = new Map<string, boolean>();
const compilerOptions: ts.CompilerOptions = { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 };

/** Whether a CommonJS file's `require` of `specifier` resolves to ES module declarations. */
function resolvesToEsm(specifier: string, fromFile: string): boolean {
  const known = esmOnly.get(specifier);
  if (known !== undefined) return known;
  const resolved = ts.resolveModuleName(
    specifier,
    fromFile,
    compilerOptions,
    ts.sys,
    undefined,
    undefined,
    ts.ModuleKind.CommonJS,
  ).resolvedModule;
  if (!resolved) throw new Error(`${fromFile}: ${specifier} does not resolve from a CommonJS file`);
  const esm = isEsmDeclaration(resolved.resolvedFileName);
  esmOnly.set(specifier, esm);
  return esm;
}

const isRelative = (specifier: string): boolean => specifier.startsWith('./') || specifier.startsWith('../');
const IMPORT_MODE = " with { 'resolution-mode': 'import' }";

interface Edit {
  start: number;
  end: number;
  text: string;
}

/** The edits that turn one `.d.ts` text into its `.d.cts` text. */
function commonJsEdits(file: string, text: string): Edit[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edits: Edit[] = [];
  const visit = (node: ts.Node): void => {
    let literal: ts.StringLiteral | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      literal = node.moduleSpecifier;
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal))
      literal = node.argument.literal;
    if (literal) {
      const specifier = literal.text;
      if (isRelative(specifier)) {
        if (!specifier.endsWith('.js')) throw new Error(`${file}: relative import without .js: ${specifier}`);
        edits.push({ start: literal.getStart(source) + 1, end: literal.getEnd() - 1, text: `${specifier.slice(0, -3)}.cjs` });
      } else if (!specifier.startsWith('node:') && resolvesToEsm(specifier, file.replace(/\.d\.ts$/, '.d.cts'))) {
        edits.push(...esmImportEdits(node, file, source));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edits;
}

/** A reference to an ES-module-only package, made type-only with `resolution-mode: import`. */
function esmImportEdits(node: ts.Node, file: string, source: ts.SourceFile): Edit[] {
  if (ts.isImportTypeNode(node)) {
    if (node.attributes) throw new Error(`${file}: import type with attributes: ${node.getText(source)}`);
    return [{ start: node.argument.getEnd(), end: node.argument.getEnd(), text: `, { with: { 'resolution-mode': 'import' } }` }];
  }
  if (!ts.isImportDeclaration(node) || !node.importClause || node.attributes)
    throw new Error(`${file}: cannot make this reference to an ES module type-only: ${node.getText(source)}`);
  const edits: Edit[] = [];
  const clause = node.importClause;
  if (!clause.isTypeOnly) {
    edits.push({ start: clause.getStart(source), end: clause.getStart(source), text: 'type ' });
    // `import type { type X }` is an error: the inner modifiers go.
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamedImports(bindings)) {
      for (const element of bindings.elements) {
        if (element.isTypeOnly) edits.push({ start: element.getStart(source), end: element.getStart(source) + 'type '.length, text: '' });
      }
    }
    if (clause.name && bindings) throw new Error(`${file}: default and named imports together: ${node.getText(source)}`);
  }
  edits.push({ start: node.moduleSpecifier.getEnd(), end: node.moduleSpecifier.getEnd(), text: IMPORT_MODE });
  return edits;
}

function applyEdits(text: string, edits: Edit[]): string {
  let out = text;
  for (const edit of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

for (const file of declarationFiles(dist)) {
  const text = readFileSync(file, 'utf8');
  writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), applyEdits(text, commonJsEdits(file, text)));
}
for (const entry of ENTRY_POINTS) {
  const base = path.basename(entry);
  writeFileSync(
    path.join(dist, entry.replace(/\.js$/, '.cjs')),
    `'use strict';\n// The ES module itself, loaded with require() (Node >= 20.19): one instance for require and import.\nmodule.exports = require('./${base}');\n`,
  );
}
