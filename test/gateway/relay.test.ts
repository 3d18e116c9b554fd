import { createServer, request, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { express4 } from '../support/express4.js';
import { createGateway, createRelay, problemJsonErrorHandler, type Gateway } from '../../src/index.js';
import { close, echoBackend, listen, openConfig, type Seen } from './helpers.js';

/** A raw HTTP exchange on a fresh connection (fetch refuses hop-by-hop request headers). */
function raw(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends a chunked body in two parts, the second only once the response has started: this completes
 * only if the relay streams the request body (a relay that buffered it whole would wait forever).
 */
function twoPartUpload(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no response before the body ended: the relay buffered the request')), 5000);
    const req = request(
      url,
      { method: 'POST', headers: { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.once('data', () => req.end('part-2'));
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve(body);
        });
      },
    );
    req.on('error', reject);
    req.flushHeaders();
    req.write('part-1;');
  });
}

/** How a test server serves the gateway: in an Express 5 or 4 app (gateway.router), or on plain node:http (gateway.handler). */
const SERVINGS: ReadonlyArray<readonly [string, (gateway: Gateway) => Server]> = [
  ['Express 5', (gateway) => createServer(express().use(gateway.router))],
  ['Express 4', (gateway) => createServer(express4().use(gateway.router))],
  ['node:http, gateway.handler', (gateway) => createServer(gateway.handler)],
];

for (const [flavour, serve] of SERVINGS) {
  describe(`relay through createGateway (${flavour})`, () => {
    let backend: Awaited<ReturnType<typeof echoBackend>>;
    let gateway: Gateway;
    let server: Server;
    let base: string;

    before(async () => {
      backend = await echoBackend();
      gateway = createGateway({ config: openConfig(backend.url), relay: { keepAliveTimeoutMs: 30_000 } });
      server = serve(gateway);
      base = `${await listen(server)}/gateway/Ente/Echo/v1`;
    });
    after(async () => {
      await close(server);
      await gateway.close();
      await backend.stop();
    });

    it('relays method, resource path, query and body unchanged, and the answer back', async () => {
      const res = await fetch(`${base}/pet/findByStatus?status=available&status=sold&x=%20y`, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/json', 'X-Custom': 'kept' },
        body: '{"name":"doggie"}',
      });
      expect(res.status).to.equal(201);
      const seen = (await res.json()) as Seen;
      expect(seen.method).to.equal('PATCH');
      expect(seen.url).to.equal('/pet/findByStatus?status=available&status=sold&x=%20y');
      expect(seen.body).to.equal('{"name":"doggie"}');
      expect(seen.headers['x-custom']).to.equal('kept');
      expect(seen.headers['content-type']).to.equal('application/json');
      expect(seen.headers.host).to.equal(new URL(backend.url).host);
      expect(seen.headers['x-forwarded-for']).to.equal('127.0.0.1');
      expect(seen.headers['gateway-transaction-id']).to.equal(res.headers.get('gateway-transaction-id'));
      expect(res.headers.get('x-backend')).to.equal('echo');
      expect(res.headers.getSetCookie()).to.deep.equal(['a=1', 'b=2']);
    });

    it('adds Server and the gateway ids, and drops hop-by-hop headers both ways', async () => {
      const res = await raw(`${base}/`, {
        'X-Hop-In': 'x',
        Connection: 'X-Hop-In',
        'Proxy-Authorization': 'Basic eDp5',
        TE: 'trailers',
        'Keep-Alive': 'timeout=5',
      });
      const seen = JSON.parse(res.body) as Seen;
      expect(seen.url).to.equal('/');
      expect(seen.headers).to.not.have.any.keys('x-hop-in', 'proxy-authorization', 'te');
      expect(seen.headers['keep-alive']).to.equal(undefined);
      expect(res.headers.server).to.equal('Gateway');
      expect(res.headers['gateway-transaction-id']).to.match(/^[0-9a-f-]{36}$/);
      expect(res.headers['gateway-message-id']).to.match(/^[0-9a-f-]{36}$/);
      expect(res.headers['x-hop']).to.equal(undefined);
      expect(res.headers['keep-alive']).to.not.equal('timeout=60');
      expect(res.headers['x-backend']).to.equal('echo');
    });

    it('overwrites a client-sent Gateway-Transaction-ID before it reaches the backend', async () => {
      const res = await fetch(`${base}/x`, { headers: { 'Gateway-Transaction-ID': 'client-made' } });
      const seen = (await res.json()) as Seen;
      expect(seen.headers['gateway-transaction-id']).to.equal(res.headers.get('gateway-transaction-id'));
      expect(seen.headers['gateway-transaction-id']).to.not.equal('client-made');
    });

    it('streams the request body to the backend as it arrives', async () => {
      expect(await twoPartUpload(`${base}/early`)).to.equal('got-first;part-1;part-2');
    });

    it('streams the response to the client as the backend sends it', async () => {
      const res = await fetch(`${base}/hold`);
      const reader = res.body!.getReader();
      const first = await reader.read();
      expect(Buffer.from(first.value!).toString()).to.equal('first;');
      backend.release();
      let rest = '';
      for (let part = await reader.read(); !part.done; part = await reader.read()) rest += Buffer.from(part.value).toString();
      expect(rest).to.equal('second');
    });

    it('keeps connections to the backend alive between requests', async () => {
      const before = backend.seen.length;
      for (let i = 0; i < 3; i++) await (await fetch(`${base}/k${i}`)).arrayBuffer();
      const sockets = new Set(backend.seen.slice(before).map((s) => s.socket));
      expect(sockets.size).to.equal(1);
    });
  });
}

describe('relay failures', () => {
  let app: express.Express;
  let server: Server;
  let base: string;
  let relays: Array<ReturnType<typeof createRelay>> = [];
  let backend: Awaited<ReturnType<typeof echoBackend>>;

  before(async () => {
    backend = await echoBackend();
    // A port that was just in use and is now closed: "backend down".
    const down = createServer();
    const downUrl = await listen(down);
    await close(down);
    relays = [createRelay({ target: downUrl }), createRelay({ target: backend.url, timeoutMs: 200 })];
    app = express();
    app.use('/down', relays[0]!);
    app.use(
      '/slow',
      (req, _res, next) => {
        req.url = '/slow';
        next();
      },
      relays[1]!,
    );
    app.use(problemJsonErrorHandler());
    server = createServer(app);
    base = await listen(server);
  });
  after(async () => {
    await close(server);
    for (const relay of relays) await relay.close();
    await backend.stop();
  });

  it('answers 503 problem+json (GATEWAY-516) when the backend is unreachable', async () => {
    const res = await fetch(`${base}/down/pet`, { method: 'POST', body: 'x' });
    expect(res.status).to.equal(503);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).to.include({ status: 503, gateway_status: 'integration:GATEWAY-516', title: 'Service Unavailable' });
    expect(JSON.stringify(body)).to.not.contain('ECONNREFUSED');
  });

  it('answers 504 problem+json (GATEWAY-516) when the backend does not answer in time', async () => {
    const res = await fetch(`${base}/slow`);
    expect(res.status).to.equal(504);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).to.include({ status: 504, gateway_status: 'integration:GATEWAY-516' });
  });

  it('used alone, sends the transaction id to the backend in place of a client-sent one', async () => {
    const alone = express();
    const relay = createRelay({ target: backend.url });
    alone.use('/api', relay);
    const aloneServer = createServer(alone);
    const url = await listen(aloneServer);
    try {
      const res = await fetch(`${url}/api/pet?x=1`, { headers: { 'Gateway-Transaction-ID': 'client-made' } });
      const seen = (await res.json()) as Seen;
      expect(seen.url).to.equal('/pet?x=1');
      expect(seen.headers['gateway-transaction-id']).to.match(/^[0-9a-f-]{36}$/);
    } finally {
      await close(aloneServer);
      await relay.close();
    }
  });

  it('answers with the gateway Server (option server) and ids in place of the backend ones (message id on success only)', async () => {
    const statusBackend = createServer((req, res) => {
      res.writeHead(req.url === '/missing' ? 404 : 200, {
        'Content-Type': 'text/plain',
        Server: 'Backend/2',
        'Gateway-Message-ID': 'spoofed',
      });
      res.end(String(req.headers['gateway-transaction-id']));
    });
    const backendUrl = await listen(statusBackend);
    const alone = express();
    const relay = createRelay({ target: backendUrl, server: 'MyGateway/1' });
    alone.use('/api', relay);
    const aloneServer = createServer(alone);
    const url = await listen(aloneServer);
    try {
      const ok = await fetch(`${url}/api/pet`);
      const sentToBackend = await ok.text();
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('server')).to.equal('MyGateway/1');
      expect(ok.headers.get('gateway-transaction-id'))
        .to.equal(sentToBackend)
        .and.match(/^[0-9a-f-]{36}$/);
      expect(ok.headers.get('gateway-message-id'))
        .to.match(/^[0-9a-f-]{36}$/)
        .and.not.equal(sentToBackend);

      const missing = await fetch(`${url}/api/missing`);
      expect(missing.status).to.equal(404);
      expect(missing.headers.get('server')).to.equal('MyGateway/1');
      expect(missing.headers.get('gateway-transaction-id')).to.equal(await missing.text());
      expect(missing.headers.get('gateway-message-id')).to.equal(null);

      // Without a server option, no Server header (the backend's is dropped); the ids come always.
      const plainRelay = createRelay({ target: backendUrl });
      const plain = express();
      plain.use('/api', plainRelay);
      const plainServer = createServer(plain);
      const plainUrl = await listen(plainServer);
      try {
        const res = await fetch(`${plainUrl}/api/pet`);
        await res.text();
        expect(res.headers.get('server')).to.equal(null);
        expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
        expect(res.headers.get('gateway-message-id'))
          .to.match(/^[0-9a-f-]{36}$/)
          .and.not.equal('spoofed');
      } finally {
        await close(plainServer);
        await plainRelay.close();
      }
    } finally {
      await close(aloneServer);
      await close(statusBackend);
      await relay.close();
    }
  });

  it('says in the context, before the response closes, that a backend failed after its status line', async () => {
    const cutting = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Length': '1000' });
      res.write('part;');
      setTimeout(() => res.socket?.destroy(), 30);
    });
    const cuttingUrl = await listen(cutting);
    const relay = createRelay({ target: cuttingUrl });
    const seenAtClose: Array<{ error: unknown; codes: string[] }> = [];
    const alone = express();
    // Registered before the relay, as the recorder is: it must already read the backend's failure.
    alone.use((req, res, next) => {
      res.on('close', () => seenAtClose.push({ error: req.gateway?.error, codes: req.gateway?.diagnostics.map((d) => d.code) ?? [] }));
      next();
    });
    alone.use('/api', relay);
    const aloneServer = createServer(alone);
    const url = await listen(aloneServer);
    try {
      const res = await fetch(`${url}/api/x`);
      expect(res.status).to.equal(200);
      let cut = false;
      await res.text().catch(() => (cut = true));
      expect(cut).to.equal(true);
      for (let i = 0; i < 50 && seenAtClose.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(seenAtClose).to.have.length(1);
      expect(seenAtClose[0]!.error).to.deep.equal({
        code: 'ERR_BACKEND_UNAVAILABLE',
        status: 503,
        gatewayStatus: 'integration:GATEWAY-516',
        outcome: 'CONNECTION_ERROR',
      });
      expect(seenAtClose[0]!.codes).to.include('ERR_BACKEND_UNAVAILABLE').and.not.include('RELAY_ABORTED');
    } finally {
      await close(aloneServer);
      await close(cutting);
      await relay.close();
    }
  });

  it('validates its options at factory time', () => {
    expect(() => createRelay({ target: 'http://x', server: 'bad\r\nInjected: 1' })).to.throw(
      TypeError,
      /options\.server must be a header value/,
    );
    expect(() => createRelay({ target: 'http://x', idHeaders: 'yes' as never })).to.throw(
      TypeError,
      /options\.idHeaders must be a boolean/,
    );
    expect(() => createRelay({ target: 'ftp://x' })).to.throw(TypeError, /options\.target must be an http\(s\) URL/);
    expect(() => createRelay({ target: 'http://x/?q=1' })).to.throw(TypeError, /query/);
    expect(() => createRelay({ target: 'http://x', timeoutMs: 0 })).to.throw(TypeError, /options\.timeoutMs/);
    expect(() => createRelay({ target: 'http://x', dispatcher: {} as never })).to.throw(TypeError, /options\.dispatcher/);
    expect(() => createRelay({ target: 'http://x', keepAliveTimeoutMs: -1 })).to.throw(TypeError, /options\.keepAliveTimeoutMs/);
    expect(() => createRelay({ target: 'http://x', maxDrainBytes: 1.5 })).to.throw(TypeError, /options\.maxDrainBytes/);
    expect(() => createRelay({ target: 'http://x', maxDrainBytes: '1' as never })).to.throw(TypeError, /options\.maxDrainBytes/);
  });
});
