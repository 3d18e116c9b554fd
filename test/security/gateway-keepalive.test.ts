/**
 * createGateway's connections to backends: the documented idle keep-alive holds even when a
 * backend asks for a longer one (`Keep-Alive: timeout=65`), so idle connections do not pile up.
 */
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { createGateway } from '../../src/index.js';
import { close, listen } from '../gateway/helpers.js';

describe('security: createGateway keep-alive to backends', () => {
  it('closes an idle backend connection after relay.keepAliveTimeoutMs, whatever Keep-Alive the backend sends', async () => {
    const closed: number[] = [];
    const backend: Server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Keep-Alive': 'timeout=65', Connection: 'keep-alive' });
      res.end('ok');
    });
    backend.keepAliveTimeout = 65_000;
    let opened = 0;
    backend.on('connection', (socket: Socket) => {
      opened++;
      const at = Date.now();
      socket.on('close', () => closed.push(Date.now() - at));
    });
    const backendUrl = await listen(backend);
    const gateway = createGateway({
      config: { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: backendUrl } }] },
      relay: { keepAliveTimeoutMs: 300 },
    });
    const app = express();
    app.use(gateway.router);
    const server = createServer(app);
    const base = await listen(server);
    try {
      const res = await fetch(`${base}/gateway/Ente/Echo/v1/x`);
      expect(res.status).to.equal(200);
      await res.text();
      expect(opened).to.equal(1);
      // Before: undici honoured the backend's 65 s hint. A bounded wait well past 300 ms.
      const deadline = Date.now() + 3_000;
      while (closed.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(closed, 'backend connections closed by the gateway').to.have.length(1);
    } finally {
      await close(server);
      await gateway.close();
      await close(backend);
    }
  });
});
