/**
 * The diagnostic codes: docs/console.md lists the events of the `DiagnosticCode` union in a table,
 * and this test keeps the two equal (the error codes are docs/errors.md's, kept by errors.test.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { addDiagnostic, diagnosticCodes, gatewayContext, type DiagnosticCode } from '../src/context.js';
import { errorCatalogue } from '../src/errors.js';

const docsFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'console.md');

/** The codes of the table that follows the `diagnostic codes` marker of docs/console.md. */
async function documentedEvents(): Promise<string[]> {
  const text = await readFile(docsFile, 'utf8');
  const from = text.indexOf('<!-- diagnostic codes');
  expect(from, 'the diagnostic codes marker of docs/console.md').to.be.above(-1);
  const codes: string[] = [];
  for (const line of text.slice(from).split('\n').slice(1)) {
    if (!line.startsWith('|')) {
      if (codes.length > 0) break;
      continue;
    }
    const match = /^\| `([A-Z_]+)` \|/.exec(line);
    if (match !== null) codes.push(match[1]!);
  }
  return codes;
}

describe('diagnostic codes', () => {
  it('docs/console.md lists every event code of DiagnosticCode, and no other', async () => {
    const events = diagnosticCodes.filter((code) => !Object.hasOwn(errorCatalogue, code));
    expect((await documentedEvents()).sort()).to.deep.equal([...events].sort());
  });

  it('diagnosticCodes holds every catalogue code and no duplicate', () => {
    expect(new Set(diagnosticCodes).size).to.equal(diagnosticCodes.length);
    for (const code of Object.keys(errorCatalogue)) expect(diagnosticCodes).to.include(code);
  });

  it('every code written by src/ is a DiagnosticCode', async () => {
    // The type checks literal codes at compile time; this catches a code written through a variable.
    const { readdir } = await import('node:fs/promises');
    const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
    const files = (await readdir(srcDir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    const written = new Set<string>();
    for (const file of files) {
      const text = await readFile(path.join(srcDir, file), 'utf8');
      for (const m of text.matchAll(/addDiagnostic\([^,]+,\s*'[a-z]+',\s*'([A-Z_]+)'/g)) written.add(m[1]!);
      for (const m of text.matchAll(/level: '[a-z]+', code: '([A-Z_]+)'/g)) written.add(m[1]!);
    }
    expect(written.size).to.be.above(5);
    for (const code of written) expect(diagnosticCodes, code).to.include(code as DiagnosticCode);
  });

  it('addDiagnostic appends a line to the request context', () => {
    const req = { headers: {} } as Parameters<typeof gatewayContext>[0];
    addDiagnostic(req, 'info', 'TOKEN_RECEIVED', 'in the Authorization header');
    const lines = gatewayContext(req).diagnostics;
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ code: 'TOKEN_RECEIVED', level: 'info', message: 'in the Authorization header' });
  });
});
