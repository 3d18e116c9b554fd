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

  async function start(configFile: string, env: Record<string, string> = {}): Promise<Instance> {
    const [port, adminPort] = [await freePort(), await freePort()];
    const served = serve(['serve', '--config', configFile, '--port', String(port), '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: 'dpop-admin',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: keyPrefix,
      GATEWAY_CLUSTER_SECRET: 'dpop-test-cluster-secret-0123456789abcdef',
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      ...env,
    });
    return { api: `http://127.0.0.1:${port}`, served };
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
