/** The `xacml-eval` command, run as a user runs it (through tsx on the source). */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { NS, XS, policy, policySet, rule } from './helpers.js';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(repoRoot, 'src', 'xacml', 'cli.ts');
const scenario = path.join(repoRoot, 'test', 'xacml', 'fixtures', 'scenario-policy.xml');

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}
async function xacmlEval(...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: repoRoot });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const requestXml = (clientId: string): string => `<Request xmlns="urn:oasis:names:tc:xacml:2.0:context:schema:os">
  <Subject><Attribute AttributeId="org:gateway:subject:token:clientId" DataType="${XS}string"><AttributeValue>${clientId}</AttributeValue></Attribute></Subject>
  <Resource/>
  <Action><Attribute AttributeId="org:gateway:action:token:audience" DataType="${XS}string"><AttributeValue>test-tool-app</AttributeValue></Attribute></Action>
  <Environment/>
</Request>`;

describe('xacml-eval CLI', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'xacml-eval-'));
    await writeFile(path.join(dir, 'permit.xml'), requestXml('client1'));
    await writeFile(path.join(dir, 'deny.xml'), requestXml('client3'));
    await writeFile(path.join(dir, 'root.xml'), policySet('root', 'first-applicable', '<PolicyIdReference>leaf</PolicyIdReference>'));
    await writeFile(path.join(dir, 'leaf.xml'), policy('leaf', 'first-applicable', rule('r', 'Deny')));
    await writeFile(path.join(dir, 'bad.xml'), `<Policy xmlns="${NS}" PolicyId="bad" RuleCombiningAlgId="nope"><Target/></Policy>`);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('prints the response XML with the decision (exit 0)', async () => {
    const permit = await xacmlEval('--policy', scenario, '--request', path.join(dir, 'permit.xml'));
    assert.equal(permit.code, 0, permit.stderr);
    assert.match(permit.stdout, /<Response xmlns="urn:oasis:names:tc:xacml:2.0:context:schema:os">/);
    assert.match(permit.stdout, /<Decision>Permit<\/Decision>/);
    assert.match(permit.stdout, /<StatusCode Value="urn:oasis:names:tc:xacml:1.0:status:ok"\/>/);
    const deny = await xacmlEval('--policy', scenario, '--request', path.join(dir, 'deny.xml'));
    assert.match(deny.stdout, /<Decision>Deny<\/Decision>/);
  });

  it('resolves --reference documents', async () => {
    const r = await xacmlEval(
      '--policy',
      path.join(dir, 'root.xml'),
      '--reference',
      path.join(dir, 'leaf.xml'),
      '--request',
      path.join(dir, 'permit.xml'),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /<Decision>Deny<\/Decision>/);
  });

  it('exits 2 with a clear message for bad usage', async () => {
    const none = await xacmlEval();
    assert.equal(none.code, 2);
    assert.match(none.stderr, /missing --policy/);
    assert.match(none.stderr, /Usage: xacml-eval/);
    const unknown = await xacmlEval('--policy', scenario, '--request', path.join(dir, 'permit.xml'), '--bogus');
    assert.equal(unknown.code, 2);
    const missingFile = await xacmlEval('--policy', path.join(dir, 'nope.xml'), '--request', path.join(dir, 'permit.xml'));
    assert.equal(missingFile.code, 2);
    assert.match(missingFile.stderr, /cannot read/);
  });

  it('exits 2 naming the element of an invalid policy', async () => {
    const r = await xacmlEval('--policy', path.join(dir, 'bad.xml'), '--request', path.join(dir, 'permit.xml'));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Unknown rule-combining algorithm "nope" \(at \/Policy\[@PolicyId="bad"\]\)/);
    assert.equal(r.stdout, '');
  });
});
