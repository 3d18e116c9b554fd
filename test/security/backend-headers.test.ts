/**
 * Attacks on the headers a backend trusts, played over real HTTP against a gateway built with
 * `createGateway`, in front of a stock Python `wsgiref` backend (which reads `_` and `-` in header
 * names alike) and an echo backend, with the demo authorization server.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { createGateway, createRelay, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { close, echoBackend, listen, type Seen } from '../gateway/helpers.js';
import { rawRequest } from './support/http.js';
import { startWsgiBackend, type WsgiBackend, type WsgiSeen } from './support/wsgi-backend.js';

describe('security: headers sent to the backend', () => {
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let wsgi: WsgiBackend;
  let store: MemoryTransactionStore;
  let gateway: Gateway;
  let server: Server;
  let base: string;
  let token: string;

  function config(): GatewayConfig {
    const tokenManagement = { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: true } as const;
    return {
      tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
      apis: [
        { provider: 'Ente', name: 'Wsgi', version: 1, backend: { url: wsgi.url }, tokenManagement, recording: { outgoingHeaders: true } },
        { provider: 'Ente', name: 'Echo', version: 1, backend: { url: echo.url }, tokenManagement, recording: { outgoingHeaders: true } },
      ],
    };
  }

  before(async () => {
    [as, echo, wsgi] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), startWsgiBackend()]);
    store = new MemoryTransactionStore();
    gateway = createGateway({ config: config(), store });
    const app = express();
    app.use(gateway.router);
    server = createServer(app);
    base = await listen(server);
    token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
  });

  after(async () => {
    await close(server);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop(), wsgi.stop()]);
  });

  it('a client header with underscores cannot pose as a gateway header at a WSGI backend', async () => {
    // Before: Gateway_Token_Subject passed the filter and WSGI read it as HTTP_GATEWAY_TOKEN_SUBJECT.
    const res = await rawRequest(base, '/gateway/Ente/Wsgi/v1/whoami', {
      headers: {
        authorization: `Bearer ${token}`,
        Gateway_Token_Subject: 'admin',
        Gateway_Token_ClientId: 'trusted-client',
        Gateway_Token_Roles: 'admin',
        X_Forwarded_For: '10.0.0.1',
        'X-Innocent': 'kept',
      },
    });
    expect(res.status).to.equal(200);
    const seen = JSON.parse(res.body) as WsgiSeen;
    expect(seen.HTTP_GATEWAY_TOKEN_CLIENTID).to.equal('client1');
    expect(seen.HTTP_GATEWAY_TOKEN_SUBJECT ?? '').to.not.include('admin');
    expect(seen.HTTP_GATEWAY_TOKEN_ROLES).to.equal(undefined);
    expect(seen.HTTP_X_FORWARDED_FOR).to.equal('127.0.0.1');
    expect(seen.HTTP_X_INNOCENT).to.equal('kept');
  });

  it('Connection cannot make the relay drop the headers the gateway added; the backend gets what the record says was sent', async () => {
    // Before: Connection: close, gateway-token-clientid made the relay drop the gateway's own header,
    // while the record listed it as sent.
    const res = await rawRequest(base, '/gateway/Ente/Echo/v1/pet', {
      headers: {
        authorization: `Bearer ${token}`,
        connection: 'close, gateway-token-clientid, gateway-transaction-id, x-client-hop',
        'x-client-hop': 'dropped, as the client asked',
      },
    });
    expect(res.status).to.equal(201);
    const seen = JSON.parse(res.body) as Seen;
    expect(seen.headers['gateway-token-clientid']).to.equal('client1');
    expect(seen.headers['x-client-hop']).to.equal(undefined);
    const record = await store.get(res.headers['gateway-transaction-id'] as string);
    const sent = record?.outgoing?.headers ?? {};
    expect(Object.keys(sent).length).to.be.greaterThan(1);
    for (const [name, value] of Object.entries(sent)) {
      expect(seen.headers[name.toLowerCase()], name).to.equal(value);
    }
  });

  it('X-Forwarded-* and Forwarded come from the connection, not from an untrusted client', async () => {
    const res = await rawRequest(base, '/gateway/Ente/Echo/v1/pet', {
      headers: {
        authorization: `Bearer ${token}`,
        host: 'gateway.example',
        'x-forwarded-for': '203.0.113.9',
        'x-forwarded-host': 'admin.internal',
        'x-forwarded-proto': 'https',
        forwarded: 'for=203.0.113.9;proto=https',
      },
    });
    expect(res.status).to.equal(201);
    const seen = JSON.parse(res.body) as Seen;
    expect(seen.headers['x-forwarded-for']).to.equal('127.0.0.1');
    expect(seen.headers['x-forwarded-host']).to.equal('gateway.example');
    expect(seen.headers['x-forwarded-proto']).to.equal('http');
    expect(seen.headers.forwarded).to.equal('for=127.0.0.1;host=gateway.example;proto=http');
  });

  it('a trusted proxy (trustProxy, Express semantics) has its X-Forwarded-* continued', async () => {
    const trusted = createGateway({ config: config(), trustProxy: 'loopback' });
    const app = express();
    app.use(trusted.router);
    const proxyServer = createServer(app);
    const proxied = await listen(proxyServer);
    try {
      const res = await rawRequest(proxied, '/gateway/Ente/Echo/v1/pet', {
        headers: {
          authorization: `Bearer ${token}`,
          host: 'gw.example',
          'x-forwarded-for': '203.0.113.9',
          'x-forwarded-proto': 'https',
          forwarded: 'for=203.0.113.9',
        },
      });
      expect(res.status).to.equal(201);
      const seen = JSON.parse(res.body) as Seen;
      expect(seen.headers['x-forwarded-for']).to.equal('203.0.113.9, 127.0.0.1');
      expect(seen.headers['x-forwarded-proto']).to.equal('https');
      expect(seen.headers.forwarded).to.equal('for=203.0.113.9, for=127.0.0.1;host=gw.example;proto=http');
    } finally {
      await close(proxyServer);
      await trusted.close();
    }
    expect(() => createGateway({ config: config(), trustProxy: -1 })).to.throw(TypeError, /trustProxy/);
    expect(() => createGateway({ config: config(), trustProxy: ['not an address'] })).to.throw(TypeError, /trustProxy/);
  });

  it('keepUnderscoreHeaders relays underscore names, but never a gateway header in disguise', async () => {
    const relay = createRelay({ target: echo.url, keepUnderscoreHeaders: true });
    const app = express();
    const { forwardTokenHeaders } = await import('../../src/index.js');
    app.use(forwardTokenHeaders({ mode: [] }), relay);
    const relayServer = createServer(app);
    const url = await listen(relayServer);
    try {
      const res = await rawRequest(url, '/x', { headers: { X_Custom_Thing: '1', Gateway_Token_Subject: 'admin' } });
      const seen = JSON.parse(res.body) as Seen;
      expect(seen.headers['x_custom_thing']).to.equal('1');
      expect(seen.headers['gateway_token_subject']).to.equal(undefined);
    } finally {
      await close(relayServer);
      await relay.close();
    }
    expect(() => createRelay({ target: echo.url, keepUnderscoreHeaders: 'yes' as never })).to.throw(TypeError, /keepUnderscoreHeaders/);
  });
});
