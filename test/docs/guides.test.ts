/**
 * The guides' samples, run. The index of the guides and their links; the runnable samples of
 * docs/identity-providers.md, cut out of the Markdown (so a change of the page changes what runs),
 * written to their own files under test/artifacts/guides/ (inside the repository, so that
 * `import ... from 'express-access-gateway'` resolves to the built package, as it does for users),
 * and started with `node --import tsx` against the demo authorization server and the petstore
 * backend over real HTTP. docs/getting-started.md is followed step by step in getting-started.test.ts.
 */
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { exportJWK, exportPKCS8, generateKeyPair } from 'jose';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import { fencedBlocks, prepareSample, repoRoot, runSample, startSample, type RunningSample } from './support/guide-runner.js';

const ADMIN_PASSWORD = 'guide test password';

async function page(name: string): Promise<string> {
  return readFile(path.join(repoRoot, 'docs', name), 'utf8');
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
  const running: RunningSample[] = [];
  const tokens: Record<string, string> = {};

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    backend = await startPetstoreBackend({ port: 0 });
    tokens['client1'] = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
  });

  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await Promise.allSettled([as?.stop(), backend?.stop()]);
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
