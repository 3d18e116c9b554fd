/**
 * No function of src/ runs over 150 lines, the functions it holds included: past that a function
 * holds several concerns, and its reader has to hold them all. Read with the TypeScript parser.
 */
import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const MAX_LINES = 150;

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) =>
      e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : Promise.resolve(e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []),
    ),
  );
  return nested.flat();
}

/** Each function of `file` (nested ones too) with its lines, from its first to its last. */
function functionLengths(file: string, text: string): Array<{ name: string; lines: number }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line;
  const found: Array<{ name: string; lines: number }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const name = (node as ts.FunctionLikeDeclaration).name?.getText(source) ?? `(anonymous at line ${lineOf(node.getStart(source)) + 1})`;
      found.push({ name, lines: lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1 });
    }
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

describe('architecture: function length', () => {
  it(`no function of src/ has more than ${MAX_LINES} lines`, async () => {
    const long: string[] = [];
    for (const file of await sourceFiles(SRC)) {
      for (const { name, lines } of functionLengths(file, await readFile(file, 'utf8'))) {
        if (lines > MAX_LINES) long.push(`${path.relative(SRC, file)}: ${name} (${lines} lines)`);
      }
    }
    expect(long, long.join('\n')).to.deep.equal([]);
  });

  it('measures what it claims: a function with the functions it holds, and each of those', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `function outer() {\n${body(100)}\n  const inner = () => {\n${body(60)}\n  };\n}\n`;
    const lengths = functionLengths('probe.ts', text);
    expect(lengths.find((f) => f.name === 'outer')?.lines).to.equal(164);
    expect(lengths.find((f) => f.name.startsWith('(anonymous'))?.lines).to.equal(62);
  });
});
