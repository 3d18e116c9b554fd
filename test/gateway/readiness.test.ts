/**
 * A library host's readiness: `ready()` resolves for a configuration that loads (as before) and
 * starts the token policies' checks; `health()` and `<basePath>/health/ready` reflect them;
 * `check()` reports each policy and the configuration's warnings.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, type Gateway, type GatewayConfig } from '../../src/index.js';
import type { GatewayLogger, LogFields } from '../../src/log.js';
import { close, echoBackend, listen } from './helpers.js';

function keptLogger(kept: Array<LogFields & { level: string }> = []): GatewayLogger & { kept: typeof kept } {
  const at = (level: string) => (fields: LogFields, msg?: string) =>
    void kept.push({ ...fields, level, ...(msg === undefined ? {} : { msg }) });
  return { kept, error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), child: () => keptLogger(kept) };
}

describe('createGateway: readiness of the token policies', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let gateway: Gateway | undefined;
  let server: Server | undefined;
  const config = (clientSecret: string): GatewayConfig => ({
    tokenPolicies: { Idp: { issuer: as.issuer, clientId: 'gateway', clientSecret } },
    apis: [
      { provider: 'Ente', name: 'Echo', version: 1, backend: { url: backend.url }, tokenManagement: { enabled: true, policy: 'Idp' } },
    ],
  });
  async function healthStatus(): Promise<number> {
    const app = express();
    app.use(gateway!.adminRouter);
    server = createServer(app);
    const base = await listen(server);
    return (await fetch(`${base}/gateway/health/ready`)).status;
  }

  before(async () => {
    [as, backend] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend()]);
  });
  afterEach(async () => {
    await close(server);
    await gateway?.close();
    gateway = undefined;
  });
  after(async () => {
    await Promise.all([as.stop(), backend.stop()]);
  });

  it('a wrong client secret: ready() still resolves, health() and health/ready say not ready, not_ready names the policy and the cause', async () => {
    const log = keptLogger();
    gateway = createGateway({ config: config('not-the-secret'), logger: log });
    await gateway.ready();
    const health = gateway.health();
    expect(health.ready).to.equal(false);
    expect(health.tokenPolicies).to.have.length(1);
    expect(health.tokenPolicies[0]).to.include({ policy: 'Idp', ok: false });
    expect(health.tokenPolicies[0]!.cause).to.match(/HTTP 401, invalid_client/);
    expect(await healthStatus()).to.equal(503);
    const line = log.kept.find((r) => r['event'] === 'not_ready');
    expect(line).to.include({ level: 'error', policy: 'Idp' });
    expect(JSON.stringify(log.kept)).not.to.include('not-the-secret');
    const checked = await gateway.check();
    expect(checked.ok).to.equal(false);
    expect(checked.tokenPolicies[0]!.cause).to.match(/invalid_client/);
  });

  it('the right secret: ready, and check() says ok; without ready() no check runs and ready means "a configuration is loaded"', async () => {
    gateway = createGateway({ config: config('gateway-secret') });
    const before = as.stats.introspections;
    expect(gateway.health()).to.deep.equal({ ready: false, tokenPolicies: [] });
    await gateway.check();
    // check() loaded the configuration; no start-up check was asked for.
    expect(gateway.health()).to.deep.equal({ ready: true, tokenPolicies: [] });
    expect(as.stats.introspections - before).to.equal(1);
    await gateway.ready();
    expect(gateway.health()).to.deep.equal({ ready: true, tokenPolicies: [{ policy: 'Idp', ok: true }] });
    expect(await healthStatus()).to.equal(200);
    expect(await gateway.check()).to.deep.equal({ ok: true, tokenPolicies: [{ policy: 'Idp', ok: true }], warnings: [] });
  });
});
