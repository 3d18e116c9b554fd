/**
 * `serve --help` and docs/deployment.md's table "Settings from the environment" name the same
 * flags with the same environment variables: a flag added to one of them only fails here.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { USAGE } from '../../src/server/settings.js';

/** `--flag` → its variables, from the usage's option lines (`--port <n>  [PORT] ...`). */
function usageFlags(): Map<string, string[]> {
  const flags = new Map<string, string[]>();
  const options = USAGE.slice(USAGE.indexOf('\nOptions'), USAGE.indexOf('\nEnvironment:'));
  // A flag's line, or a long flag alone on its line with its text on the next one.
  for (const m of options.matchAll(/^ {2}(--[a-z-]+)[^\n[]*(?:\n {20,})?\[([^\]]+)\]/gm)) {
    flags.set(
      m[1]!,
      [...m[2]!.matchAll(/\b[A-Z][A-Z_]+[A-Z]\b/g)].map((v) => v[0]),
    );
  }
  return flags;
}

/** `--flag` → its variables, from the table's rows (`| --port | PORT | 8080 |`). */
async function documentedFlags(): Promise<Map<string, string[]>> {
  const page = await readFile(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
  const start = page.indexOf('\n## Settings from the environment\n');
  expect(start).to.be.above(-1);
  const section = page.slice(start).split(/\n## /)[1]!;
  const flags = new Map<string, string[]>();
  for (const m of section.matchAll(/^\| `(--[a-z-]+)` \| ([^|]+) \|/gm)) {
    flags.set(
      m[1]!,
      [...m[2]!.matchAll(/`([A-Z][A-Z_]+[A-Z])`/g)].map((v) => v[1]!),
    );
  }
  return flags;
}

describe('serve --help and docs/deployment.md', () => {
  it('name the same flags, each with the same environment variables', async () => {
    const usage = usageFlags();
    expect(usage.get('--tls-client-auth')).to.deep.equal(['TLS_CLIENT_AUTH']);
    expect(usage.get('--trust-proxy')).to.deep.equal(['TRUST_PROXY', 'GATEWAY_TRUST_PROXY']);
    const documented = await documentedFlags();
    expect(Object.fromEntries(documented)).to.deep.equal(Object.fromEntries(usage));
  });
});
