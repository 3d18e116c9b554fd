/**
 * The guides' samples, run. Each ```ts block of docs/getting-started.md and the runnable one of
 * docs/identity-providers.md is cut out of the Markdown (so a change of the page changes what runs),
 * written to its own file under test/artifacts/guides/ (inside the repository, so that
 * `import ... from 'express-access-gateway'` resolves to the built package, as it does for users),
 * and started with `node --import tsx` against the demo authorization server and the petstore
 * backend over real HTTP. The responses the pages show (```http heads and problem+json bodies) are
 * compared with what the running samples answer.
 */
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import {
  fencedBlocks,
  parseHttpExample,
  prepareSample,
  repoRoot,
  runSample,
  startSample,
  type HttpExample,
  type RunningSample,
} from './support/guide-runner.js';

const ADMIN_PASSWORD = 'guide test password';

async function page(name: string): Promise<string> {
  return readFile(path.join(repoRoot, 'docs', name), 'utf8');
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

async function problem(response: Response): Promise<Record<string, unknown>> {
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  return (await response.json()) as Record<string, unknown>;
}

/** The page's example head matches the answer: status, and every header shown (ids only present). */
function expectHead(response: Response, example: HttpExample): void {
  expect(response.status).to.equal(example.status);
  for (const [name, value] of Object.entries(example.headers)) {
    const actual = response.headers.get(name);
    expect(actual, `header ${name}`).to.be.a('string');
    if (name !== 'gateway-transaction-id') expect(actual, `header ${name}`).to.equal(value);
  }
}

/** The first group of `pattern` in what a running sample printed, waiting a little for it. */
async function waitForOutput(sample: RunningSample, pattern: RegExp): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = pattern.exec(sample.output())?.[1];
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`the sample did not print ${pattern}:\n${sample.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('guides: the index and the links', () => {
  it('docs/README.md lists every guide, and every page linked from the index and the getting-started pages exists', async () => {
    const guides = (await readdir(path.join(repoRoot, 'docs'))).filter((f) => f.endsWith('.md') && f !== 'README.md');
    const pages = ['README.md', 'getting-started.md', 'identity-providers.md'];
    const linked = new Set<string>();
    for (const name of pages) {
      for (const m of (await page(name)).matchAll(/\]\(([\w.-]+\.md)(#[\w-]*)?\)/g)) linked.add(m[1]!);
    }
    const index = await page('README.md');
    for (const guide of guides) expect(index, `the index lists ${guide}`).to.include(`](${guide})`);
    const missing: string[] = [];
    for (const file of linked) await access(path.join(repoRoot, 'docs', file)).catch(() => missing.push(file));
    expect(missing, 'linked pages that do not exist').to.deep.equal([]);
  });
});

describe('guides: the samples run as written', function () {
  this.timeout(90_000);
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let gettingStarted: string;
  let tsSamples: string[];
  let problems: Array<Record<string, unknown>>;
  let heads: HttpExample[];
  const running: RunningSample[] = [];
  const tokens: Record<string, string> = {};

  before(async () => {
    gettingStarted = await page('getting-started.md');
    tsSamples = fencedBlocks(gettingStarted, 'ts');
    problems = fencedBlocks(gettingStarted, 'json')
      .map((b) => JSON.parse(b) as Record<string, unknown>)
      .filter((b) => typeof b['status'] === 'number');
    heads = fencedBlocks(gettingStarted, 'http').map(parseHttpExample);
    as = await startDemoAuthServer({ port: 0 });
    backend = await startPetstoreBackend({ port: 0 });
    for (const id of ['client1', 'client3']) tokens[id] = await as.issueToken(id, `${id}-secret`, { scope: 'read' });
  });

  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await Promise.allSettled([as?.stop(), backend?.stop()]);
  });

  it('getting-started.md has the three samples, the problem bodies and the heads the tests check', () => {
    expect(tsSamples, 'ts samples').to.have.length(3);
    expect(problems.map((p) => p['status'])).to.deep.equal([400, 401, 403]);
    expect(heads.map((h) => h.status)).to.deep.equal([400, 401, 403]);
  });

  describe('1. protect an existing route (requireToken + introspect)', () => {
    let sample: RunningSample;

    before(async () => {
      const dir = await prepareSample('quick-start', { 'server.ts': tsSamples[0]! });
      sample = await startSample(dir, 'server.ts', { ISSUER: as.issuer, CLIENT_ID: 'gateway', CLIENT_SECRET: 'gateway-secret', PORT: '0' });
      running.push(sample);
    });

    it('no token: 400 problem+json, exactly the head and body the page shows', async () => {
      const response = await fetch(`${sample.url}/pets/10`);
      expectHead(response, heads[0]!);
      expect(await problem(response)).to.deep.equal(problems[0]);
    });

    it('a token the authorization server does not know: 401, as the page shows', async () => {
      const response = await fetch(`${sample.url}/pets/10`, { headers: { authorization: 'Bearer not-a-token' } });
      expectHead(response, heads[1]!);
      expect(await problem(response)).to.deep.equal(problems[1]);
    });

    it('a valid token of the demo authorization server: 200 with the handler answer the page shows', async () => {
      const response = await fetch(`${sample.url}/pets/10`, { headers: { authorization: `Bearer ${tokens['client1']}` } });
      expect(response.status).to.equal(200);
      const shown = /^# (\{.*\})$/m.exec(gettingStarted);
      expect(shown, 'the answer shown after the curl').to.not.equal(null);
      expect(await response.json()).to.deep.equal(JSON.parse(shown![1]!));
    });

    it('the token in the query works too; sent twice, it is a 400', async () => {
      const ok = await fetch(`${sample.url}/pets/7?access_token=${encodeURIComponent(tokens['client3']!)}`);
      expect(ok.status).to.equal(200);
      expect(await ok.json()).to.deep.equal({ id: '7', client: 'client3' });
      const twice = await fetch(`${sample.url}/pets/7?access_token=${encodeURIComponent(tokens['client3']!)}`, {
        headers: { authorization: `Bearer ${tokens['client3']}` },
      });
      expect(twice.status).to.equal(400);
      expect((await problem(twice))['gateway_status']).to.equal('protocol:GATEWAY-1366');
    });
  });

  describe('2. the full chain (record, token, XACML, forward, relay, console)', () => {
    let sample: RunningSample;

    before(async () => {
      const policyXml = fencedBlocks(gettingStarted, 'xml')[0];
      expect(policyXml, 'the policy.xml block').to.be.a('string');
      const dir = await prepareSample('full-chain', { 'gateway.ts': tsSamples[1]!, 'policy.xml': policyXml! });
      sample = await startSample(dir, 'gateway.ts', {
        ISSUER: as.issuer,
        CLIENT_ID: 'gateway',
        CLIENT_SECRET: 'gateway-secret',
        BACKEND_URL: backend.url,
        ADMIN_PASSWORD,
        PORT: '0',
        CONSOLE_PORT: '0',
      });
      running.push(sample);
    });

    it('no token: 400 (English messages), with Gateway-Transaction-ID', async () => {
      const response = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`);
      expect(response.status).to.equal(400);
      expect(response.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
      expect(await problem(response)).to.include({ detail: 'Token not present', gateway_status: 'protocol:GATEWAY-1366' });
    });

    it('an unknown token: 401', async () => {
      const response = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: 'Bearer not-a-token' } });
      expect(response.status).to.equal(401);
      expect(await problem(response)).to.include({ detail: 'Token not valid', gateway_status: 'protocol:GATEWAY-1367' });
    });

    it('client1 (listed by the policy): 200 from the backend, which got the token information and not the token', async () => {
      const response = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10?access_token=${encodeURIComponent(tokens['client1']!)}`);
      expect(response.status).to.equal(200);
      expect(response.headers.get('gateway-message-id')).to.be.a('string');
      expect(await response.json()).to.include({ id: 10, name: 'doggie' });
      expect(backend.lastRequest.url).to.equal('/pet/10');
      const headers = backend.lastRequest.headers ?? {};
      expect(headers['gateway-token-clientid']).to.equal('client1');
      expect(headers['gateway-token-audience']).to.equal('petstore-api');
      expect(headers['gateway-transaction-id']).to.equal(response.headers.get('gateway-transaction-id'));
      expect(headers).to.not.have.property('authorization');
      expect(JSON.stringify(headers)).to.not.include(tokens['client1']);
    });

    it('client3 (valid, not listed by the policy): 403, exactly the head and body the page shows', async () => {
      const response = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`, {
        headers: { authorization: `Bearer ${tokens['client3']}` },
      });
      expectHead(response, heads[2]!);
      expect(await problem(response)).to.deep.equal(problems[2]);
    });

    it('the console refuses without credentials and lists every outcome with them, on its own port only', async () => {
      const consoleUrl = await waitForOutput(sample, /console on (http:\/\/\S+)\/console\//);
      const onApiPort = await fetch(`${sample.url}/console/api/transactions`, {
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(onApiPort.status, 'no console on the API port').to.equal(404);
      const refused = await fetch(`${consoleUrl}/console/api/transactions`, { headers: { 'x-gateway-console': '1' } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.match(/^Basic /);
      const response = await fetch(`${consoleUrl}/console/api/transactions`, {
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(response.status).to.equal(200);
      const { items } = (await response.json()) as {
        items: Array<{ status: number; outcome: { code: string }; outgoing?: { headers: Record<string, string> } }>;
      };
      expect(items.map((r) => `${r.status} ${r.outcome.code}`).reverse()).to.deep.equal([
        '400 TOKEN_FAILED',
        '401 TOKEN_FAILED',
        '200 OK',
        '403 AUTHORIZATION_DENIED',
      ]);
      const ok = items.find((r) => r.status === 200);
      expect(ok?.outgoing?.headers).to.include({ 'Gateway-Token-ClientId': 'client1' });
      expect(JSON.stringify(items)).to.not.include(tokens['client1']);
    });

    it('authorization server down: 503 with Retry-After, and never a pass', async () => {
      await as.stop();
      try {
        const response = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`, {
          headers: { authorization: 'Bearer a-token-never-seen' },
        });
        expect(response.status).to.equal(503);
        expect(response.headers.get('retry-after')).to.equal('5');
        expect(await problem(response)).to.include({ gateway_status: 'protocol:GATEWAY-1369' });
      } finally {
        await as.start();
      }
    });
  });

  describe('3. the whole gateway from a configuration file (createGateway)', () => {
    let sample: RunningSample;
    const api = '/gateway/Ente/PetStore/v1';

    before(async () => {
      const configBlock = fencedBlocks(gettingStarted, 'json').find((b) => b.includes('"tokenPolicies"'));
      expect(configBlock, 'the gateway.config.json block').to.be.a('string');
      const config = JSON.parse(configBlock!) as {
        tokenPolicies: Record<string, { issuer: string; clientSecret?: string }>;
        apis: Array<{ backend: { url: string } }>;
      };
      // The page's URLs are placeholders: point them at the servers of the test.
      for (const policy of Object.values(config.tokenPolicies)) {
        expect(policy, 'no secret in the file').to.not.have.property('clientSecret');
        policy.issuer = as.issuer;
      }
      for (const entry of config.apis) entry.backend.url = backend.url;
      const dir = await prepareSample('gateway-config', {
        'gateway.ts': tsSamples[2]!,
        'gateway.config.json': JSON.stringify(config, null, 2),
        'policy.xml': fencedBlocks(gettingStarted, 'xml')[0]!,
      });
      sample = await startSample(dir, 'gateway.ts', { CLIENT_SECRET: 'gateway-secret', ADMIN_PASSWORD, PORT: '0', ADMIN_PORT: '0' });
      running.push(sample);
    });

    it('400 without a token, 403 for client3, 200 for client1', async () => {
      const none = await fetch(`${sample.url}${api}/pet/10`);
      expect(none.status).to.equal(400);
      expect(await problem(none)).to.include({ detail: 'Token not present' });
      const denied = await fetch(`${sample.url}${api}/pet/10`, { headers: { authorization: `Bearer ${tokens['client3']}` } });
      expect(denied.status).to.equal(403);
      expect(await problem(denied)).to.deep.equal(problems[2]);
      const ok = await fetch(`${sample.url}${api}/pet/10`, { headers: { authorization: `Bearer ${tokens['client1']}` } });
      expect(ok.status).to.equal(200);
      expect(await ok.json()).to.include({ name: 'doggie' });
      expect(backend.lastRequest.headers?.['gateway-token-clientid']).to.equal('client1');
    });

    it('ResetAllCaches as the page shows it (admin credentials), and the console with the same ones', async () => {
      const adminUrl = await waitForOutput(sample, /admin on (http:\/\/\S+)/);
      const onApiPort = await fetch(`${sample.url}/gateway/admin/reset-caches`, {
        method: 'POST',
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(onApiPort.status, 'no admin route on the API listener').to.equal(404);
      const refused = await fetch(`${adminUrl}/gateway/admin/reset-caches`, { method: 'POST', headers: { 'x-gateway-console': '1' } });
      expect(refused.status).to.equal(401);
      const reset = await fetch(`${adminUrl}/gateway/admin/reset-caches`, {
        method: 'POST',
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(reset.status).to.equal(200);
      expect(((await reset.json()) as { apis: string[] }).apis).to.deep.equal(['Ente/PetStore/v1']);
      const records = await fetch(`${adminUrl}/gateway/console/api/transactions`, {
        headers: { authorization: basic('admin', ADMIN_PASSWORD), 'x-gateway-console': '1' },
      });
      expect(records.status).to.equal(200);
      const { items } = (await records.json()) as { items: Array<{ status: number; api?: { name: string } }> };
      expect(items.map((r) => r.status).reverse(), 'the admin call on the API port is an API-not-found').to.deep.equal([
        400, 403, 200, 404,
      ]);
      expect(items.filter((r) => r.status !== 404).every((r) => r.api?.name === 'PetStore')).to.equal(true);
    });
  });

  describe('identity-providers.md', () => {
    let providers: string;
    let samples: string[];

    before(async () => {
      providers = await page('identity-providers.md');
      samples = fencedBlocks(providers, 'ts');
    });

    it('has the two samples the tests run', () => {
      expect(samples).to.have.length(2);
      expect(samples[0]).to.include('private_key_jwt');
      expect(samples[1]).to.include('policy.validate(');
    });

    describe('the check-token script', () => {
      let dir: string;
      const settings = (): Record<string, string> => ({ ISSUER: as.issuer, CLIENT_ID: 'gateway', CLIENT_SECRET: 'gateway-secret' });
      type Verdict = {
        valid: boolean;
        code?: string;
        status?: number;
        diagnostic?: string;
        info?: { clientId?: string; audience?: string[] };
      };
      async function check(env: Record<string, string>): Promise<{ code: number | null; verdict: Verdict; stdout: string }> {
        const { code, stdout, stderr } = await runSample(dir, 'check-token.ts', env);
        expect(stderr, 'stderr').to.equal('');
        return { code, verdict: JSON.parse(stdout) as Verdict, stdout };
      }

      before(async () => {
        dir = await prepareSample('check-token', { 'check-token.ts': samples[1]! });
      });

      it('a valid token of client1: valid, with its client and audience, and the token is not printed', async () => {
        const { code, verdict, stdout } = await check({ ...settings(), AUDIENCE: 'petstore-api', TOKEN: tokens['client1']! });
        expect(code).to.equal(0);
        expect(verdict.valid).to.equal(true);
        expect(verdict.info?.clientId).to.equal('client1');
        expect(verdict.info?.audience).to.deep.equal(['petstore-api']);
        expect(stdout).to.not.include(tokens['client1']);
      });

      // Each failure prints the code and diagnostic the page's table explains.
      const failures: Array<[string, (t: Record<string, string>) => Record<string, string>, string, string]> = [
        ['an unknown token', (env) => ({ ...env, TOKEN: 'not-a-token' }), 'ERR_TOKEN_INVALID', 'introspection: active is false'],
        [
          'another audience',
          (env) => ({ ...env, AUDIENCE: 'another-api', TOKEN: tokens['client1']! }),
          'ERR_TOKEN_INVALID',
          'introspection: the token is not meant for this audience (aud)',
        ],
        [
          'a wrong client secret',
          (env) => ({ ...env, CLIENT_SECRET: 'wrong', TOKEN: tokens['client1']! }),
          'ERR_AUTHORIZATION_SERVER_UNAVAILABLE',
          "introspection: the authorization server refused the gateway's client authentication (HTTP 401, invalid_client)",
        ],
      ];
      for (const [what, env, code, diagnostic] of failures) {
        it(`${what}: ${code}, "${diagnostic}", as the page's table says`, async () => {
          const result = await check(env(settings()));
          expect(result.code).to.equal(1);
          expect(result.verdict).to.include({ valid: false, code, diagnostic });
          const row = providers.split('\n').find((line) => line.startsWith(`| \`${code}\``) && line.includes(diagnostic));
          expect(row, 'the table row of this answer').to.be.a('string');
        });
      }

      it('an issuer nobody answers at: ERR_AUTHORIZATION_SERVER_UNAVAILABLE, discovery: ...', async () => {
        const { verdict } = await check({ ...settings(), ISSUER: 'http://127.0.0.1:1', TOKEN: tokens['client1']! });
        expect(verdict).to.include({ valid: false, code: 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE', status: 503 });
        expect(verdict.diagnostic).to.match(/^discovery: /);
      });
    });

    describe('private_key_jwt through createGateway tokenPolicyOptions', () => {
      let keyAs: DemoAuthServer;
      let sample: RunningSample;

      before(async () => {
        const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
        const jwk = { ...(await exportJWK(publicKey)), kid: 'gateway-2025', alg: 'RS256', use: 'sig' };
        keyAs = await startDemoAuthServer({
          port: 0,
          clients: [
            { clientId: 'client1', clientSecret: 'client1-secret' },
            {
              clientId: 'gateway',
              clientSecret: 'unused-placeholder-secret',
              tokenEndpointAuthMethod: 'private_key_jwt',
              jwks: { keys: [jwk] },
            },
          ],
        });
        const config = {
          tokenPolicies: { 'my-idp': { issuer: keyAs.issuer, clientId: 'gateway', clientSecret: 'placeholder' } },
          apis: [
            {
              provider: 'Ente',
              name: 'PetStore',
              version: 1,
              backend: { url: backend.url },
              tokenManagement: { enabled: true, policy: 'my-idp', tokenForward: true },
            },
          ],
        };
        const dir = await prepareSample('private-key-jwt', {
          'gateway.ts': samples[0]!,
          'gateway.config.json': JSON.stringify(config),
          'gateway-key.pem': await exportPKCS8(privateKey),
        });
        sample = await startSample(dir, 'gateway.ts', { ADMIN_PASSWORD, PORT: '0' });
        running.push(sample);
      });

      after(async () => {
        await keyAs?.stop();
      });

      it('the gateway introspects with a signed assertion: 200 for a valid token, 401 for an unknown one', async () => {
        const token = await keyAs.issueToken('client1', 'client1-secret');
        const before = keyAs.stats.introspections;
        const ok = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
        expect(ok.status).to.equal(200);
        expect(backend.lastRequest.headers?.['gateway-token-clientid']).to.equal('client1');
        expect(keyAs.stats.introspections).to.equal(before + 1);
        const bad = await fetch(`${sample.url}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: 'Bearer not-a-token' } });
        expect(bad.status).to.equal(401);
      });
    });
  });
});
