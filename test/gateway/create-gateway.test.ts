import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { expect } from 'chai';
import express from 'express';
import { ConfigError, createGateway, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { close, echoBackend, editJson, exampleCopy, listen, openConfig, type Seen } from './helpers.js';

const ADMIN = { username: 'admin', password: 'test-admin-password' };
const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

type Mount = (gateway: Gateway) => Promise<{ server: Server; base: string }>;

/** The gateway in an Express app, as a host mounts it (admin routes on the same app only for these tests; docs/security.md says why a host gives them their own listener). */
const inExpress: Mount = async (gateway) => {
  const app = express();
  app.use(gateway.adminRouter);
  app.use(gateway.router);
  app.use((_req, res) => res.status(418).send('the app itself'));
  const server = createServer(app);
  return { server, base: await listen(server) };
};

/** The gateway on a plain node:http server through gateway.handler; other paths go to the host's own handler. */
const onNodeHttp: Mount = async (gateway) => {
  const admin = express();
  admin.use(gateway.adminRouter);
  const hostApp = (req: IncomingMessage, res: ServerResponse): void => {
    gateway.handler(req, res, () => {
      res.writeHead(418, { 'Content-Type': 'text/plain' });
      res.end('the app itself');
    });
  };
  const server = createServer((req, res) => {
    if (/^\/gateway\/(admin|console|health)(\/|$)/.test(req.url ?? ''))
      admin(req as express.Request, res as express.Response, () => hostApp(req, res));
    else hostApp(req, res);
  });
  return { server, base: await listen(server) };
};

const MOUNTS: ReadonlyArray<readonly [string, Mount]> = [
  ['gateway.router in Express', inExpress],
  ['gateway.handler on node:http', onNodeHttp],
];

for (const [how, mount] of MOUNTS) {
  describe(`createGateway (${how})`, () => {
    let backend: Awaited<ReturnType<typeof echoBackend>>;
    before(async () => {
      backend = await echoBackend();
    });
    after(async () => {
      await backend.stop();
    });

    it('validates its options at factory time', () => {
      expect(() => createGateway({ config: { apis: [] }, configCacheTtlSeconds: 10, cacheTtlSeconds: 10 })).to.throw(
        TypeError,
        /old name of configCacheTtlSeconds/,
      );
      expect(() => createGateway(undefined as never)).to.throw(TypeError, /options must be an object/);
      expect(() => createGateway({ config: 42 as never })).to.throw(TypeError, /options\.config/);
      expect(() => createGateway({ config: openConfig(backend.url), basePath: 'gateway' })).to.throw(TypeError, /options\.basePath/);
      expect(() => createGateway({ config: openConfig(backend.url), admin: {} })).to.throw(TypeError, /no open default/);
      expect(() => createGateway({ config: openConfig(backend.url), adminHostName: 'admin.example.org:8081' })).to.throw(
        TypeError,
        /options\.adminHostName must be a host name/,
      );
      expect(() => createGateway({ config: openConfig(backend.url), admin: { basicAuth: { username: 'admin', password: '' } } })).to.throw(
        TypeError,
        /basicAuth/,
      );
      expect(() => createGateway({ config: openConfig(backend.url), relay: { connections: -1 } })).to.throw(
        TypeError,
        /options\.relay\.connections/,
      );
      // Rejected at start-up rather than by Node's setHeader on the first relayed answer.
      expect(() => createGateway({ config: openConfig(backend.url), server: 'Gateway\u0000' })).to.throw(TypeError, /options\.server/);
      const clusterSecret = 'create-gateway-test-cluster-secret-0123456789';
      expect(() =>
        createGateway({ config: openConfig(backend.url), redis: 'redis://127.0.0.1:6379', clusterSecret, redisCommandTimeoutMs: 0 }),
      ).to.throw(TypeError, /options\.redisCommandTimeoutMs/);
      // Redis without the secret that signs what the instances share there: refused, not trusted.
      expect(() => createGateway({ config: openConfig(backend.url), redis: 'redis://127.0.0.1:6379' })).to.throw(
        TypeError,
        /options\.clusterSecret is required with redis/,
      );
      expect(() =>
        createGateway({ config: openConfig(backend.url), redis: 'redis://127.0.0.1:6379', clusterSecret: 'too-short' }),
      ).to.throw(TypeError, /options\.clusterSecret must be a string of at least 32 characters/);
      expect(() => createGateway({ config: openConfig(backend.url), server: '' })).to.throw(TypeError, /options\.server/);
    });

    it('sends Gateway-Transaction-ID on every answer and Gateway-Message-ID on success only (relayed 4xx/5xx, 404, 503)', async () => {
      // A backend that answers each path with the status it names, and tries to set the ids itself.
      const statuses = createServer((req, res) => {
        res.writeHead(Number(req.url!.slice(1)), { 'Gateway-Message-ID': 'from-backend', 'Gateway-Transaction-ID': 'from-backend' });
        res.end('backend');
      });
      const statusUrl = await listen(statuses);
      const downServer = createServer();
      const downUrl = await listen(downServer);
      await close(downServer);
      const gateway = createGateway({
        config: {
          apis: [
            { provider: 'Ente', name: 'Status', version: 1, backend: { url: statusUrl } },
            { provider: 'Ente', name: 'Down', version: 1, backend: { url: downUrl } },
          ],
        },
      });
      const { server, base } = await mount(gateway);
      try {
        const cases: Array<[string, number, boolean]> = [
          ['/gateway/Ente/Status/v1/200', 200, true],
          ['/gateway/Ente/Status/v1/302', 302, true],
          ['/gateway/Ente/Status/v1/404', 404, false],
          ['/gateway/Ente/Status/v1/500', 500, false],
          ['/gateway/Ente/Nope/v1/x', 404, false],
          ['/gateway/Ente/Down/v1/x', 503, false],
        ];
        for (const [path, status, success] of cases) {
          const res = await fetch(`${base}${path}`, { redirect: 'manual' });
          expect(res.status, path).to.equal(status);
          expect(res.headers.get('gateway-transaction-id'), path).to.match(/^[0-9a-f-]{36}$/);
          if (success) expect(res.headers.get('gateway-message-id'), path).to.match(/^[0-9a-f-]{36}$/);
          else expect(res.headers.get('gateway-message-id'), path).to.equal(null);
          await res.arrayBuffer();
        }
      } finally {
        await close(server);
        await close(statuses);
        await gateway.close();
      }
    });

    describe('routing and admin', () => {
      let gateway: Gateway;
      let server: Server;
      let base: string;
      let config: GatewayConfig;
      const store = new MemoryTransactionStore();

      before(async () => {
        config = openConfig(backend.url);
        config.apis.push({
          provider: 'Ente',
          name: 'Ops',
          version: 2,
          backend: { url: `${backend.url}/base/` },
          operations: [{ name: 'getPetById', method: 'GET', path: '/pet/{petId}' }],
        });
        let calls = 0;
        gateway = createGateway({
          // A loader that turns invalid from its third call on.
          config: () => (++calls >= 3 ? ({ apis: [{ provider: 'Ente' }] } as never) : config),
          admin: { basicAuth: ADMIN },
          store,
          server: 'TestGateway',
          messages: 'en',
        });
        ({ server, base } = await mount(gateway));
      });
      after(async () => {
        await close(server);
        await gateway.close();
      });

      it('relays to the API of provider, name and version, below the backend URL path', async () => {
        const res = await fetch(`${base}/gateway/Ente/Ops/v2/pet/7?x=1`);
        expect(res.status).to.equal(201);
        expect(((await res.json()) as Seen).url).to.equal('/base/pet/7?x=1');
        expect(res.headers.get('server')).to.equal('TestGateway');
      });

      it('answers 404 problem+json for an unknown API, version or operation, and records it', async () => {
        for (const path of ['/gateway/Ente/Nope/v1/pet', '/gateway/Ente/Echo/v9/pet', '/gateway/Ente/Echo', '/gateway/x']) {
          const res = await fetch(`${base}${path}`);
          expect(res.status, path).to.equal(404);
          expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
          expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
          expect(await res.json()).to.deep.equal({
            type: 'https://httpstatuses.com/404',
            title: 'Not Found',
            status: 404,
            detail: 'No registered API matches the request',
            gateway_status: 'protocol:GATEWAY-404',
          });
        }
        const page = await store.query({ outcome: 'NOT_FOUND' });
        expect(page.items.length).to.be.greaterThanOrEqual(4);
      });

      it('answers 404 ERR_OPERATION_NOT_FOUND for an existing API without that operation: the API named, recorded under it', async () => {
        const wrongMethod = await fetch(`${base}/gateway/Ente/Ops/v2/pet/7`, { method: 'DELETE' });
        const undeclared = await fetch(`${base}/gateway/Ente/Ops/v2/store/inventory`);
        for (const res of [wrongMethod, undeclared]) {
          expect(res.status).to.equal(404);
          expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
          expect(await res.json()).to.deep.equal({
            type: 'https://httpstatuses.com/404',
            title: 'Not Found',
            status: 404,
            detail: "The service gw/Ops (version:2) provided by gw/Ente has no operation for the request's method and path",
            gateway_status: 'protocol:GATEWAY-1377',
          });
        }
        const record = await store.get(undeclared.headers.get('gateway-transaction-id')!);
        expect(record).to.deep.include({ errorCode: 'ERR_OPERATION_NOT_FOUND', gatewayStatus: 'protocol:GATEWAY-1377' });
        expect(record?.outcome.code).to.equal('NOT_FOUND');
        expect(record?.api).to.deep.equal({ provider: 'Ente', name: 'Ops', version: 2 });
        expect(record?.operation).to.equal(undefined);
        // The Italian message says the same.
        const it = createGateway({ config: () => config, messages: 'it' });
        const mounted = await mount(it);
        try {
          const answer = await fetch(`${mounted.base}/gateway/Ente/Ops/v2/pet/7`, { method: 'POST' });
          expect(((await answer.json()) as { detail: string }).detail).to.equal(
            "Il servizio gw/Ops (versione:2) erogato da gw/Ente non ha un'operazione per il metodo e il percorso della richiesta",
          );
        } finally {
          await close(mounted.server);
          await it.close();
        }
      });

      it('leaves paths outside the base path to the app', async () => {
        const res = await fetch(`${base}/elsewhere`);
        expect(res.status).to.equal(418);
      });

      it('protects the admin routes and the console with the credentials', async () => {
        const anonymous = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: { 'X-Gateway-Console': '1' } });
        expect(anonymous.status).to.equal(401);
        expect(anonymous.headers.get('www-authenticate')).to.match(/^Basic realm="Gateway admin"/);
        const wrong = await fetch(`${base}/gateway/admin/reset-caches`, {
          method: 'POST',
          headers: { Authorization: basic('admin', 'guess'), 'X-Gateway-Console': '1' },
        });
        expect(wrong.status).to.equal(401);
        const crossSite = await fetch(`${base}/gateway/admin/reset-caches`, {
          method: 'POST',
          headers: { Authorization: basic(ADMIN.username, ADMIN.password), 'Sec-Fetch-Site': 'cross-site' },
        });
        expect(crossSite.status).to.equal(403);
        expect((await fetch(`${base}/gateway/console/api/transactions`, { headers: { 'X-Gateway-Console': '1' } })).status).to.equal(401);
        const consoleOk = await fetch(`${base}/gateway/console/api/transactions`, {
          headers: { Authorization: basic(ADMIN.username, ADMIN.password), 'X-Gateway-Console': '1' },
        });
        expect(consoleOk.status).to.equal(200);
      });

      it('ResetAllCaches reloads; an invalid configuration is refused with its reason and the previous one stays', async () => {
        const auth = { Authorization: basic(ADMIN.username, ADMIN.password), 'X-Gateway-Console': '1' };
        // Second load of the loader: valid.
        const ok = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: auth });
        expect(ok.status).to.equal(200);
        expect(((await ok.json()) as { apis: string[] }).apis).to.deep.equal(['Ente/Echo/v1', 'Ente/Ops/v2']);
        // Third: invalid.
        const refused = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: auth });
        expect(refused.status).to.equal(422);
        const problem = (await refused.json()) as { detail: string; issues: Array<{ path: string }> };
        expect(problem.detail).to.contain('apis[0].name: is required').and.to.contain('previous configuration stays in force');
        expect(problem.issues.map((i) => i.path)).to.include.members(['apis[0].name', 'apis[0].version', 'apis[0].backend']);
        // Still served by the previous configuration.
        expect((await fetch(`${base}/gateway/Ente/Echo/v1/pet`)).status).to.equal(201);
        const status = await fetch(`${base}/gateway/admin/status`, { headers: auth });
        const state = (await status.json()) as { apis: string[]; lastError?: { message: string } };
        expect(state.apis).to.deep.equal(['Ente/Echo/v1', 'Ente/Ops/v2']);
        expect(state.lastError?.message).to.contain('apis[0].name');
      });
    });

    it('has no admin routes without admin credentials', async () => {
      const gateway = createGateway({ config: openConfig(backend.url) });
      const { server, base } = await mount(gateway);
      try {
        const res = await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST' });
        expect(res.status).to.equal(404);
        expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
      } finally {
        await close(server);
        await gateway.close();
      }
    });

    it('fails closed with 500 while no configuration could ever be loaded, and ready() says why', async () => {
      const gateway = createGateway({ config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: 'not a url' } }] } });
      const { server, base } = await mount(gateway);
      try {
        const error = await gateway.ready().catch((e: unknown) => e);
        expect(error).to.be.instanceOf(ConfigError);
        expect((error as Error).message).to.contain('apis[0].backend.url: must be an http(s) URL');
        const res = await fetch(`${base}/gateway/Ente/Echo/v1/`);
        expect(res.status).to.equal(500);
        const body = (await res.json()) as Record<string, unknown>;
        expect(body.gateway_status).to.equal('integration:GATEWAY-500');
        expect(JSON.stringify(body)).to.not.contain('backend.url');
      } finally {
        await close(server);
        await gateway.close();
      }
    });

    describe('configuration cache', () => {
      let as: DemoAuthServer;
      before(async () => {
        as = await startDemoAuthServer({ port: 0 });
      });
      after(async () => {
        await as.stop();
      });

      it('relays the original token when an original-token mode asks for it, and records it only redacted', async () => {
        const store = new MemoryTransactionStore();
        const config: GatewayConfig = {
          tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
          apis: [
            {
              provider: 'Ente',
              name: 'Echo',
              version: 1,
              backend: { url: backend.url },
              tokenManagement: {
                enabled: true,
                policy: 'DemoIdP',
                introspection: true,
                tokenForward: { enabled: true, mode: 'headers', originalToken: 'authorizationHeader' },
              },
              recording: { outgoingHeaders: true },
            },
          ],
        };
        const gateway = createGateway({ config, store });
        const { server, base } = await mount(gateway);
        try {
          const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
          const res = await fetch(`${base}/gateway/Ente/Echo/v1/pet?access_token=${encodeURIComponent(token)}`);
          expect(res.status).to.equal(201);
          const seen = (await res.json()) as Seen;
          expect(seen.headers.authorization).to.equal(`Bearer ${token}`);
          expect(seen.url).to.equal('/pet');
          expect(seen.headers['gateway-token-clientid']).to.equal('client1');
          const [record] = (await store.query({})).items;
          expect(record?.outgoing?.headers['Authorization']).to.equal('[redacted]');
          expect(JSON.stringify(record)).to.not.include(token);
        } finally {
          await close(server);
          await gateway.close();
        }
      });

      it('keeps the file as first read until ResetAllCaches, which also forgets token results', async () => {
        const copy = await exampleCopy();
        await editJson<GatewayConfig>(copy.configFile, (c) => {
          c.tokenPolicies!.DemoIdP!.issuer = as.issuer;
          c.apis[0]!.backend.url = backend.url;
          c.apis[0]!.authorization = { mode: 'none' };
          delete c.apis[0]!.operations;
        });
        const gateway = createGateway({ config: copy.configFile });
        const { server, base } = await mount(gateway);
        try {
          const token = await as.issueToken('client3', 'client3-secret');
          const call = (): Promise<Response> =>
            fetch(`${base}/gateway/Ente/PetStore/v1/pet`, { headers: { Authorization: `Bearer ${token}` } });
          expect((await call()).status).to.equal(201);
          const introspections = as.stats.introspections;
          expect((await call()).status).to.equal(201);
          expect(as.stats.introspections, 'second call served from the token cache').to.equal(introspections);

          // The file changes: token management turned off for a different version number.
          await editJson<GatewayConfig>(copy.configFile, (c) => {
            c.apis[0]!.version = 2;
          });
          expect((await call()).status, 'old configuration still in force').to.equal(201);
          expect((await fetch(`${base}/gateway/Ente/PetStore/v2/pet`)).status).to.equal(404);

          const result = await gateway.resetAllCaches();
          expect(result.apis).to.deep.equal(['Ente/PetStore/v2']);
          expect(result.tokenResultsCleared).to.equal(1);
          expect((await call()).status).to.equal(404);
          const v2 = await fetch(`${base}/gateway/Ente/PetStore/v2/pet`, { headers: { Authorization: `Bearer ${token}` } });
          expect(v2.status).to.equal(201);
          expect(as.stats.introspections, 'token introspected again after the reset').to.equal(introspections + 1);

          // A broken file at reset: refused, the previous configuration stays.
          await writeFile(copy.configFile, '{ "apis": ');
          const error = await gateway.resetAllCaches().catch((e: unknown) => e);
          expect(error).to.be.instanceOf(ConfigError);
          expect((error as Error).message).to.contain('not valid JSON');
          expect((await fetch(`${base}/gateway/Ente/PetStore/v2/pet`, { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(
            201,
          );
        } finally {
          await close(server);
          await gateway.close();
          await copy.remove();
        }
      });

      it('reloads by itself once the configured lifetime has passed', async () => {
        let loads = 0;
        const gateway = createGateway({
          config: () => {
            loads++;
            return openConfig(backend.url);
          },
          configCacheTtlSeconds: 0.3,
        });
        const { server, base } = await mount(gateway);
        try {
          await Promise.all([
            fetch(`${base}/gateway/Ente/Echo/v1/a`),
            fetch(`${base}/gateway/Ente/Echo/v1/b`),
            fetch(`${base}/gateway/Ente/Echo/v1/c`),
          ]);
          expect(loads, 'concurrent first requests share one load').to.equal(1);
          await fetch(`${base}/gateway/Ente/Echo/v1/d`);
          expect(loads).to.equal(1);
          await new Promise((resolve) => setTimeout(resolve, 450));
          await fetch(`${base}/gateway/Ente/Echo/v1/e`);
          expect(loads).to.equal(2);
        } finally {
          await close(server);
          await gateway.close();
        }
      });

      it('keeps serving the previous configuration when the reload at expiry fails', async () => {
        let loads = 0;
        const gateway = createGateway({
          config: () => (++loads === 1 ? openConfig(backend.url) : ({ apis: 'broken' } as never)),
          cacheTtlSeconds: 0.3,
        });
        const { server, base } = await mount(gateway);
        try {
          expect((await fetch(`${base}/gateway/Ente/Echo/v1/a`)).status).to.equal(201);
          await new Promise((resolve) => setTimeout(resolve, 450));
          expect((await fetch(`${base}/gateway/Ente/Echo/v1/b`)).status).to.equal(201);
          expect(loads).to.equal(2);
          expect(gateway.configState.lastError?.message).to.contain('apis: must be an array');
        } finally {
          await close(server);
          await gateway.close();
        }
      });
    });
  });
}
