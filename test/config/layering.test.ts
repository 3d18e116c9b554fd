/**
 * src/config/ sits below the gateway (src/gateway/) and the configuration console
 * (src/configuration/): both read the configuration through it, so it may import neither (else
 * a change of the console's or the gateway's internals could change what a valid file is).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const ABOVE = ['gateway', 'configuration'].map((folder) => path.join(SRC, folder) + path.sep);

/** Every relative module specifier of `text` (static imports and exports, dynamic imports). */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) found.push(match[1]!);
  return found;
}

async function files(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

describe('src/config/ layering', () => {
  it('imports nothing from src/gateway/ or src/configuration/', async () => {
    const offending: string[] = [];
    const modules = await files(path.join(SRC, 'config'));
    expect(modules.length).to.be.greaterThan(3);
    for (const file of modules) {
      for (const specifier of specifiers(await readFile(file, 'utf8'))) {
        const target = path.resolve(path.dirname(file), specifier);
        if (ABOVE.some((folder) => target.startsWith(folder))) offending.push(`${path.relative(SRC, file)} → ${specifier}`);
      }
    }
    expect(offending).to.deep.equal([]);
  });
});
