/**
 * The Prometheus metrics, from real traffic through the example's parts (the demo authorization
 * server, the petstore backend, the gateway served by the example's server code): every counter
 * equals the traffic sent, per label; histograms count every exchange; the token cache gauge
 * matches what was cached; the admin credentials guard the route.
 */
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import { startGatewayServer, type GatewayServer } from '../../examples/petstore/gateway-server.js';
import { createGateway, type GatewayConfig } from '../../src/index.js';
import { editJson, exampleCopy, exampleConfig } from '../gateway/helpers.js';
import { parsePrometheusText, type Scrape } from './prometheus-text.js';

const API = 'Ente/PetStore/v1';
const PASSWORD = 'metrics-admin-pw';

async function scrape(adminUrl: string, credentials: string | undefined = `admin:${PASSWORD}`): Promise<Scrape> {
  const answer = await fetch(`${adminUrl}/gateway/metrics`, {
    headers: credentials === undefined ? {} : { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
  });
  expect(answer.status, await answer.clone().text()).to.equal(200);
  expect(answer.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheusText(await answer.text());
}

describe('metrics: Prometheus text from real traffic', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let gateway: GatewayServer;
  let metrics: Scrape;

  before(async () => {
    [as, backend, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), startPetstoreBackend({ port: 0 }), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
    });
    gateway = await startGatewayServer({ configFile: copy.configFile, port: 0, adminPort: 0, adminPassword: PASSWORD });
    const pet = `${gateway.url}/gateway/Ente/PetStore/v1/pet/10`;
    const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });
    const [client1, client3, client2] = await Promise.all([
      as.issueToken('client1', 'client1-secret'),
      as.issueToken('client3', 'client3-secret'),
      as.issueToken('client2', 'client2-secret'),
    ]);
    const statuses: number[] = [];
    const send = async (init: RequestInit = {}): Promise<void> => {
      const answer = await fetch(pet, init);
      await answer.arrayBuffer();
      statuses.push(answer.status);
    };
    // 200 ×3 (one introspection, then the cache), 400 ×2, 401 ×2 (one introspection, then the
    // refusal cache), 403 ×1 (valid token, XACML Deny), then 503 ×1 with the server stopped.
    for (let i = 0; i < 3; i++) await send(bearer(client1));
    for (let i = 0; i < 2; i++) await send();
    for (let i = 0; i < 2; i++) await send(bearer('not-a-token-the-server-issued'));
    await send(bearer(client3));
    await as.stop();
    await send(bearer(client2));
    expect(statuses).to.deep.equal([200, 200, 200, 400, 400, 401, 401, 403, 503]);
    // Records are saved when the response closes, just after the client has read it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    metrics = await scrape(gateway.adminUrl);
  });
  after(async () => {
    await gateway?.stop();
    await Promise.all([as.stop().catch(() => undefined), backend?.stop(), copy?.remove()]);
  });

  it('counts every exchange by API, operation, outcome and status', () => {
    const requests = (outcome: string, status: string): number | undefined =>
      metrics.value('gateway_requests_total', { api: API, operation: 'getPetById', outcome, status });
    expect(requests('OK', '200')).to.equal(3);
    expect(requests('TOKEN_FAILED', '400')).to.equal(2);
    expect(requests('TOKEN_FAILED', '401')).to.equal(2);
    expect(requests('AUTHORIZATION_DENIED', '403')).to.equal(1);
    expect(requests('AUTHORIZATION_SERVER_ERROR', '503')).to.equal(1);
    expect(metrics.sum('gateway_requests_total')).to.equal(9);
    expect(metrics.types.get('gateway_requests_total')).to.equal('counter');
  });

  it('has a request duration histogram that counts every exchange, by API and outcome', () => {
    expect(metrics.types.get('gateway_request_duration_seconds')).to.equal('histogram');
    const count = (outcome: string): number | undefined => metrics.value('gateway_request_duration_seconds_count', { api: API, outcome });
    expect([count('OK'), count('TOKEN_FAILED'), count('AUTHORIZATION_DENIED'), count('AUTHORIZATION_SERVER_ERROR')]).to.deep.equal([
      3, 4, 1, 1,
    ]);
    expect(metrics.value('gateway_request_duration_seconds_bucket', { api: API, outcome: 'OK', le: '+Inf' })).to.equal(3);
    // Buckets are cumulative; the sum is the time spent, more than nothing.
    const buckets = metrics.select('gateway_request_duration_seconds_bucket', { api: API, outcome: 'OK' }).map((s) => s.value);
    expect(buckets).to.deep.equal([...buckets].sort((a, b) => a - b));
    expect(metrics.value('gateway_request_duration_seconds_sum', { api: API, outcome: 'OK' })).to.be.greaterThan(0);
  });

  it('counts token validations by source and result', () => {
    const validations = (source: string, result: string): number | undefined =>
      metrics.value('gateway_token_validations_total', { policy: 'DemoIdP', source, result });
    expect(validations('introspection', 'valid')).to.equal(2); // client1's first request, client3
    expect(validations('local_cache', 'valid')).to.equal(2);
    expect(validations('introspection', 'invalid')).to.equal(1);
    expect(validations('negative_cache', 'invalid')).to.equal(1);
    expect(validations('introspection', 'unavailable')).to.equal(1);
    expect(metrics.sum('gateway_token_validations_total')).to.equal(7);
  });

  it('times the calls to the authorization server by endpoint, the failed one included', () => {
    expect(metrics.value('gateway_authorization_server_duration_seconds_count', { policy: 'DemoIdP', endpoint: 'discovery' })).to.equal(1);
    // Four for the callers' tokens, one for the start-up check (`ready()`) of the gateway's client authentication.
    expect(metrics.value('gateway_authorization_server_duration_seconds_count', { policy: 'DemoIdP', endpoint: 'introspection' })).to.equal(
      5,
    );
  });

  it('counts XACML decisions, times the backend, and shows the token cache', () => {
    expect(metrics.value('gateway_authorization_decisions_total', { api: API, decision: 'Permit' })).to.equal(3);
    expect(metrics.value('gateway_authorization_decisions_total', { api: API, decision: 'Deny' })).to.equal(1);
    expect(metrics.value('gateway_backend_duration_seconds_count', { api: API, status_class: '2xx' })).to.equal(3);
    expect(metrics.sum('gateway_backend_duration_seconds_count')).to.equal(3);
    expect(metrics.value('gateway_token_cache_entries', { policy: 'DemoIdP', kind: 'valid' })).to.equal(2);
    expect(metrics.value('gateway_token_cache_entries', { policy: 'DemoIdP', kind: 'negative' })).to.equal(1);
  });

  it('counts records saved and dropped, and has the process metrics without the gateway_ prefix', () => {
    expect(metrics.value('gateway_records_saved_total')).to.equal(9);
    expect(metrics.value('gateway_records_dropped_total', { reason: 'save_failed' })).to.equal(0);
    // The memory store does not queue.
    expect(metrics.select('gateway_record_queue_length')).to.deep.equal([]);
    expect(metrics.value('process_cpu_user_seconds_total')).to.be.greaterThan(0);
    expect(metrics.select('nodejs_heap_size_used_bytes')).to.have.length(1);
    expect(metrics.samples.filter((s) => s.name.startsWith('gateway_process') || s.name.startsWith('gateway_nodejs'))).to.deep.equal([]);
  });

  it('labels nothing a client sent, and no subject or client by default', () => {
    const names = new Set(metrics.samples.filter((s) => s.name.startsWith('gateway_')).flatMap((s) => Object.keys(s.labels)));
    expect([...names].sort()).to.deep.equal([
      'api',
      'decision',
      'endpoint',
      'kind',
      'le',
      'operation',
      'outcome',
      'policy',
      'reason',
      'result',
      'source',
      'status',
      'status_class',
    ]);
    expect(JSON.stringify(metrics.samples)).to.not.include('not-a-token-the-server-issued');
  });

  it('asks for the admin credentials, and counts failed logins like the admin routes', async () => {
    const anonymous = await fetch(`${gateway.adminUrl}/gateway/metrics`);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('www-authenticate')).to.match(/^Basic realm=/);
    const wrong = await fetch(`${gateway.adminUrl}/gateway/metrics`, {
      headers: { authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` },
    });
    expect(wrong.status).to.equal(401);
    expect(await wrong.text()).to.not.include('gateway_');
  });
});

describe('metrics: options and isolation', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let backend: PetstoreBackend;

  before(async () => {
    [as, backend] = await Promise.all([startDemoAuthServer({ port: 0 }), startPetstoreBackend({ port: 0 })]);
  });
  after(async () => {
    await Promise.all([as.stop(), backend.stop()]);
  });

  /** A gateway on the example's configuration, its APIs and admin router in one Express app. */
  async function served(
    options: Omit<Parameters<typeof createGateway>[0], 'config'>,
  ): Promise<{ url: string; gateway: ReturnType<typeof createGateway>; close(): Promise<void> }> {
    const { default: express } = await import('express');
    const gateway = createGateway({ config: await exampleConfig(as.issuer, backend.url), baseDir: copyDir, ...options });
    await gateway.ready();
    const app = express();
    app.use(gateway.adminRouter);
    app.use(gateway.router);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    return {
      url: `http://127.0.0.1:${port}`,
      gateway,
      close: async () => {
        await new Promise((resolve) => server.close(resolve));
        await gateway.close();
      },
    };
  }
  let copyDir: string;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  before(async () => {
    copy = await exampleCopy();
    copyDir = copy.dir;
  });
  after(() => copy.remove());

  it('two gateways in one process keep their own registries and counts', async () => {
    const [a, b] = await Promise.all([served({ metrics: { auth: false } }), served({ metrics: { auth: false } })]);
    try {
      const token = await as.issueToken('client1', 'client1-secret');
      for (let i = 0; i < 2; i++)
        expect(
          (await fetch(`${a.url}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } })).status,
        ).to.equal(200);
      expect((await fetch(`${b.url}/gateway/Ente/PetStore/v1/pet/10`)).status).to.equal(400);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [ma, mb] = [parsePrometheusText(await a.gateway.metrics!.text()), parsePrometheusText(await b.gateway.metrics!.text())];
      expect(a.gateway.metrics!.registry).to.not.equal(b.gateway.metrics!.registry);
      expect(ma.sum('gateway_requests_total')).to.equal(2);
      expect(mb.sum('gateway_requests_total')).to.equal(1);
      expect(mb.value('gateway_requests_total', { api: API, operation: 'getPetById', outcome: 'TOKEN_FAILED', status: '400' })).to.equal(1);
      // auth: false serves the route without credentials.
      const open = await fetch(`${a.url}/gateway/metrics`);
      expect(open.status).to.equal(200);
      expect(parsePrometheusText(await open.text()).sum('gateway_requests_total')).to.equal(2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('clientLabel adds the client id; metrics: false collects nothing and serves no route', async () => {
    const [labelled, off] = await Promise.all([
      served({ metrics: { auth: false, clientLabel: true, processMetrics: false } }),
      served({ metrics: false }),
    ]);
    try {
      const token = await as.issueToken('client2', 'client2-secret');
      const pet = (base: string): Promise<Response> =>
        fetch(`${base}/gateway/Ente/PetStore/v1/pet/10`, { headers: { authorization: `Bearer ${token}` } });
      expect((await pet(labelled.url)).status).to.equal(200);
      expect((await pet(off.url)).status).to.equal(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const m = parsePrometheusText(await labelled.gateway.metrics!.text());
      expect(
        m.value('gateway_requests_total', { api: API, operation: 'getPetById', outcome: 'OK', status: '200', client: 'client2' }),
      ).to.equal(1);
      expect(m.select('process_cpu_user_seconds_total')).to.deep.equal([]);
      expect(off.gateway.metrics).to.equal(undefined);
      expect((await fetch(`${off.url}/gateway/metrics`)).status).to.equal(404);
    } finally {
      await Promise.all([labelled.close(), off.close()]);
    }
  });

  it('refuses a bad metrics option at creation, naming it', () => {
    expect(() => createGateway({ config: { apis: [] }, metrics: { auth: 'no' as unknown as boolean } })).to.throw(
      TypeError,
      /createGateway: options\.metrics\.auth/,
    );
    expect(() => createGateway({ config: { apis: [] }, metrics: 'on' as unknown as boolean })).to.throw(TypeError, /options\.metrics/);
  });
});
