/** Shared pieces of the gateway tests: temp folders, a valid configuration, servers on loopback. */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GatewayConfig } from '../../src/index.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const exampleDir = path.join(repoRoot, 'examples', 'petstore');

/** A temp folder with a copy of the example's configuration and policy, removed by `remove()`. */
export async function exampleCopy(): Promise<{ dir: string; configFile: string; policyFile: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'gateway-test-'));
  await cp(path.join(exampleDir, 'gateway.config.json'), path.join(dir, 'gateway.config.json'));
  await cp(path.join(exampleDir, 'policies'), path.join(dir, 'policies'), { recursive: true });
  return {
    dir,
    configFile: path.join(dir, 'gateway.config.json'),
    policyFile: path.join(dir, 'policies', 'petstore.xml'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Rewrites a JSON file through a function. */
export async function editJson<T>(file: string, edit: (document: T) => void): Promise<void> {
  const document = JSON.parse(await readFile(file, 'utf8')) as T;
  edit(document);
  await writeFile(file, JSON.stringify(document, null, 2));
}

/** The example's configuration pointed at the given issuer and backend. */
export async function exampleConfig(issuer: string, backend: string): Promise<GatewayConfig> {
  const document = JSON.parse(await readFile(path.join(exampleDir, 'gateway.config.json'), 'utf8')) as GatewayConfig;
  for (const policy of Object.values(document.tokenPolicies ?? {})) policy.issuer = issuer;
  for (const api of document.apis) api.backend.url = backend;
  return document;
}

/** A minimal valid configuration (no token management) relaying to `backend`. */
export function openConfig(backend: string): GatewayConfig {
  return { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: backend } }] };
}

/** Listens on an ephemeral loopback port; resolves with the base URL. */
export function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

/** Closes a server and its idle and active connections. */
export function close(server: Server | undefined): Promise<void> {
  if (server === undefined || !server.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** What the echo backend saw. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  socket: number;
}

/**
 * A backend that answers each request with what it received (method, url, headers, body) as JSON,
 * plus a few headers of its own (hop-by-hop ones included, to check the relay drops them). Also:
 * `/slow` never answers; `/hold` sends a first part and the rest at `release()`; `/early` answers
 * at the first part of the request body and echoes the body at its end.
 */
export async function echoBackend(): Promise<{ url: string; server: Server; seen: Seen[]; release(): void; stop(): Promise<void> }> {
  const seen: Seen[] = [];
  const holds: Array<() => void> = [];
  const sockets = new WeakMap<object, number>();
  let nextSocket = 1;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    if (req.url === '/early') {
      // Answers as soon as the first part of the body arrives, then echoes the rest at its end.
      req.once('data', () => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('got-first;');
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(Buffer.concat(chunks)));
      return;
    }
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!sockets.has(req.socket)) sockets.set(req.socket, nextSocket++);
      const entry: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        socket: sockets.get(req.socket)!,
      };
      seen.push(entry);
      if (req.url === '/slow') return; // never answers
      if (req.url === '/hold') {
        // Sends a first part, and the rest only when the test says so.
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('first;');
        holds.push(() => res.end('second'));
        return;
      }
      const body = JSON.stringify(entry);
      res.writeHead(201, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        'X-Backend': 'echo',
        'Set-Cookie': ['a=1', 'b=2'],
        Server: 'EchoServer/1.0',
        'Gateway-Transaction-ID': 'spoofed-by-backend',
        'Keep-Alive': 'timeout=60',
        'X-Hop': 'drop-me',
        Connection: 'keep-alive, X-Hop',
      });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  const url = await listen(server);
  return { url, server, seen, release: () => holds.splice(0).forEach((end) => end()), stop: () => close(server) };
}
