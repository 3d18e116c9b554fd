/**
 * What the slot tests over real `serve` share: a backend that holds some paths until released,
 * raw client connections (pipelined requests, trickled bodies, from a chosen local address), the
 * in-flight gauge on the admin listener, and waiting for a state rather than for a time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { listen } from '../gateway/helpers.js';

export const PASSWORD = 'slots-admin';
export const adminHeaders = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'x-gateway-console': '1' };

/** A backend: answers 200 at once, except paths containing `/slow`, `/late` or `/upload`, held until `release()`. */
export interface HoldingBackend {
  readonly url: string;
  readonly server: Server;
  /** Exchanges held now (one that the gateway aborted is gone from here). */
  readonly held: Set<ServerResponse>;
  /** Paths received, in order. */
  readonly seen: string[];
  release(): void;
  stop(): Promise<void>;
}

export async function holdingBackend(): Promise<HoldingBackend> {
  const held = new Set<ServerResponse>();
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    seen.push(url);
    if (/\/(slow|late|upload)/.test(url)) {
      held.add(res);
      res.on('close', () => held.delete(res));
      req.resume();
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 1000;
  const url = await listen(server);
  return {
    url,
    server,
    held,
    seen,
    release() {
      for (const res of [...held]) {
        held.delete(res);
        if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"released":true}');
      }
    },
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A request's head as written on the wire (HTTP/1.1, keep-alive). */
export function head(method: string, path: string, headers: Record<string, string> = {}): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('')}\r\n`;
}

/** A raw client connection: what it received, whether it is closed. */
export interface RawClient {
  readonly socket: Socket;
  received(): string;
  /** The statuses of the answers received so far, in order. */
  statuses(): number[];
  readonly closed: Promise<void>;
  isClosed(): boolean;
}

/** Opens a connection to `port` (from `localAddress`, default 127.0.0.1) and writes `data` once connected. */
export function rawClient(port: number, data: string, localAddress = '127.0.0.1'): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    let text = '';
    let isClosed = false;
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    socket.setNoDelay(true);
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        isClosed = true;
        done();
      }),
    );
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write(data);
      resolve({
        socket,
        received: () => text,
        statuses: () => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])),
        closed,
        isClosed: () => isClosed,
      });
    });
    socket.once('error', reject);
  });
}

/** `gateway_concurrent_requests` of an instance, read on its admin listener. */
export async function inFlight(admin: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`, { headers: adminHeaders })).text();
  const found = /^gateway_concurrent_requests (\d+)$/m.exec(text);
  if (found === null) throw new Error(`no gateway_concurrent_requests in the metrics:\n${text.slice(0, 2000)}`);
  return Number(found[1]);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `read()` satisfies `done`, polling; returns the last value read. After `timeoutMs`
 * it returns the last value all the same: the caller's assertion says what was expected.
 */
export async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(100);
  }
}

/** One answer of a fetch. */
export interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

export async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: await res.text() };
}
