/**
 * The gateway of token-body.test.ts in a process of its own: `requireToken` on POST /pets, an
 * unrelated GET /ping on the same server, and its event-loop delay at /test/loop-delay
 * (loop-delay.ts). A request that holds its event loop holds only this process: the test measures
 * the delay and can still stop it. Prints `{"url":...}` on one line when it listens.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { problemJsonErrorHandler } from '../../../src/problem/handler.js';
import { requireToken } from '../../../src/token/require-token.js';
import { loopDelayHandler } from './loop-delay.js';

const app = express();
app.get('/test/loop-delay', loopDelayHandler());
app.post('/pets', requireToken({ policy: 'PetStore IdP' }), (_req, res) => {
  res.json({ ok: true });
});
app.get('/ping', (_req, res) => {
  res.end('pong');
});
app.use(problemJsonErrorHandler());
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
