/**
 * `serve --workers 2` when its workers cannot start: PostgreSQL down (nothing listening on the port
 * of DATABASE_URL), then up in time or never. The primary restarts each slot with a growing delay,
 * logs each restart, and stops with exit 1 naming the cause once a slot reaches the start limit; a
 * replacement worker keeps its slot's node id.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { RESTART_POLICY } from '../../src/server/restarts.js';
import { echoBackend, exampleCopy, openConfig } from '../gateway/helpers.js';
import { dropSharedState, freePort, serve, stop, type Served } from './support.js';

interface LogLine {
  event?: string;
  msg: string;
  pid: number;
  slot?: number;
  nodeId?: string;
  restartInMs?: number;
  failures?: number;
  withinMs?: number;
  cause?: string;
  url?: string;
  time: string;
}

function lines(served: Served): LogLine[] {
  return served
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** PostgreSQL reachable from `port` on: a relay to the machine's PostgreSQL, listening from now on. */
async function postgresOn(port: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const keep = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: 5432 });
    keep(client);
    keep(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The status line a CONNECT gets from the APIs' listener. */
function connectStatusLine(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write('CONNECT example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n'));
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('close', () => resolve(text.split('\r\n')[0]!));
    socket.on('error', reject);
  });
}

describe('serve --workers: the supervisor', function () {
  this.timeout(120_000);
  const suffix = randomBytes(4).toString('hex');
  const schema = `gw_supervisor_${suffix}`;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let config: string;

  before(async () => {
    [echo, copy] = await Promise.all([echoBackend(), exampleCopy()]);
    config = path.join(copy.dir, 'open.json');
    await writeFile(config, JSON.stringify(openConfig(echo.url)));
  });
  after(async () => {
    await dropSharedState(schema, `eagtest-${suffix}:`);
    await Promise.all([echo.stop(), copy.remove()]);
  });

  it('PostgreSQL down for good: each slot restarted after 1, 2, 4, 8 s, a line each, then exit 1 naming the cause within the window', async () => {
    const dbPort = await freePort();
    const started = Date.now();
    const served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0', '--workers', '2'], {
      LOG_FORMAT: 'json',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${dbPort}/test`,
      DATABASE_SCHEMA: schema,
    });
    try {
      const code = await served.exited();
      const tookMs = Date.now() - started;
      const log = lines(served);
      expect(code, served.output()).to.equal(1);
      // Within the start limit's window (the restarts' delays and five failed starts fit in it).
      expect(tookMs).to.be.below(RESTART_POLICY.startLimitWindowMs);
      const restarts = log.filter((line) => line.event === 'worker_exit' && line.restartInMs !== undefined);
      for (const slot of [1, 2]) {
        const delays = restarts.filter((line) => line.slot === slot).map((line) => line.restartInMs);
        // The last failure of the first slot to reach the limit stops the primary: the other may be one short.
        expect(delays, `slot ${slot}`).to.deep.equal([1000, 2000, 4000, 8000].slice(0, delays.length));
        expect(delays.length, `slot ${slot}`).to.be.at.least(3);
        for (const line of restarts.filter((line) => line.slot === slot)) {
          expect(line.cause).to.match(/ECONNREFUSED/);
          expect(line.msg).to.match(/^worker \d+ \(slot \d\) died \(exit 1\): .*ECONNREFUSED.*; starting another in \d+ s/);
        }
      }
      expect(log.filter((line) => line.event === 'worker_started')).to.have.length(restarts.length);
      const last = log.filter((line) => line.event === 'worker_exit').find((line) => line.failures === RESTART_POLICY.startLimit);
      expect(last, served.output()).to.not.equal(undefined);
      expect(last!.msg).to.match(/ECONNREFUSED/);
      expect(last!.msg).to.match(/failed to start 5 times in \d+(\.\d)? s \(the limit is 5 within 120 s\): stopping/);
      expect(last!.withinMs).to.be.below(RESTART_POLICY.startLimitWindowMs);
      // Bounded: 4 restarts a slot at most, and nothing forked after the stop.
      expect(restarts.length).to.be.at.most(2 * (RESTART_POLICY.startLimit - 1));
      expect(log.at(-1)!.event).to.equal('stopped');
    } finally {
      await stop(served);
    }
  });

  it('SIGTERM while a slot waits to start again: the primary stops at once, exit 0, nothing forked after', async () => {
    const dbPort = await freePort();
    const served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0', '--workers', '2'], {
      LOG_FORMAT: 'json',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${dbPort}/test`,
      DATABASE_SCHEMA: schema,
    });
    try {
      await served.waitFor(/"failures":2,"restartInMs":2000/);
      const asked = Date.now();
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
      expect(Date.now() - asked).to.be.below(5_000);
      const log = lines(served);
      const shutdown = log.findIndex((line) => line.event === 'shutdown');
      expect(shutdown).to.be.above(-1);
      expect(log.slice(shutdown).filter((line) => line.event === 'worker_started')).to.have.length(0);
    } finally {
      await stop(served);
    }
  });

  it('PostgreSQL back in time: the workers come up; a replacement worker keeps its slot node id', async () => {
    const dbPort = await freePort();
    const served = serve(['serve', '--config', config, '--port', '0', '--admin-port', '0', '--workers', '2'], {
      LOG_FORMAT: 'json',
      GATEWAY_NODE_ID: `sup-${suffix}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${dbPort}/test`,
      DATABASE_SCHEMA: schema,
    });
    let relay: Awaited<ReturnType<typeof postgresOn>> | undefined;
    try {
      await served.waitFor(/starting another in 1 s/);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      relay = await postgresOn(dbPort);
      await served.waitFor(/("event":"ready"[\s\S]*){2}/, 30_000);
      expect(served.child.exitCode).to.equal(null);
      const starts = () => lines(served).filter((line) => line.event === 'start' && line.nodeId !== undefined);
      const ready = starts();
      expect(new Set(ready.map((line) => line.nodeId))).to.deep.equal(new Set([`sup-${suffix}-w1`, `sup-${suffix}-w2`]));
      const url = lines(served).find((line) => line.event === 'ready')!.url!;
      expect((await fetch(`${url}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
      // The worker of slot 1 dies: its replacement is sup-…-w1 again, not a new node.
      const first = lines(served).findLast((line) => line.event === 'start' && line.nodeId === `sup-${suffix}-w1`)!;
      process.kill(first.pid, 'SIGKILL');
      await served.waitFor(/\(slot 1\) died \(SIGKILL\); starting another in \d+ s/);
      await served.waitFor(/("event":"ready"[\s\S]*){3}/, 30_000);
      const again = starts().filter((line) => line.pid !== first.pid && line.nodeId === `sup-${suffix}-w1`);
      expect(again, served.output()).to.have.length(1);
      for (let i = 0; i < 4; i++) expect((await fetch(`${url}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
      // A CONNECT is answered (not a closed socket) and recorded like any refusal.
      expect(await connectStatusLine(url)).to.equal('HTTP/1.1 501 Not Implemented');
      // Its record is stored before the stop ends, the SIGTERM sent at once.
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
      const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
      await client.connect();
      try {
        const { rows } = await client.query<{ node_id: string }>(`SELECT DISTINCT node_id FROM "${schema}".gateway_transactions`);
        expect(rows.map((row) => row.node_id)).to.satisfy((ids: string[]) => ids.every((id) => /^sup-[0-9a-f]+-w[12]$/.test(id)));
        const connects = await client.query<{ status: number }>(
          `SELECT status::int AS status FROM "${schema}".gateway_transactions WHERE method = 'CONNECT'`,
        );
        expect(connects.rows).to.deep.equal([{ status: 501 }]);
      } finally {
        await client.end();
      }
    } finally {
      await stop(served);
      await relay?.close();
    }
  });
});
