/**
 * docs/xacml.md, "Writing and testing a policy with xacml-eval", followed as a reader does: the
 * policy and the request of its steps saved as the files they name, the step's edit made, and each
 * `$ npx xacml-eval ...` line run as written (the command's source, through tsx, in the folder of
 * those files, under test/artifacts/guides/ where tsx resolves). What the command prints must be what the guide shows, decision and exit code
 * included, so that the guide cannot say Permit where the evaluator says Deny.
 */
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { prepareSample, repoRoot } from './support/guide-runner.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'src', 'xacml', 'cli.ts');
const HEADING = '## Writing and testing a policy with `xacml-eval`';

interface Block {
  lang: string;
  text: string;
}

/** The fenced blocks of a Markdown text, list items' included (their indentation removed). */
function blocks(markdown: string): Block[] {
  const found: Block[] = [];
  const fence = /^( *)```(\w*)[ \t]*\n([\s\S]*?)^\1```[ \t]*$/gm;
  for (let m = fence.exec(markdown); m; m = fence.exec(markdown)) {
    const indent = m[1]!.length;
    const text = m[3]!
      .split('\n')
      .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
      .join('\n');
    found.push({ lang: m[2]!, text });
  }
  return found;
}

/** A shown run: the command line after `$ `, and what it prints. */
function shownRun(block: Block): { args: string[]; output: string } {
  const [first = '', ...rest] = block.text.split('\n');
  const command = /^\$ npx xacml-eval (.*)$/.exec(first);
  if (command === null) throw new Error(`not an xacml-eval run: ${first}`);
  return { args: command[1]!.trim().split(/\s+/), output: rest.join('\n') };
}

async function xacmlEval(dir: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: dir });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('docs/xacml.md: writing and testing a policy with xacml-eval, run as written', function () {
  this.timeout(60_000);
  let dir: string;
  let steps: Block[];

  before(async () => {
    const guide = await readFile(path.join(repoRoot, 'docs', 'xacml.md'), 'utf8');
    const start = guide.indexOf(HEADING);
    expect(start, 'the section is in the guide').to.be.above(-1);
    const end = guide.indexOf('\n## ', start + HEADING.length);
    // The usage line first, then the steps' blocks.
    steps = blocks(guide.slice(start, end === -1 ? undefined : end)).slice(1);
    expect(steps.map((b) => b.lang)).to.deep.equal(['xml', 'xml', '', 'xml', '', 'xml', '']);
    dir = await prepareSample('xacml-eval', {});
  });
  after(() => (dir === undefined ? undefined : rm(dir, { recursive: true, force: true })));

  it("step 1's policy is the runnable example's, its comment left out", async () => {
    const example = await readFile(path.join(repoRoot, 'examples', 'petstore', 'policies', 'petstore.xml'), 'utf8');
    expect(steps[0]!.text).to.equal(example.replace(/<!--[\s\S]*?-->\n/g, ''));
  });

  it('steps 1 to 4 and the typo: each decision and message the guide shows', async () => {
    const [policy, request, denied, added, permitted, typo, refused] = steps as [Block, Block, Block, Block, Block, Block, Block];
    await writeFile(path.join(dir, 'petstore.xml'), policy.text);
    await writeFile(path.join(dir, 'client3.xml'), request.text);

    // Step 3: client3 is not an allowed client.
    const deny = shownRun(denied);
    expect(deny.output).to.include('<Decision>Deny</Decision>');
    const first = await xacmlEval(dir, deny.args);
    expect(first, first.stderr).to.include({ code: 0, stderr: '' });
    expect(first.stdout).to.equal(deny.output);

    // Step 4: the line added after client2's, the same command again.
    const lines = policy.text.split('\n');
    const client2 = lines.findIndex((line) => line.includes('>client2<'));
    expect(client2, "client2's line").to.be.above(-1);
    lines.splice(client2 + 1, 0, added.text.replace(/\n$/, ''));
    await writeFile(path.join(dir, 'petstore.xml'), lines.join('\n'));
    const permit = shownRun(permitted);
    expect(permit.args).to.deep.equal(deny.args);
    expect(permit.output).to.include('<Decision>Permit</Decision>');
    const again = await xacmlEval(dir, permit.args);
    expect(again, again.stderr).to.include({ code: 0, stderr: '' });
    expect(again.stdout).to.equal(permit.output);

    // The typo: the clients' bag replaced by the value shown, in a copy of step 1's policy.
    const bag = /<Apply FunctionId="[^"]*:string-bag">\s*<AttributeValue[^>]*>client1<[\s\S]*?<\/Apply>/.exec(policy.text);
    expect(bag, "the clients' bag").to.not.equal(null);
    await writeFile(path.join(dir, 'broken.xml'), policy.text.replace(bag![0], typo.text.trim()));
    const broken = shownRun(refused);
    const failed = await xacmlEval(dir, broken.args);
    expect(failed.code).to.equal(2);
    expect(failed.stdout).to.equal('');
    expect(failed.stderr).to.equal(broken.output);
  });
});
