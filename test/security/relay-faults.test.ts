/**
 * The relay under faulty backends and clients (findings 9, 10, 11 and the relay's keep-alive part
 * of 12), played over real HTTP: a keep-alive client, purpose-built hostile backends (`node:http`
 * servers that answer before reading the upload, reset or stall mid-body, announce
 * `Keep-Alive: timeout=65`), a slow authorization server (a proxy that delays introspection in
 * front of the demo one), and the gateway's own transaction store.
 */
import {
  createServer,
  request,
  Agent as HttpAgent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, createRelay, problemJsonErrorHandler, type Gateway, type TransactionRecord } from '../../src/index.js';
import { close, exampleConfig, exampleDir, listen, openConfig } from '../gateway/helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The client's port of the connection that carried the exchange. */
  localPort: number | undefined;
}

/**
 * One exchange through `agent`; rejects when no complete answer comes within `withinMs` (the
 * finding's wedge lasted 65 s). Errors of the request after its answer (an upload cut once the
 * answer is in) are ignored: the answer is what the caller sees.
 */
function exchange(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string | number>;
    body?: Buffer;
    /** Send only this many bytes of `body` (the rest never comes; the request is dropped once answered). */
    sendFirst?: number;
    agent: HttpAgent;
    withinMs?: number;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to ${options.method ?? 'GET'} ${url} within ${options.withinMs ?? 5000} ms`));
    }, options.withinMs ?? 5000);
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: options.agent }, (res) => {
      const localPort = res.socket.localPort;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        answered = true;
        clearTimeout(timer);
        if (options.sendFirst !== undefined) req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, localPort });
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => {
      if (answered) return;
      clearTimeout(timer);
      reject(err);
    });
    if (options.sendFirst === undefined) req.end(options.body);
    else req.write(options.body!.subarray(0, options.sendFirst));
  });
}

/** A backend that answers every request at once, without reading its body (as a 401/403/404/413 would). */
async function earlyAnsweringBackend(): Promise<{ url: string; server: Server; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(`answered ${req.method} ${req.url} without reading`);
  });
  return { url: await listen(server), server, hits };
}

/** Reads the stored record of a transaction, waiting for the recorder to save it. */
async function recordOf(gateway: Gateway, id: string): Promise<TransactionRecord> {
  for (let i = 0; i < 100; i++) {
    const record = await gateway.store.get(id);
    if (record !== undefined) return record;
    await sleep(20);
  }
  throw new Error(`no record ${id}`);
}

async function mount(gateway: Gateway): Promise<{ server: Server; base: string }> {
  const app = express();
  app.use(gateway.router);
  const server = createServer(app);
  return { server, base: await listen(server) };
}

describe('relay faults (security)', () => {
  describe('a backend that answers before reading the upload (finding 9)', () => {
    let backend: Awaited<ReturnType<typeof earlyAnsweringBackend>>;
    before(async () => {
      backend = await earlyAnsweringBackend();
    });
    after(async () => {
      await close(backend.server);
    });

    it('drains the rest of a 1 MB upload: the next request on the same keep-alive connection is answered', async () => {
      const gateway = createGateway({ config: openConfig(backend.url) });
      const { server, base } = await mount(gateway);
      const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
      try {
        const upload = Buffer.alloc(1_000_000, 'x');
        const first = await exchange(`${base}/gateway/Ente/Echo/v1/pet/10`, {
          method: 'DELETE',
          headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': upload.length },
          body: upload,
          agent,
        });
        expect(first.status).to.equal(200);
        expect(first.body).to.equal('answered DELETE /pet/10 without reading');
        // Before the fix this waited for the server's keep-alive timeout (65 s in the example), then a reset.
        const second = await exchange(`${base}/gateway/Ente/Echo/v1/pet/10`, { agent });
        expect(second.status).to.equal(200);
        expect(second.body).to.equal('answered GET /pet/10 without reading');
        expect(second.localPort, 'the same connection carried both exchanges').to.equal(first.localPort);
      } finally {
        agent.destroy();
        await close(server);
        await gateway.close();
      }
    });

    it('past the drain bound, answers with Connection: close, and the next request is answered on a new connection', async () => {
      const relay = createRelay({ target: backend.url, maxDrainBytes: 64 * 1024 });
      const app = express();
      app.use('/api', relay);
      const server = createServer(app);
      const base = await listen(server);
      const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
      try {
        // The answer comes while most of the upload has not been sent: whatever the machine's
        // pace, more than the bound is left to read (a whole upload that arrived first is no case).
        const upload = Buffer.alloc(1_000_000, 'x');
        const first = await exchange(`${base}/api/pet/11`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': upload.length },
          body: upload,
          sendFirst: 16 * 1024,
          agent,
        });
        expect(first.status).to.equal(200);
        expect(first.headers.connection).to.equal('close');
        const second = await exchange(`${base}/api/pet/11`, { agent });
        expect(second.status).to.equal(200);
        expect(second.body).to.equal('answered GET /pet/11 without reading');
      } finally {
        agent.destroy();
        await close(server);
        await relay.close();
      }
    });
  });

  describe('an unreachable backend and an upload (finding 9)', () => {
    it('answers 503 and drains the upload: the next request on the same keep-alive connection is answered', async () => {
      const down = createServer();
      const downUrl = await listen(down);
      await close(down);
      const relay = createRelay({ target: downUrl });
      const app = express();
      app.use('/api', relay, problemJsonErrorHandler());
      const server = createServer(app);
      const base = await listen(server);
      const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
      try {
        const upload = Buffer.alloc(1_000_000, 'x');
        const first = await exchange(`${base}/api/pet`, {
          method: 'PUT',
          headers: { 'Content-Length': upload.length },
          body: upload,
          agent,
        });
        expect(first.status).to.equal(503);
        const second = await exchange(`${base}/api/pet`, { agent });
        expect(second.status).to.equal(503);
        expect(second.localPort, 'the same connection carried both exchanges').to.equal(first.localPort);
      } finally {
        agent.destroy();
        await close(server);
        await relay.close();
      }
    });
  });

  describe('a client that left during a slow introspection (finding 10)', () => {
    const DELAY_MS = 1500;
    let as: DemoAuthServer;
    let slowIdp: Server;
    let introspected = 0;
    let backend: Server;
    const backendHits: string[] = [];
    let gateway: Gateway;
    let server: Server;
    let api: string;

    before(async () => {
      as = await startDemoAuthServer({ port: 0 });
      // Introspection through a proxy that holds each call DELAY_MS before passing it on.
      slowIdp = createServer((req: IncomingMessage, res: ServerResponse) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          await sleep(DELAY_MS);
          const upstream = await fetch(`${as.issuer}${req.url}`, {
            method: req.method ?? 'POST',
            headers: {
              authorization: String(req.headers.authorization ?? ''),
              'content-type': String(req.headers['content-type'] ?? ''),
              accept: 'application/json',
            },
            body: Buffer.concat(chunks),
          });
          const body = Buffer.from(await upstream.arrayBuffer());
          res.writeHead(upstream.status, { 'Content-Type': upstream.headers.get('content-type') ?? 'application/json' });
          res.end(body, () => introspected++);
        });
      });
      const slowUrl = await listen(slowIdp);
      backend = createServer((req, res) => {
        backendHits.push(`${req.method} ${req.url}`);
        req.resume();
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"deleted":true}');
      });
      const backendUrl = await listen(backend);
      const config = await exampleConfig(as.issuer, backendUrl);
      config.tokenPolicies!.DemoIdP!.introspectionEndpoint = `${slowUrl}/token/introspection`;
      gateway = createGateway({ config, baseDir: exampleDir });
      ({ server, base: api } = await mount(gateway));
      api += '/gateway/Ente/PetStore/v1';
    });
    after(async () => {
      await close(server);
      await gateway?.close();
      await close(backend);
      await close(slowIdp);
      await as?.stop();
    });

    it('never relays the exchange of a client that gave up (the backend does not see the DELETE)', async () => {
      // The same path relays when the client waits: the set-up is sound.
      const patient = await as.issueToken('client1', 'client1-secret');
      const agent = new HttpAgent({ keepAlive: false });
      const ok = await exchange(`${api}/pet/12`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${patient}` },
        agent,
        withinMs: DELAY_MS + 5000,
      });
      expect(ok.status).to.equal(200);
      expect(backendHits).to.deep.equal(['DELETE /pet/12']);

      // Three clients give up after 0.5 s (curl --max-time 0.5), each with its own token (no cached result).
      const before = introspected;
      const tokens = await Promise.all([1, 2, 3].map(() => as.issueToken('client1', 'client1-secret')));
      await Promise.all(
        tokens.map(
          (token, i) =>
            new Promise<void>((resolve) => {
              const req = request(`${api}/pet/${20 + i}`, {
                method: 'DELETE',
                headers: { Authorization: `Bearer ${token}` },
                agent: false,
              });
              req.on('error', () => resolve());
              req.on('response', () => resolve());
              req.end();
              setTimeout(() => req.destroy(), 500);
            }),
        ),
      );
      // Wait until the slow introspections have all been answered, then a little for the chain to run on.
      for (let i = 0; i < 200 && introspected < before + 3; i++) await sleep(25);
      expect(introspected).to.equal(before + 3);
      await sleep(500);
      expect(backendHits, 'requests of clients that left reached the backend').to.deep.equal(['DELETE /pet/12']);
    });
  });

  describe('a backend that fails after its status line (finding 11)', () => {
    let backend: Server;
    let backendUrl: string;
    let gateway: Gateway;
    let server: Server;
    let base: string;

    before(async () => {
      backend = createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '1000' });
        res.write('x'.repeat(100));
        // /reset: the connection is cut mid-body; /stall: the rest never comes.
        if (req.url === '/reset') setTimeout(() => res.socket?.destroy(), 50);
      });
      backendUrl = await listen(backend);
      const config = openConfig(backendUrl);
      config.apis[0]!.backend.timeoutMs = 300;
      gateway = createGateway({ config });
      ({ server, base } = await mount(gateway));
    });
    after(async () => {
      await close(server);
      await gateway.close();
      await close(backend);
    });

    async function cutAnswer(path: string): Promise<TransactionRecord> {
      const res = await fetch(`${base}/gateway/Ente/Echo/v1${path}`);
      expect(res.status).to.equal(200);
      const id = res.headers.get('gateway-transaction-id')!;
      // The client sees the cut connection: the body cannot complete.
      let cut = false;
      try {
        await res.text();
      } catch {
        cut = true;
      }
      expect(cut, 'the client saw a complete body').to.equal(true);
      return recordOf(gateway, id);
    }

    it('records a backend reset mid-body as a connection error naming the backend failure, not as a client abort', async () => {
      const record = await cutAnswer('/reset');
      expect(record.outcome.code).to.equal('CONNECTION_ERROR');
      expect(record.errorCode).to.equal('ERR_BACKEND_UNAVAILABLE');
      const failure = record.diagnostics.find((d) => d.level === 'error' && d.code === 'ERR_BACKEND_UNAVAILABLE');
      expect(failure?.message).to.contain(backendUrl);
      expect(record.diagnostics.map((d) => d.code)).to.not.include('RELAY_ABORTED');
    });

    it('records a backend stalled mid-body as a backend timeout, not as a client abort', async () => {
      const record = await cutAnswer('/stall');
      expect(record.outcome.code).to.equal('CONNECTION_ERROR');
      expect(record.errorCode).to.equal('ERR_BACKEND_TIMEOUT');
      const failure = record.diagnostics.find((d) => d.level === 'error' && d.code === 'ERR_BACKEND_TIMEOUT');
      expect(failure?.message).to.contain(backendUrl).and.contain('UND_ERR_BODY_TIMEOUT');
      expect(record.diagnostics.map((d) => d.code)).to.not.include('RELAY_ABORTED');
    });
  });

  describe('a backend that asks for 65 s keep-alive (finding 12)', () => {
    it('closes idle backend connections after the relay keep-alive, not the backend hint', async () => {
      const closed: number[] = [];
      const opened: Socket[] = [];
      const backend = createServer((req, res) => {
        req.resume();
        res.end('ok');
      });
      // Node sends `Keep-Alive: timeout=65` with this setting.
      backend.keepAliveTimeout = 65_000;
      backend.on('connection', (socket: Socket) => {
        opened.push(socket);
        socket.on('close', () => closed.push(Date.now()));
      });
      const backendUrl = await listen(backend);
      const relay = createRelay({ target: backendUrl, keepAliveTimeoutMs: 300 });
      const app = express();
      app.use('/api', relay);
      const server = createServer(app);
      const base = await listen(server);
      try {
        const res = await fetch(`${base}/api/x`);
        expect(await res.text()).to.equal('ok');
        expect(opened).to.have.length(1);
        // Well past 300 ms, far below the 64 s the hint gave before.
        for (let i = 0; i < 60 && closed.length === 0; i++) await sleep(50);
        expect(closed, 'the idle backend connection is still open').to.have.length(1);
      } finally {
        await close(server);
        await relay.close();
        await close(backend);
      }
    });
  });
});
