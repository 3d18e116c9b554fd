/**
 * The example's servers under slow clients and at stop (finding 8, the server part, and finding 12,
 * the stop part), played over real HTTP against `startGatewayServer`: slowloris clients (headers or
 * body a byte at a time, idle keep-alive connections) on both listeners, and a request in flight
 * when `stop()` is called. Short timeouts through `serverTimeouts` keep the tests short; the
 * defaults are documented in docs/security.md.
 */
import { writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { startGatewayServer, type GatewayServer } from '../../examples/petstore/gateway-server.js';
import { echoBackend, exampleCopy, openConfig } from '../gateway/helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens a raw connection to `url`'s host and port. */
function rawConnection(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Writes `head` and then one more byte of `drip` every 100 ms, as a slowloris client does (with an
 * empty `drip`, an idle client after its request); resolves
 * with what the server sent once it closes the connection, or rejects after `withinMs`.
 */
async function slowloris(url: string, head: string, drip: string, withinMs: number): Promise<string> {
  const socket = await rawConnection(url);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  socket.write(head);
  let i = 0;
  const dripper = setInterval(() => {
    if (drip !== '' && !socket.destroyed && socket.writable) socket.write(drip[i++ % drip.length]!);
  }, 100);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server still held the connection after ${withinMs} ms`)), withinMs);
      socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return received;
  } finally {
    clearInterval(dripper);
    socket.destroy();
  }
}

describe('the example server under slow clients and at stop (security)', () => {
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;

  before(async () => {
    backend = await echoBackend();
    copy = await exampleCopy();
    await writeFile(copy.configFile, JSON.stringify(openConfig(backend.url)));
  });
  after(async () => {
    await backend?.stop();
    await copy?.remove();
  });

  it('refuses timeouts Node would refuse, naming the option', async () => {
    let error: unknown;
    await startGatewayServer({
      configFile: copy.configFile,
      port: 0,
      adminPort: 0,
      serverTimeouts: { headersTimeout: 5000, requestTimeout: 1000 },
    }).catch((e: unknown) => (error = e));
    expect(error)
      .to.be.instanceOf(TypeError)
      .with.property('message')
      .that.matches(/timeouts\.headersTimeout/);
    error = undefined;
    await startGatewayServer({ configFile: copy.configFile, port: 0, adminPort: 0, serverTimeouts: { keepAliveTimeout: 0 } }).catch(
      (e: unknown) => (error = e),
    );
    expect(error)
      .to.be.instanceOf(TypeError)
      .with.property('message')
      .that.matches(/timeouts\.keepAliveTimeout/);
  });

  describe('slow and idle clients (finding 8)', () => {
    let gateway: GatewayServer;
    before(async () => {
      gateway = await startGatewayServer({
        configFile: copy.configFile,
        port: 0,
        adminPort: 0,
        serverTimeouts: { headersTimeout: 500, requestTimeout: 1000, keepAliveTimeout: 500, connectionsCheckingInterval: 100 },
      });
    });
    after(async () => {
      await gateway?.stop();
    });

    it('drops a client that sends its headers a byte at a time, on both listeners', async () => {
      for (const url of [gateway.url, gateway.adminUrl]) {
        await slowloris(url, 'GET /gateway/Ente/Echo/v1/pet HTTP/1.1\r\nHost: x\r\n', 'X-Slow: lorisssss\r\n', 3000);
      }
    });

    it('drops a client that sends its body a byte at a time (408)', async () => {
      const head = 'PUT /gateway/Ente/Echo/v1/pet HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n';
      const received = await slowloris(gateway.url, head, 'x', 3000);
      // The relay may have started the backend's answer; either way the connection is dropped.
      expect(received === '' || /^HTTP\/1\.1 (408|201) /.test(received), received).to.equal(true);
    });

    it('closes idle keep-alive connections after keepAliveTimeout, on both listeners', async () => {
      for (const url of [gateway.url, gateway.adminUrl]) {
        const path = url === gateway.url ? '/gateway/Ente/Echo/v1/pet' : '/gateway/console/';
        const received = await slowloris(url, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, '', 3000);
        expect(received).to.match(/^HTTP\/1\.1 \d{3} /);
      }
    });
  });

  describe('stop (finding 12)', () => {
    it('lets a request in flight get its full answer, and accepts no new connection', async () => {
      const gateway = await startGatewayServer({ configFile: copy.configFile, port: 0, adminPort: 0 });
      const seen = backend.seen.length;
      // /hold: the backend sends a first part, and the rest at release().
      const res = await fetch(`${gateway.url}/gateway/Ente/Echo/v1/hold`);
      expect(res.status).to.equal(200);
      expect(backend.seen.length).to.equal(seen + 1);
      const stopped = gateway.stop();
      await sleep(100);
      let refused = false;
      await fetch(`${gateway.url}/gateway/Ente/Echo/v1/pet`).catch(() => (refused = true));
      expect(refused, 'a new connection was accepted after stop()').to.equal(true);
      backend.release();
      expect(await res.text()).to.equal('first;second');
      await stopped;
    });

    it('closes what is still in flight after the grace period', async () => {
      const gateway = await startGatewayServer({ configFile: copy.configFile, port: 0, adminPort: 0, gracePeriodMs: 300 });
      // /slow: the backend never answers.
      const pending = fetch(`${gateway.url}/gateway/Ente/Echo/v1/slow`).then(
        () => 'answered',
        () => 'cut',
      );
      for (let i = 0; i < 50 && !backend.seen.some((s) => s.url === '/slow'); i++) await sleep(20);
      const started = Date.now();
      await gateway.stop();
      expect(Date.now() - started).to.be.below(3000);
      expect(await pending).to.equal('cut');
    });
  });
});
