/**
 * A DPoP-bound request's credentials stop at the gateway (docs/security.md, "Headers the backend
 * receives"): neither `Authorization: DPoP <token>` nor the `DPoP` proof reaches a backend unless
 * an original-token mode asks for the token, and then only what that mode defines. Over real
 * HTTP, tokens of the demo authorization server, a real backend that echoes what it received:
 * through `createGateway`, whose record lists exactly what the backend received, and through
 * `forwardTokenHeaders` relayed by http-proxy-middleware.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import {
  createGateway,
  forwardTokenHeaders,
  introspect,
  MemoryTransactionStore,
  requireToken,
  type Gateway,
  type GatewayConfig,
  type TransactionRecord,
} from '../../src/index.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { DEFAULT_REDACTED_HEADERS, REDACTED } from '../../src/record/redact.js';
import { dpopKey, proof, type DpopKey } from '../token/binding/support.js';
import { close, echoBackend, listen } from './helpers.js';

const PUBLIC = 'https://api.example.org/edge';
const PATH = '/gateway/Ente/Pets/v1/pets/1';

/** What the echo backend answers: what it received. */
interface Echoed {
  headers: IncomingHttpHeaders;
}

describe('a DPoP-bound request: the token and its proof never reach the backend', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let key: DpopKey;

  before(async () => {
    [as, echo, key] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), dpopKey()]);
  });
  after(async () => {
    await Promise.all([as?.stop(), echo?.stop()]);
  });

  /** A gateway on node:http whose one API relays to the echo backend with `tokenForward`; runs `run` with it. */
  async function withGateway(
    tokenForward: unknown,
    run: (base: string, store: MemoryTransactionStore, gateway: Gateway) => Promise<void>,
  ): Promise<void> {
    const store = new MemoryTransactionStore();
    const config: GatewayConfig = {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', dpop: 'allowed' } },
      apis: [
        {
          provider: 'Ente',
          name: 'Pets',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: tokenForward as never },
          recording: { outgoingHeaders: true },
        },
      ],
    };
    const gateway = createGateway({ config, store, publicBaseUrl: PUBLIC });
    await gateway.ready();
    const server: Server = createServer((req, res) => gateway.handler(req, res));
    try {
      await run(await listen(server), store, gateway);
    } finally {
      await close(server);
      await gateway.close();
    }
  }

  /** A DPoP-bound token and a request's headers carrying it with its proof. */
  async function boundRequest(url: string): Promise<{ token: string; headers: Record<string, string> }> {
    const token = await as.issueToken('client1', 'client1-secret', { dpop: key });
    return { token, headers: { authorization: `DPoP ${token}`, dpop: await proof(key, { method: 'GET', url, token }) } };
  }

  /** The record of the exchange `id`, once saved. */
  async function recordOf(store: MemoryTransactionStore, id: string): Promise<TransactionRecord> {
    for (let i = 0; i < 100; i++) {
      const record = await store.get(id);
      if (record !== undefined) return record;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`no record of ${id}`);
  }

  /**
   * The record's outgoing headers are what the backend received: the same names and values (the
   * credential headers the record redacts, redacted), but the connection's own (`connection`),
   * which the relay's HTTP client writes.
   */
  function expectRecordedAsReceived(record: TransactionRecord, received: IncomingHttpHeaders): void {
    const recorded = Object.fromEntries(Object.entries(record.outgoing?.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
    const got = Object.fromEntries(
      Object.entries(received)
        .filter(([name]) => name !== 'connection')
        .map(([name, value]) => [name, DEFAULT_REDACTED_HEADERS.includes(name) ? REDACTED : String(value)]),
    );
    expect(recorded).to.deep.equal(got);
  }

  for (const [label, tokenForward] of [
    ['token forwarding on (headers)', true],
    ['token forwarding off', false],
  ] as const) {
    it(`${label}: neither Authorization: DPoP nor the DPoP proof is relayed, and the record says what was`, async () => {
      await withGateway(tokenForward, async (base, store) => {
        const { token, headers } = await boundRequest(`${PUBLIC}${PATH}`);
        const res = await fetch(`${base}${PATH}`, { headers });
        expect(res.status).to.equal(201);
        const received = ((await res.json()) as Echoed).headers;
        expect(received, 'Authorization').to.not.have.property('authorization');
        expect(received, 'DPoP').to.not.have.property('dpop');
        expect(JSON.stringify(received)).to.not.include(token);
        if (tokenForward) expect(received['gateway-token-binding']).to.equal('jkt');
        const record = await recordOf(store, res.headers.get('gateway-transaction-id')!);
        expect(record.binding?.result).to.equal('verified');
        expectRecordedAsReceived(record, received);
      });
    });
  }

  it('an original-token mode: the backend gets what the mode defines (Authorization: Bearer), never the DPoP scheme or the proof', async () => {
    await withGateway({ enabled: true, originalToken: 'authorizationHeader' }, async (base, store) => {
      const { token, headers } = await boundRequest(`${PUBLIC}${PATH}`);
      const res = await fetch(`${base}${PATH}`, { headers });
      expect(res.status).to.equal(201);
      const received = ((await res.json()) as Echoed).headers;
      expect(received.authorization).to.equal(`Bearer ${token}`);
      expect(received).to.not.have.property('dpop');
      expectRecordedAsReceived(await recordOf(store, res.headers.get('gateway-transaction-id')!), received);
    });
  });

  it('forwardTokenHeaders relayed by http-proxy-middleware: neither reaches the backend', async () => {
    const policy: TokenPolicy = createTokenPolicy({
      name: 'DemoIdP',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      dpop: 'allowed',
      publicBaseUrl: PUBLIC,
    });
    const app = express();
    app.use('/api', requireToken({ policy }), introspect({ policy }), forwardTokenHeaders(), createProxyMiddleware({ target: echo.url }));
    app.use(problemJsonErrorHandler());
    const server = createServer(app);
    try {
      const base = await listen(server);
      const { token, headers } = await boundRequest(`${PUBLIC}/api/pets/1`);
      const res = await fetch(`${base}/api/pets/1`, { headers });
      expect(res.status, await res.clone().text()).to.equal(201);
      const received = ((await res.json()) as Echoed).headers;
      expect(received, 'Authorization').to.not.have.property('authorization');
      expect(received, 'DPoP').to.not.have.property('dpop');
      expect(JSON.stringify(received)).to.not.include(token);
      expect(received['gateway-token-binding']).to.equal('jkt');
    } finally {
      await close(server);
      policy.close();
    }
  });
});
