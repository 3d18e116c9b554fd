/**
 * The repository holds everything it builds, tests and documents with: a clone alone passes
 * `npm test`. No tracked file reads or names a folder beside the checkout, and the XACML 2.0
 * conformance data the evaluator is tested on is here, with its notice.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONFORMANCE = fileURLToPath(new URL('../fixtures/xacml2-conformance/', import.meta.url));
/** A path that leaves the checkout for a sibling folder. */
const OUTSIDE = /\.\.[\\/]+shared\b/;

/** The files git tracks, and those about to be (untracked, not ignored). */
function repositoryFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, maxBuffer: 64 << 20 });
  return listed
    .toString('utf8')
    .split('\0')
    .filter((file) => file !== '' && existsSync(`${ROOT}${file}`));
}

describe('architecture: a clone is self-contained', () => {
  it('no file of the repository reads or names a folder beside the checkout', () => {
    const files = repositoryFiles();
    expect(files.length, 'the repository lists its files').to.be.above(100);
    const naming = files.filter(
      (file) => !/\.(png|jpe?g|gif|ico|tgz|gz|zip)$/.test(file) && OUTSIDE.test(readFileSync(`${ROOT}${file}`, 'latin1')),
    );
    expect(naming).to.deep.equal([]);
  });

  it('the check above finds a path to a sibling folder', () => {
    // Written in two parts, or this file would name such a path itself.
    expect(OUTSIDE.test(`readFileSync('../..${'/shared'}/data.json')`)).to.equal(true);
    expect(OUTSIDE.test('import x from "./shared.js"')).to.equal(false);
  });

  it('holds the XACML 2.0 conformance data, its 318 cases and their notice', () => {
    const manifest = JSON.parse(readFileSync(`${CONFORMANCE}manifest.json`, 'utf8')) as {
      cases: Array<{ request: string; response: string }>;
    };
    expect(manifest.cases).to.have.length(318);
    for (const c of manifest.cases)
      expect(existsSync(`${CONFORMANCE}${c.request}`) && existsSync(`${CONFORMANCE}${c.response}`), c.request).to.equal(true);
    const readme = readFileSync(`${CONFORMANCE}README.md`, 'utf8');
    expect(readme).to.include('Copyright (C) OASIS Open').and.to.include('XACML Version 2.0 Conformance Tests');
  });
});
