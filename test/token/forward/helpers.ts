/** Test helpers: a real backend that echoes what it received, and a server on an ephemeral loopback port. */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Express } from 'express';

/** What the echo backend received. */
export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Starts `app` on 127.0.0.1, port 0; resolves with its base URL and a closer. */
export async function listen(app: Express): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A backend that answers every request with a JSON echo of method, URL, headers and body. */
export async function startEchoBackend(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.use(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const echo: Echo = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
    res.json(echo);
  });
  return listen(app);
}
