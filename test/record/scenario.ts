/**
 * The reference scenario over real HTTP, shared by the record and browser tests: a demo authorization
 * server (oidc-provider), a backend, and a gateway chain (recordTransaction, requireToken,
 * introspect, xacmlAuthorize, forwardTokenHeaders, relay, problemJsonErrorHandler) with the
 * monitoring console mounted beside it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { xacmlAuthorize } from '../../src/authorize/index.js';
import { gatewayContext } from '../../src/context.js';
import { createRelay, type Relay } from '../../src/gateway/relay.js';
import {
  createTokenPolicy,
  introspect,
  MemoryTransactionStore,
  monitoringConsole,
  problemJsonErrorHandler,
  recordTransaction,
  requireToken,
} from '../../src/index.js';
import { forwardTokenHeaders } from '../../src/token/forward/index.js';
import { close, listen } from './helpers.js';

export const CONSOLE_USER = { username: 'admin', password: 'console-test-password' };
export const API_PATH = '/gateway/Ente/PetStore/v1';
export const PET = {
  id: 10,
  category: { id: 1, name: 'Dogs' },
  name: 'doggie',
  photoUrls: ['http://127.0.0.1/photo.png'],
  tags: [{ id: 1, name: 'tag1' }],
  status: 'available',
};

/** A running scenario. */
export interface Scenario {
  gateway: string;
  consoleUrl: string;
  as: DemoAuthServer;
  store: MemoryTransactionStore;
  /** Per-API message recording (docs/console.md): the gateway puts it on each request. */
  settings: { recordOutgoingHeaders: boolean };
  /** Headers the backend received, by transaction id. */
  backendSaw: Map<string, IncomingHttpHeaders>;
  /** Every token value used. */
  tokens: string[];
  /**
   * PUT /pet through the gateway; `token` in the query, or in the Authorization header with
   * `header: true`; `backendStatus` makes the backend answer that status.
   */
  putPet(token?: string, header?: boolean, backendStatus?: number, api?: 'Orders'): Promise<Response>;
  stop(): Promise<void>;
}

export async function startScenario(): Promise<Scenario> {
  const as = await startDemoAuthServer({ port: 0 });
  const backendSaw = new Map<string, IncomingHttpHeaders>();
  const backend = createServer((req, res) => {
    backendSaw.set(String(req.headers['gateway-transaction-id']), req.headers);
    req.resume();
    req.on('end', () => {
      // A test asks the backend for an error answer with this header (relayed to it unchanged).
      const wanted = Number(req.headers['x-test-backend-status'] ?? 200);
      const status = wanted >= 200 && wanted <= 599 ? wanted : 200;
      res.writeHead(status, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
      res.end(JSON.stringify(status === 200 ? PET : { error: `backend says ${status}` }));
    });
  });
  const backendUrl = await listen(backend);

  const store = new MemoryTransactionStore();
  const settings = { recordOutgoingHeaders: true };
  const policy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
  const xml = readFileSync(new URL('../fixtures/authorize/petstore-policy.xml', import.meta.url), 'utf8');
  const relay: Relay = createRelay({ target: backendUrl });

  const app = express();
  app.use('/gateway/console', monitoringConsole({ store, basicAuth: CONSOLE_USER }));
  app.use(
    API_PATH,
    recordTransaction({ store }),
    // What createGateway does for a registered API: name it and apply its recording settings.
    (req, _res, next) => {
      const context = gatewayContext(req);
      // A test names another API with this header (several APIs in one scenario).
      const orders = req.headers['x-test-api'] === 'Orders';
      context.api = {
        provider: 'Ente',
        name: orders ? 'Orders' : 'PetStore',
        version: orders ? 2 : 1,
        operation: orders ? 'createOrder' : 'updatePet',
        resourcePath: req.path,
      };
      context.recording = {
        outgoingHeaders: settings.recordOutgoingHeaders,
        incomingHeaders: true,
        requestBody: true,
        responseBody: true,
        maxBodyBytes: 64,
      };
      next();
    },
    requireToken({ policy }),
    introspect({ policy }),
    xacmlAuthorize({ policy: xml }),
    forwardTokenHeaders(),
    relay,
  );
  app.use(problemJsonErrorHandler());
  const server: Server = createServer(app);
  const gateway = await listen(server);

  const tokens: string[] = [];
  return {
    gateway,
    consoleUrl: `${gateway}/gateway/console/`,
    as,
    store,
    settings,
    backendSaw,
    tokens,
    putPet(token, header = false, backendStatus, api) {
      if (token !== undefined) tokens.push(token);
      const query = token !== undefined && !header ? `?access_token=${encodeURIComponent(token)}` : '';
      const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json' };
      if (token !== undefined && header) headers['authorization'] = `Bearer ${token}`;
      if (backendStatus !== undefined) headers['x-test-backend-status'] = String(backendStatus);
      if (api !== undefined) headers['x-test-api'] = api;
      return fetch(`${gateway}${API_PATH}/pet${query}`, { method: 'PUT', headers, body: JSON.stringify(PET) });
    },
    async stop() {
      await close(server);
      await relay.close();
      await close(backend);
      await as.stop();
    },
  };
}

/** The scenario's four exchanges (400, 401, 403, 200); returns the responses by status. */
export async function runFourOutcomes(scenario: Scenario): Promise<Record<'400' | '401' | '403' | '200', Response>> {
  const client1 = await scenario.as.issueToken('client1', 'client1-secret', { scope: 'read write' });
  const client3 = await scenario.as.issueToken('client3', 'client3-secret', { scope: 'read write' });
  const r400 = await scenario.putPet();
  const r401 = await scenario.putPet('bm90LWEtcmVhbC10b2tlbi0xMjM0NTY3ODkw', true);
  const r403 = await scenario.putPet(client3);
  const r200 = await scenario.putPet(client1);
  return { '400': r400, '401': r401, '403': r403, '200': r200 };
}
