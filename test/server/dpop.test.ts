/**
 * DPoP across `serve` instances: two processes on the machine's Redis, the demo authorization
 * server issuing DPoP-bound tokens. A proof accepted by one instance is refused by the other; the
 * backend never sees the proof; a configuration that switches DPoP on without `publicBaseUrl`
 * does not load.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { echoBackend, editJson, exampleCopy } from '../gateway/helpers.js';
import { dpopKey, proof, type DpopKey } from '../token/binding/support.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { dropSharedState, freePort, serve, stop, type Served } from './support.js';

const PUBLIC = 'https://api.example.org';
const PATH = '/gateway/Ente/PetStore/v1/pet/10';

interface Instance {
  readonly api: string;
  readonly served: Served;
}

describe('serve: DPoP-bound tokens over several instances (Redis)', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const keyPrefix = `eagtest-dpop-${suffix}:`;
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let key: DpopKey;
  const instances: Instance[] = [];

  async function start(configFile: string, env: Record<string, string> = {}): Promise<Instance & { admin: string }> {
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve(['serve', '--config', configFile, '--port', String(port), '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: 'dpop-admin',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      GATEWAY_CLUSTER_SECRET: 'dpop-test-cluster-secret-0123456789abcdef',
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      ...env,
    });
    return { api: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}/gateway`, served };
  }

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    key = await dpopKey();
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.publicBaseUrl = PUBLIC;
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.tokenPolicies!['DemoIdP']!.dpop = 'required';
      config.apis[0]!.backend.url = echo.url;
    });
    const started = await Promise.all([start(copy.configFile), start(copy.configFile)]);
    await Promise.all(started.map((instance) => instance.served.waitFor(/serving APIs at/)));
    instances.push(...started);
  });

  after(async () => {
    await Promise.all(instances.map((instance) => stop(instance.served)));
    await dropSharedState(`gw_unused_${suffix}`, keyPrefix);
    await Promise.all([as?.stop(), echo?.stop(), copy?.remove()]);
  });

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return;
    for (const instance of instances) process.stderr.write(`--- instance output:\n${instance.served.output().slice(-4000)}\n`);
  });

  const call = async (instance: Instance, token: string, proofValue: string) => {
    const res = await fetch(`${instance.api}${PATH}`, { headers: { authorization: `DPoP ${token}`, dpop: proofValue } });
    return { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.text() };
  };

  it('a proof accepted by one instance is refused by the other; the backend gets neither the proof nor a bearer use of it', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
    const once = await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token });
    const seenBefore = echo.seen.length;
    const first = await call(instances[0]!, token, once);
    expect(first.status, first.body).to.equal(201);
    const relayed = echo.seen.slice(seenBefore);
    expect(relayed).to.have.length(1);
    expect(relayed[0]!.headers['dpop']).to.equal(undefined);
    expect(relayed[0]!.headers['gateway-token-binding']).to.equal('jkt');

    const replayed = await call(instances[1]!, token, once);
    expect(replayed.status).to.equal(401);
    expect(replayed.challenge).to.match(/^DPoP realm="DemoIdP", algs="ES256 PS256 EdDSA", error="invalid_dpop_proof"/);
    // A fresh proof passes on the second instance too.
    const fresh = await call(instances[1]!, token, await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }));
    expect(fresh.status, fresh.body).to.equal(201);
  });

  it('malformed, oversized and duplicated proofs are refused with 401, never a 5xx', async () => {
    const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
    for (const value of ['x', 'a.b.c', `${'e'.repeat(9000)}.e.e`, 'eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.', '{"json":true}']) {
      const res = await call(instances[0]!, token, value);
      expect(res.status, value.slice(0, 40)).to.equal(401);
    }
    const two = await fetch(`${instances[0]!.api}${PATH}`, {
      headers: [
        ['authorization', `DPoP ${token}`],
        ['dpop', await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token })],
        ['dpop', await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token })],
      ],
    });
    expect(two.status).to.equal(401);
  });

  it('serve --workers 2 without Redis: a proof accepted by one worker is refused by the other', async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve(
      ['serve', '--config', copy.configFile, '--port', String(port), '--admin-port', String(adminPort), '--workers', '2'],
      {
        ADMIN_PASSWORD: 'dpop-admin',
      },
    );
    try {
      await served.waitFor(/serving APIs at/);
      const solo: Instance = { api: `http://127.0.0.1:${port}`, served };
      const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
      const once = await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token });
      expect((await call(solo, token, once)).status).to.equal(201);
      // New connections, spread over the workers by the primary: every replay is refused.
      for (let i = 0; i < 6; i++) {
        const res = await fetch(`${solo.api}${PATH}`, { headers: { authorization: `DPoP ${token}`, dpop: once, connection: 'close' } });
        await res.arrayBuffer();
        expect(res.status).to.equal(401);
      }
      const fresh = await call(solo, token, await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }));
      expect(fresh.status, fresh.body).to.equal(201);
    } finally {
      await stop(served);
    }
  });

  for (const fault of ['cut', 'stall'] as const)
    it(`the proof store (Redis) ${fault === 'cut' ? 'refusing connections' : 'black-holed'}: 503 ERR_PROOF_STORE_UNAVAILABLE recorded as DEPENDENCY_UNAVAILABLE, one error line, then proofs pass again`, async () => {
      const redisProxy = await startTcpProxy({ port: 6379 });
      const { api, admin, served } = await start(copy.configFile, {
        REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
        LOG_FORMAT: 'json',
      });
      const adminHeaders = { authorization: `Basic ${Buffer.from('admin:dpop-admin').toString('base64')}` };
      const events = (event: string): Array<Record<string, unknown>> =>
        served
          .output()
          .split('\n')
          .filter((line) => line.includes(`"event":"${event}"`))
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      const until = async (check: () => Promise<boolean> | boolean, what: string): Promise<void> => {
        const deadline = Date.now() + 30_000;
        while (!(await check())) {
          if (Date.now() > deadline) throw new Error(`${what}: not within 30 s`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };
      try {
        await served.waitFor(/serving APIs at/);
        const instance: Instance = { api, served };
        const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
        const fresh = async () => call(instance, token, await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }));
        expect((await fresh()).status).to.equal(201);

        redisProxy[fault]();
        const during = [];
        for (let i = 0; i < 5; i++) {
          const res = await fetch(`${api}${PATH}`, {
            headers: { authorization: `DPoP ${token}`, dpop: await proof(key, { method: 'GET', url: `${PUBLIC}${PATH}`, token }) },
          });
          during.push({
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            body: (await res.json()) as Record<string, unknown>,
          });
        }
        expect(
          during.map((one) => one.status),
          'no proof accepted without its store, none answered as a token failure',
        ).to.deep.equal([503, 503, 503, 503, 503]);
        expect(during[0]!.body).to.deep.include({ status: 503, gateway_status: 'integration:GATEWAY-1375' });
        expect(during[0]!.retryAfter).to.equal('5');
        const metrics = await (await fetch(`${admin}/metrics`, { headers: adminHeaders })).text();
        expect(metrics).to.match(/gateway_requests_total\{[^}]*outcome="DEPENDENCY_UNAVAILABLE"[^}]*status="503"[^}]*\} 5$/m);
        expect(metrics, 'never blamed on the authorization server').to.not.match(/outcome="AUTHORIZATION_SERVER_ERROR"/);
        await until(() => events('dependency_down').some((e) => e['dependency'] === 'redis'), 'the redis dependency_down');
        const downs = events('dependency_down').filter((e) => e['dependency'] === 'redis');
        expect(downs).to.have.length(1);
        expect(downs[0]).to.deep.include({ level: 'error' });
        expect(String(downs[0]!['action'])).to.include('DPoP proofs are refused');

        redisProxy.restore();
        await until(async () => (await fresh()).status === 201, 'a proof accepted again');
        await until(() => events('dependency_up').some((e) => e['dependency'] === 'redis'), 'the redis dependency_up');
        expect(events('dependency_down').filter((e) => e['dependency'] === 'redis')).to.have.length(1);
        console.log(
          `      proof store ${fault}: ${during.length} × 503 ${String(during[0]!.body['gateway_status'])}; ${String(downs[0]!['msg']).slice(0, 120)}`,
        );
      } finally {
        await stop(served);
        await redisProxy.close();
      }
    });

  it('refuses to load dpop without publicBaseUrl', async () => {
    const broken = await exampleCopy();
    try {
      await editJson<GatewayConfig>(broken.configFile, (config) => {
        config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
        config.tokenPolicies!['DemoIdP']!.dpop = 'allowed';
      });
      const [port, adminPort] = [await freePort(), await freePort()];
      const served = serve(['serve', '--config', broken.configFile, '--port', String(port), '--admin-port', String(adminPort)], {
        ADMIN_PASSWORD: 'dpop-admin',
      });
      try {
        await served.waitFor(/dpop needs publicBaseUrl/);
      } finally {
        await stop(served);
      }
    } finally {
      await broken.remove();
    }
  });
});
