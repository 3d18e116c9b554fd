/**
 * CONNECT and methods Node's parser does not know, as a client sees them on the wire: `node:http`
 * alone closes a CONNECT unanswered and answers `FOO /` with a bare 400. `serveGateway` answers
 * both 501 problem+json; on the API listener the exchange is recorded, on the admin listener not.
 */
import net from 'node:net';
import { expect } from 'chai';
import { createGateway, serveGateway, type GatewayServer } from '../../src/index.js';
import { echoBackend, openConfig } from '../gateway/helpers.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Whether the server closed the connection. */
  closed: boolean;
}

/** Sends `head` on a new connection; the answer the server writes before closing (or within 2 s). */
function exchange(url: string, head: string): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(head));
    let text = '';
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      const [top = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = top.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), closed });
    };
    const timer = setTimeout(() => done(false), 2_000);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('end', () => done(true));
    socket.on('close', () => done(true));
    socket.on('error', reject);
  });
}

describe('serveGateway: CONNECT and unknown methods', function () {
  this.timeout(30_000);
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let server: GatewayServer;

  before(async () => {
    echo = await echoBackend();
    const gateway = createGateway({ config: openConfig(echo.url), admin: { basicAuth: { username: 'admin', password: 'pw' } } });
    await gateway.ready();
    server = await serveGateway(gateway, { port: 0, adminPort: 0 });
  });
  after(async () => {
    await server.stop();
    await echo.stop();
  });

  async function recorded(method: string): Promise<Array<{ status: number | null; outcome: string; url: string }>> {
    const page = await server.gateway.store.query({ limit: 500 });
    return page.items
      .filter((record) => record.method === method)
      .map((record) => ({ status: record.status, outcome: record.outcome.code, url: record.url }));
  }

  function expectRefusal(answer: Answer): Record<string, unknown> {
    expect(answer.status, JSON.stringify(answer)).to.equal(501);
    expect(answer.headers['content-type']).to.equal('application/problem+json');
    expect(answer.headers['connection']).to.equal('close');
    expect(answer.closed).to.equal(true);
    const body = JSON.parse(answer.body) as Record<string, unknown>;
    expect(body).to.include({ status: 501, title: 'Not Implemented', gateway_status: 'protocol:GATEWAY-501' });
    return body;
  }

  it('CONNECT on the API listener: 501 problem+json, the connection closed, the exchange recorded', async () => {
    const answer = await exchange(server.url, 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n');
    const body = expectRefusal(answer);
    expect(body['detail']).to.equal('Metodo della richiesta non supportato dal gateway');
    const id = answer.headers['gateway-transaction-id'];
    expect(id).to.be.a('string');
    const records = await recorded('CONNECT');
    expect(records).to.deep.equal([{ status: 501, outcome: 'GENERIC_ERROR', url: 'example.org:443' }]);
    expect(await server.gateway.store.get(id!)).to.include({ method: 'CONNECT', status: 501 });
  });

  it('methods the parser refuses (FOO, a lower-case get) on the API listener: 501 problem+json, recorded with their method', async () => {
    for (const method of ['FOO', 'get']) {
      const answer = await exchange(server.url, `${method} /gateway/Ente/Echo/v1/ping HTTP/1.1\r\nHost: gw\r\nUser-Agent: probe\r\n\r\n`);
      expectRefusal(answer);
      const records = await recorded(method);
      expect(records, method).to.have.length(1);
      expect(records[0]).to.deep.equal({ status: 501, outcome: 'GENERIC_ERROR', url: '/gateway/Ente/Echo/v1/ping' });
    }
    expect(echo.seen).to.have.length(0);
  });

  it('the head of a refused method is read as hostile: a header line out of bounds is dropped in linear time, the answer still 501', async () => {
    const started = Date.now();
    const answer = await exchange(server.url, `FOO /x HTTP/1.1\r\nHost: gw\r\nX-Pad: a${' '.repeat(15_000)}\u0001\r\n\r\n`);
    expectRefusal(answer);
    expect(Date.now() - started).to.be.below(1_000);
    const record = await server.gateway.store.get(answer.headers['gateway-transaction-id']!);
    expect(record).to.include({ method: 'FOO', status: 501, url: '/x' });
  });

  it('on the admin listener: 501 problem+json, nothing recorded', async () => {
    const before = (await server.gateway.store.query({ limit: 500 })).items.length;
    for (const head of [
      'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n',
      'FOO /gateway/health/live HTTP/1.1\r\nHost: a\r\n\r\n',
    ]) {
      const body = expectRefusal(await exchange(server.adminUrl!, head));
      expect(body['detail']).to.equal('The request method is not supported by the gateway');
    }
    expect((await server.gateway.store.query({ limit: 500 })).items.length).to.equal(before);
  });

  it("other malformed requests keep Node's answer (a bare 400), and known methods are served as before", async () => {
    const malformed = await exchange(server.url, 'GET  HTTP/1.1\r\n\r\n');
    expect(malformed.status).to.equal(400);
    expect(malformed.body).to.equal('');
    const ping = await exchange(server.url, 'GET /gateway/Ente/Echo/v1/ping HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n');
    expect(ping.status).to.equal(201);
    const health = await exchange(server.adminUrl!, 'GET /gateway/health/live HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    expect(health.status).to.equal(200);
  });
});
