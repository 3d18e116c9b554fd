/**
 * `TokenPolicy.check`: the start-up check of a policy against the demo authorization server, over
 * real HTTP: a right configuration passes, a wrong issuer, a wrong client secret and a server that
 * is down each fail with their cause, which never holds the secret.
 */
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { freePort } from '../server/support.js';

describe('TokenPolicy.check', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  const policies: TokenPolicy[] = [];
  const policy = (options: Partial<TokenPolicyOptions>): TokenPolicy => {
    const made = createTokenPolicy({ name: 'IdP', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', ...options });
    policies.push(made);
    return made;
  };

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
  });
  after(async () => {
    for (const made of policies) made.close();
    await as.stop();
  });

  it('passes with the right issuer and secret: discovery, then an introspection that authenticates the gateway', async () => {
    const before = { ...as.stats };
    expect(await policy({}).check()).to.deep.equal({ ok: true });
    expect(as.stats.discoveries - before.discoveries).to.equal(1);
    expect(as.stats.introspections - before.introspections).to.equal(1);
  });

  it('fails with the cause for a wrong issuer (discovery 404)', async () => {
    const result = await policy({ issuer: `${as.issuer}/nowhere` }).check();
    expect(result.ok).to.equal(false);
    expect(result.ok === false && result.cause).to.match(/^discovery: .*HTTP 404/);
  });

  it('fails with invalid_client for a wrong client secret, and never names the secret', async () => {
    const result = await policy({ clientSecret: 'not-the-secret' }).check();
    expect(result.ok).to.equal(false);
    const cause = result.ok ? '' : result.cause;
    expect(cause).to.match(/^introspection: .*client authentication \(HTTP 401, invalid_client\)/);
    expect(cause).not.to.include('not-the-secret');
  });

  it('fails when the server is unreachable, and passes once it is up (never rejects)', async () => {
    const port = await freePort();
    const checked = policy({ issuer: `http://127.0.0.1:${port}`, timeoutMs: 2000 });
    const down = await checked.check();
    expect(down.ok === false && down.cause).to.match(/^discovery: unreachable \(ECONNREFUSED\)/);
    const back = await startDemoAuthServer({ port });
    try {
      expect(await checked.check()).to.deep.equal({ ok: true });
    } finally {
      await back.stop();
    }
  });

  it('with JWT validation only: discovery alone, no introspection', async () => {
    const before = as.stats.introspections;
    expect(await policy({ introspection: false, jwtValidation: true, audience: as.audience }).check()).to.deep.equal({ ok: true });
    expect(as.stats.introspections).to.equal(before);
  });
});
