/**
 * Message recording per API (docs/console.md) over real HTTP: the headers the client sent, every header
 * the backend received (as the relay sent them), and the first bytes of the request and response
 * bodies, credentials redacted and the token never recorded.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import {
  createGateway,
  MemoryTransactionStore,
  type GatewayConfig,
  type RecordingConfig,
  type TransactionRecord,
} from '../../src/index.js';
import { close, listen } from './helpers.js';

interface Received {
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  size: number;
}

const BINARY = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

describe('message recording per API', function () {
  this.timeout(60_000);
  let backend: Server;
  let backendUrl: string;
  let received: Received[];
  let as: DemoAuthServer;

  before(async () => {
    received = [];
    backend = createServer((req, res) => {
      let size = 0;
      req.on('data', (chunk: Buffer) => (size += chunk.length));
      req.on('end', () => {
        received.push({ headers: req.headers, rawHeaders: req.rawHeaders, size });
        if (req.url === '/binary') {
          res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
          res.end(BINARY);
          return;
        }
        const body = JSON.stringify({ size, padding: 'x'.repeat(200) });
        res.writeHead(201, { 'Content-Type': 'application/json' });
        res.end(body);
      });
    });
    backendUrl = await listen(backend);
    as = await startDemoAuthServer({ port: 0 });
  });
  after(async () => {
    await close(backend);
    await as.stop();
  });

  async function withGateway(
    recording: RecordingConfig | undefined,
    run: (base: string, store: MemoryTransactionStore) => Promise<void>,
    withToken = false,
  ): Promise<void> {
    const store = new MemoryTransactionStore();
    const api: GatewayConfig['apis'][number] = { provider: 'Ente', name: 'Echo', version: 1, backend: { url: backendUrl } };
    if (recording !== undefined) api.recording = recording;
    const config: GatewayConfig = { apis: [api] };
    if (withToken) {
      config.tokenPolicies = { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } };
      api.tokenManagement = { enabled: true, policy: 'DemoIdP', introspection: true };
    }
    const gateway = createGateway({ config, store });
    const server = createServer((req, res) => gateway.handler(req, res));
    const base = `${await listen(server)}/gateway/Ente/Echo/v1`;
    try {
      await run(base, store);
    } finally {
      await close(server);
      await gateway.close();
    }
  }

  async function recordOf(store: MemoryTransactionStore, res: Response): Promise<TransactionRecord> {
    const id = res.headers.get('gateway-transaction-id')!;
    for (let i = 0; i < 200 && store.get(id) === undefined; i++) await new Promise((r) => setTimeout(r, 5));
    return store.get(id)!;
  }

  it("records every header the backend received, exactly as sent, and the client's as it sent them", async () => {
    await withGateway({ incomingHeaders: true, outgoingHeaders: true }, async (base, store) => {
      const res = await fetch(`${base}/pet?x=1`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-Client-Thing': 'kept',
          Cookie: 'session=abc',
          'X-Api-Key': 'k-123',
          Authorization: 'Basic dXNlcjpwYXNz',
        },
        body: JSON.stringify({ name: 'doggie' }),
      });
      expect(res.status).to.equal(201);
      const record = await recordOf(store, res);
      const seen = received.at(-1)!;
      const outgoing = record.outgoing!.headers;
      const lower = Object.fromEntries(Object.entries(outgoing).map(([k, v]) => [k.toLowerCase(), v]));
      // Every header the backend received is in the record, with the value it received; only the
      // HTTP client's own framing (connection) is not the relay's to list.
      for (const [name, value] of Object.entries(seen.headers)) {
        if (name === 'connection') continue;
        const expected = ['cookie', 'x-api-key', 'authorization'].includes(name)
          ? '[redacted]'
          : Array.isArray(value)
            ? value.join(', ')
            : value;
        expect(lower[name], name).to.equal(expected);
      }
      expect(Object.keys(lower).sort()).to.deep.equal(
        Object.keys(seen.headers)
          .filter((n) => n !== 'connection')
          .sort(),
      );
      expect(outgoing).to.have.property('Gateway-Transaction-ID', record.id);
      expect(lower['host']).to.equal(new URL(backendUrl).host);
      expect(lower['x-forwarded-for']).to.equal('127.0.0.1');
      // The client's headers, names as it sent them.
      const incoming = record.incoming!.headers;
      const incomingLower = Object.fromEntries(Object.entries(incoming).map(([k, v]) => [k.toLowerCase(), v]));
      expect(incomingLower['x-client-thing']).to.equal('kept');
      expect(incomingLower['authorization']).to.equal('[redacted]');
      expect(incomingLower['cookie']).to.equal('[redacted]');
      expect(incomingLower['content-type']).to.equal('application/json');
      expect(JSON.stringify(record)).to.not.include('dXNlcjpwYXNz').and.not.include('session=abc').and.not.include('k-123');
      // No body recording asked: none.
      expect(record.requestBody).to.equal(undefined);
      expect(record.responseBody).to.equal(undefined);
    });
  });

  it('keeps only the first maxBodyBytes of each body, counts the rest, and relays everything', async () => {
    await withGateway({ requestBody: true, responseBody: true, maxBodyBytes: 16 }, async (base, store) => {
      const upload = '{"name":"doggie","photo":"' + 'A'.repeat(3 * 1024 * 1024) + '"}';
      const res = await fetch(`${base}/pet`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: upload });
      expect(res.status).to.equal(201);
      const answer = await res.text();
      expect(JSON.parse(answer).size, 'the backend got the whole upload').to.equal(upload.length);
      const record = await recordOf(store, res);
      expect(record.requestBody).to.deep.equal({
        size: upload.length,
        kept: 16,
        encoding: 'utf8',
        content: upload.slice(0, 16),
        contentType: 'application/json',
        truncated: true,
      });
      expect(record.responseBody).to.deep.equal({
        size: answer.length,
        kept: 16,
        encoding: 'utf8',
        content: answer.slice(0, 16),
        contentType: 'application/json',
        truncated: true,
      });
      // Headers were not asked for.
      expect(record.outgoing).to.equal(undefined);
      expect(record.incoming).to.equal(undefined);
    });
  });

  it('records a binary body as base64, and a whole small one without the truncated mark', async () => {
    await withGateway({ responseBody: true, requestBody: true, maxBodyBytes: 1024 }, async (base, store) => {
      const res = await fetch(`${base}/binary`, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
      expect(Buffer.from(await res.arrayBuffer()).equals(BINARY)).to.equal(true);
      const record = await recordOf(store, res);
      expect(record.responseBody).to.deep.equal({
        size: 256,
        kept: 256,
        encoding: 'base64',
        content: BINARY.toString('base64'),
        contentType: 'application/octet-stream',
      });
      expect(record.requestBody).to.deep.equal({ size: 5, kept: 5, encoding: 'utf8', content: 'hello', contentType: 'text/plain' });
    });
  });

  it('never records the token: not in headers, not in a body, not cut in half by the limit', async () => {
    await withGateway(
      { incomingHeaders: true, outgoingHeaders: true, requestBody: true, responseBody: true, maxBodyBytes: 40 },
      async (base, store) => {
        const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
        // The limit cuts the second copy of the token in the middle.
        const body = `{"t":"${token}","u":"${token}"}`;
        expect(body.length).to.be.greaterThan(40);
        const res = await fetch(`${base}/pet`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body,
        });
        expect(res.status).to.equal(201);
        const record = await recordOf(store, res);
        const text = JSON.stringify(record);
        expect(text).to.not.include(token);
        for (let n = 8; n < token.length; n += 8) expect(text, `the token's first ${n} characters`).to.not.include(token.slice(0, n));
        expect(record.requestBody!.content).to.match(/^\{"t":"\[redacted\]/);
        expect(record.incoming!.headers['authorization'] ?? record.incoming!.headers['Authorization']).to.equal('[redacted]');
        // A form body's access_token, even percent-encoded, is redacted too.
        const form = `access_token=${encodeURIComponent(token)}&name=doggie`;
        const res2 = await fetch(`${base}/pet`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: form,
        });
        const record2 = await recordOf(store, res2);
        expect(JSON.stringify(record2)).to.not.include(token).and.not.include(encodeURIComponent(token).slice(0, 20));
      },
      true,
    );
  });

  it('records none of it without a recording section', async () => {
    await withGateway(undefined, async (base, store) => {
      const res = await fetch(`${base}/pet`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
      const record = await recordOf(store, res);
      expect([record.outgoing, record.incoming, record.requestBody, record.responseBody]).to.deep.equal([
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    });
  });
});
