/**
 * docs/getting-started.md, followed as written, in an empty folder: its shell commands run in bash
 * in order (npm offline: see support/follow-guide.ts), the blocks it says to save are saved under
 * their names, its servers are started with its commands, and its requests (curl) are made; each
 * answer is compared with the one the page shows. The page's addresses of the demo authorization
 * server and backend (`npm start`'s 9000 and 9001) are those of an in-process demo authorization
 * server and petstore backend, and its samples' ports those they listened on (they are started
 * with PORT=0). Then each part's sample is probed further over real HTTP (console, relay headers,
 * authorization server down).
 */
import { readFileSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import { PACKAGE_NAME, packPackage, repoRoot, temporaryFolder } from '../package/support/packed.js';
import { guideBlocks, guideShellEnv, runShell, startServer, type GuideBlock, type RunningServer } from './support/follow-guide.js';
import { parseHttpExample } from './support/guide-runner.js';

const guide = readFileSync(path.join(repoRoot, 'docs', 'getting-started.md'), 'utf8');
const blocks = guideBlocks(guide);
const ADMIN_PASSWORD = 'change me'; // the page's
const NPM_START_PORTS = [8080, 8081, 9000, 9001];
const API = '/gateway/Ente/PetStore/v1';

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

async function problem(response: Response): Promise<Record<string, unknown>> {
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  return (await response.json()) as Record<string, unknown>;
}

/** curl -i's output: the status, the headers (lower-case names) and the body. */
function parseCurlResponse(output: string): { status: number; headers: Record<string, string>; body: string } {
  const split = /\r?\n\r?\n/.exec(output);
  const head = split ? output.slice(0, split.index) : output;
  const [statusLine = '', ...lines] = head.split(/\r?\n/);
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine);
  if (!status) throw new Error(`not an HTTP answer:\n${output}`);
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).trim().toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(status[1]), headers, body: split ? output.slice(split.index + split[0].length) : '' };
}

/** The blocks that show the answer to a `curl -i` block: the http/json blocks after it, up to the next command or file. */
function shownAnswer(index: number): { head?: GuideBlock; body?: GuideBlock } {
  const shown: { head?: GuideBlock; body?: GuideBlock } = {};
  for (const block of blocks.slice(index + 1)) {
    if (block.lang === 'sh' || block.file) break;
    if (block.lang === 'http') shown.head = block;
    if (block.lang === 'json') shown.body = block;
  }
  return shown;
}

/**
 * The answer the page shows, with the times it shows (`...At` epoch milliseconds, which no two runs
 * share) replaced by those of the actual answer.
 */
function withTimesOf(actual: unknown, shown: unknown): unknown {
  if (Array.isArray(shown) && Array.isArray(actual)) return shown.map((v, i) => withTimesOf(actual[i], v));
  if (!shown || typeof shown !== 'object' || !actual || typeof actual !== 'object') return shown;
  const real = actual as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(shown).map(([key, value]) => [
      key,
      /At$/.test(key) && typeof value === 'number' && typeof real[key] === 'number' ? real[key] : withTimesOf(real[key], value),
    ]),
  );
}

const summary = (block: GuideBlock): string =>
  block.text
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join(' ')
    .replace(/\s+\\\s+/g, ' ')
    .slice(0, 110);

describe('docs/getting-started.md, followed as written', function () {
  this.timeout(90_000);
  let work: string;
  let checkout: string;
  let project: string | undefined;
  let env: Record<string, string>;
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let server: RunningServer | undefined;
  const tokens: Record<string, string> = {};
  /** The page's http://127.0.0.1:<port> → where that is in this test. */
  const addresses = new Map<number, string>();
  let setups = 0;

  const localize = (text: string): string =>
    text.replace(/http:\/\/127\.0\.0\.1:(\d+)(?!\d)/g, (url, port: string) => addresses.get(Number(port)) ?? url);
  const inProject = (): string => {
    if (!project) throw new Error('the guide has not made its project yet');
    return project;
  };

  before(async () => {
    work = await temporaryFolder('eag-getting-started-');
    process.once('exit', () => rmSync(work, { recursive: true, force: true }));
    checkout = path.join(work, 'express-access-gateway'); // where `git clone` puts it
    await mkdir(checkout);
    const [packed, demo, pets] = await Promise.all([packPackage(), startDemoAuthServer({ port: 0 }), startPetstoreBackend({ port: 0 })]);
    as = demo;
    backend = pets;
    env = guideShellEnv(packed.tarball, { PORT: '0', CONSOLE_PORT: '0', ADMIN_PORT: '0' });
    addresses.set(9000, as.issuer);
    addresses.set(9001, backend.url);
    for (const id of ['client1', 'client3']) tokens[id] = await as.issueToken(id, `${id}-secret`, { scope: 'read' });
  });

  after(async () => {
    await server?.stop();
    await Promise.allSettled([as?.stop(), backend?.stop()]);
  });

  it('has the parts, commands, files and answers this test follows', () => {
    expect([...new Set(blocks.map((b) => b.part))].filter((p) => p >= 0)).to.deep.equal([0, 1, 2, 3]);
    expect(blocks.filter((b) => b.file).map((b) => b.file)).to.deep.equal([
      'server.ts',
      'policy.xml',
      'chain.ts',
      'gateway.config.json',
      'gateway.ts',
    ]);
    expect(blocks.filter((b) => b.lang === 'sh' && b.text.includes('npx tsx')).length, 'server starts').to.equal(3);
    // Every answer shown follows the request that gets it.
    blocks.forEach((block, i) => {
      if ((block.lang === 'http' || block.lang === 'json') && !block.file) {
        const request = blocks.slice(0, i).findLast((b) => b.lang === 'sh' || b.file);
        expect(request?.text, `the request of the answer at line ${block.line}`).to.match(/curl -i /);
      }
    });
  });

  /** One `it` per block of the part, in the page's order. */
  function followPart(part: number): void {
    blocks.forEach((block, index) => {
      if (block.part !== part) return;
      if (block.file) {
        it(`saves ${block.file} (line ${block.line})`, async () => {
          await writeFile(path.join(inProject(), block.file!), localize(block.text));
        });
      } else if (block.lang === 'sh' && block.text.includes('npx tsx')) {
        it(`starts: ${summary(block)}`, () => startSample(block));
      } else if (block.lang === 'sh' && block.text.includes('curl ')) {
        it(`${summary(block)}: the answer shown`, () => request(block, index));
      } else if (block.lang === 'sh') {
        it(`runs: ${summary(block)}`, () => setUp(block));
      }
    });
  }

  async function setUp(block: GuideBlock): Promise<void> {
    // "In the checkout", then "in the folder that holds the checkout", then in the project.
    const cwd = project ?? (setups++ === 0 ? checkout : work);
    const result = await runShell(`${block.text}\nprintf '\\n@cwd=%s\\n' "$(pwd)"\n`, cwd, env, 60_000);
    expect(result.code, `${block.text}\n${result.stdout}${result.stderr}`).to.equal(0);
    if (cwd !== checkout) project = /@cwd=(.*)\n$/.exec(result.stdout)![1]!;
  }

  async function startSample(block: GuideBlock): Promise<void> {
    await server?.stop(); // the page says to stop the previous one: the same ports
    server = undefined;
    const file = /npx tsx (\S+)/.exec(block.text)![1]!;
    const code = await readFile(path.join(inProject(), file), 'utf8');
    const port = Number(/process\.env\.PORT \?\? (\d+)/.exec(code)?.[1]);
    const secondPort = /process\.env\.(?:CONSOLE|ADMIN)_PORT \?\? (\d+)/.exec(code)?.[1];
    const ports = [port, ...(secondPort ? [Number(secondPort)] : [])];
    expect(
      ports.filter((p) => NPM_START_PORTS.includes(p)),
      `${file}'s ports must not be npm start's`,
    ).to.deep.equal([]);
    const ready = [/listening on (http:\/\/127\.0\.0\.1:\d+)/, ...(secondPort ? [/(?:console|admin) on (http:\/\/127\.0\.0\.1:\d+)/] : [])];
    server = await startServer(localize(block.text), inProject(), env, ready);
    ports.forEach((p, i) => addresses.set(p, server!.urls[i]!));
  }

  async function request(block: GuideBlock, index: number): Promise<void> {
    const result = await runShell(localize(block.text), inProject(), env);
    expect(result.code, `${block.text}\n${result.stdout}${result.stderr}`).to.equal(0);
    const comments = block.text.split('\n').filter((l) => l.startsWith('# '));
    if (comments.length > 0) {
      expect(comments, 'one answer shown').to.have.length(1);
      expect(withTimesOf(JSON.parse(result.stdout), JSON.parse(comments[0]!.slice(2)))).to.deep.equal(JSON.parse(result.stdout));
      return;
    }
    expect(block.text, 'a request with no answer shown prints its head').to.match(/curl -i /);
    const { head, body } = shownAnswer(index);
    expect(head, `the answer after line ${block.line}`).to.not.equal(undefined);
    const answer = parseCurlResponse(result.stdout);
    const example = parseHttpExample(head!.text);
    expect(answer.status).to.equal(example.status);
    for (const [name, value] of Object.entries(example.headers)) {
      expect(answer.headers[name], `header ${name}`).to.be.a('string');
      if (name === 'gateway-transaction-id') expect(answer.headers[name]).to.match(/^[0-9a-f-]{36}$/);
      else expect(answer.headers[name], `header ${name}`).to.equal(value);
    }
    if (body) expect(JSON.parse(answer.body)).to.deep.equal(JSON.parse(body.text));
  }

  describe('0. a project', () => {
    followPart(0);

    it('is an ES module project with Express, tsx and the package of the tarball installed', async () => {
      const manifest = JSON.parse(await readFile(path.join(inProject(), 'package.json'), 'utf8')) as { type?: string };
      expect(manifest.type).to.equal('module');
      const installed = JSON.parse(await readFile(path.join(inProject(), 'node_modules', PACKAGE_NAME, 'package.json'), 'utf8')) as {
        version: string;
      };
      const ours = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
      expect(installed.version).to.equal(ours.version);
      expect(guide, 'the tarball name the page installs').to.include(`${PACKAGE_NAME}-${ours.version}.tgz`);
    });

    it("the README's install commands are the page's", async () => {
      const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8');
      const commands = (text: string, pattern: RegExp): string[] =>
        text
          .split('\n')
          .map((line) => line.replace(/\s+#.*$/, '').trim())
          .filter((line) => pattern.test(line));
      const setUp = blocks.filter((b) => b.part === 0 && b.lang === 'sh').map((b) => b.text);
      const install = commands(setUp.join('\n'), /^npm install express /);
      expect(install).to.have.length(1);
      expect(commands(readme, /^npm install express /)).to.deep.equal(install);
      expect(commands(readme, /^npm ci/)).to.deep.equal([commands(setUp.join('\n'), /^npm (ci|pack)$/).join(' && ')]);
    });
  });

  describe('1. protect an existing route (requireToken + introspect)', () => {
    followPart(1);

    it('the token in the query works too; sent twice, it is a 400', async () => {
      const url = addresses.get(3000)!;
      const ok = await fetch(`${url}/pets/7?access_token=${encodeURIComponent(tokens['client3']!)}`);
      expect(ok.status).to.equal(200);
      expect(await ok.json()).to.deep.equal({ id: '7', client: 'client3' });
      const twice = await fetch(`${url}/pets/7?access_token=${encodeURIComponent(tokens['client3']!)}`, {
        headers: { authorization: `Bearer ${tokens['client3']}` },
      });
      expect(twice.status).to.equal(400);
      expect((await problem(twice))['gateway_status']).to.equal('protocol:GATEWAY-1366');
    });

    it('started a second time on the same port, it stops with the reason (exit 1), not a TypeError', async () => {
      const port = new URL(addresses.get(3000)!).port;
      const start = blocks.find((b) => b.part === 1 && b.text.includes('npx tsx'))!;
      const result = await runShell(localize(start.text), inProject(), { ...env, PORT: port });
      expect(result.code).to.equal(1);
      expect(result.stderr).to.include(`cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
      expect(result.stderr).to.not.include('TypeError');
    });
  });

  describe('2. the full chain (record, token, XACML, forward, relay, console)', () => {
    followPart(2);

    it('no token: 400 (English messages); an unknown token: 401', async () => {
      const none = await fetch(`${addresses.get(3000)}${API}/pet/10`);
      expect(none.status).to.equal(400);
      expect(none.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
      expect(await problem(none)).to.include({ detail: 'Token not present', gateway_status: 'protocol:GATEWAY-1366' });
      const unknown = await fetch(`${addresses.get(3000)}${API}/pet/10`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(unknown.status).to.equal(401);
      expect(await problem(unknown)).to.include({ detail: 'Token not valid', gateway_status: 'protocol:GATEWAY-1367' });
    });

    it('the backend got the token information and not the token', async () => {
      const response = await fetch(`${addresses.get(3000)}${API}/pet/10?access_token=${encodeURIComponent(tokens['client1']!)}`);
      expect(response.status).to.equal(200);
      expect(response.headers.get('gateway-message-id')).to.be.a('string');
      expect(backend.lastRequest.url).to.equal('/pet/10');
      const headers = backend.lastRequest.headers ?? {};
      expect(headers['gateway-token-clientid']).to.equal('client1');
      expect(headers['gateway-token-audience']).to.equal('petstore-api');
      expect(headers['gateway-transaction-id']).to.equal(response.headers.get('gateway-transaction-id'));
      expect(headers).to.not.have.property('authorization');
      expect(JSON.stringify(headers)).to.not.include(tokens['client1']);
    });

    it('the console refuses without credentials and lists every outcome with them, on its own port only', async () => {
      const consoleUrl = addresses.get(3001)!;
      const onApiPort = await fetch(`${addresses.get(3000)}/console/api/transactions`, {
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(onApiPort.status, 'no console on the API port').to.equal(404);
      // Without the credentials, with or without the console header: the challenge the guide promises.
      for (const headers of [{ 'x-gateway-console': '1' }, {}] as Array<Record<string, string>>) {
        const refused = await fetch(`${consoleUrl}/console/api/transactions`, { headers });
        expect(refused.status, JSON.stringify(headers)).to.equal(401);
        expect(refused.headers.get('www-authenticate')).to.match(/^Basic /);
      }
      const response = await fetch(`${consoleUrl}/console/api/transactions`, {
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(response.status).to.equal(200);
      const { items } = (await response.json()) as {
        items: Array<{ status: number; outcome: { code: string }; outgoing?: { headers: Record<string, string> } }>;
      };
      // The page's two calls (client1, client3), then this test's three.
      expect(items.map((r) => `${r.status} ${r.outcome.code}`).reverse()).to.deep.equal([
        '200 OK',
        '403 AUTHORIZATION_DENIED',
        '400 TOKEN_FAILED',
        '401 TOKEN_FAILED',
        '200 OK',
      ]);
      expect(items[0]?.outgoing?.headers).to.include({ 'Gateway-Token-ClientId': 'client1' });
      expect(JSON.stringify(items)).to.not.include(tokens['client1']);
    });

    it('authorization server down: 503 with Retry-After, and never a pass', async () => {
      await as.stop();
      try {
        const response = await fetch(`${addresses.get(3000)}${API}/pet/10`, { headers: { authorization: 'Bearer a-token-never-seen' } });
        expect(response.status).to.equal(503);
        expect(response.headers.get('retry-after')).to.equal('5');
        expect(await problem(response)).to.include({ gateway_status: 'protocol:GATEWAY-1369' });
      } finally {
        await as.start();
      }
    });
  });

  describe('3. the whole gateway from a configuration file (createGateway)', () => {
    followPart(3);

    it('400 without a token, 403 for client3 (the answer of part 2), 200 for client1', async () => {
      const none = await fetch(`${addresses.get(3000)}${API}/pet/10`);
      expect(none.status).to.equal(400);
      expect(await problem(none)).to.include({ detail: 'Token not present' });
      const denied = await fetch(`${addresses.get(3000)}${API}/pet/10`, { headers: { authorization: `Bearer ${tokens['client3']}` } });
      expect(denied.status).to.equal(403);
      const shown = blocks.find((b) => b.lang === 'json' && b.part === 2 && !b.file)!;
      expect(await problem(denied)).to.deep.equal(JSON.parse(shown.text));
      const ok = await fetch(`${addresses.get(3000)}${API}/pet/10`, { headers: { authorization: `Bearer ${tokens['client1']}` } });
      expect(ok.status).to.equal(200);
      expect(backend.lastRequest.headers?.['gateway-token-clientid']).to.equal('client1');
    });

    it('admin routes and console only on the admin port, behind the credentials', async () => {
      const adminUrl = addresses.get(3001)!;
      const admin = { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' };
      const onApiPort = await fetch(`${addresses.get(3000)}/gateway/admin/reset-caches`, { method: 'POST', headers: admin });
      expect(onApiPort.status, 'no admin route on the API listener').to.equal(404);
      const refused = await fetch(`${adminUrl}/gateway/admin/reset-caches`, { method: 'POST', headers: { 'x-gateway-console': '1' } });
      expect(refused.status).to.equal(401);
      const records = await fetch(`${adminUrl}/gateway/console/api/transactions`, { headers: admin });
      expect(records.status).to.equal(200);
      const { items } = (await records.json()) as { items: Array<{ status: number; api?: { name: string } }> };
      expect(items.filter((r) => r.status !== 404).every((r) => r.api?.name === 'PetStore')).to.equal(true);
      expect(items[0]?.status, 'the last call: the admin route on the API port, an API not found').to.equal(404);
    });
  });
});
