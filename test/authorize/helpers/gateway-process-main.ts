/**
 * A gateway (xacmlAuthorize relaying to a backend) in a process of its own, for the attack tests
 * of test/security: a request that freezes the event loop freezes only this process, so the test
 * can measure how long an unrelated request waits and still stop the frozen gateway. It answers
 * its own event-loop delay at `/test/loop-delay` (loop-delay.ts), outside the APIs.
 *
 * Usage: `node --import tsx gateway-process-main.ts <policy file> <backend URL> [options JSON]`
 * (the {@link GatewayProcessOptions}); prints `{"url":"http://127.0.0.1:<port>"}` on one line
 * when it listens.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { xacmlAuthorize } from '../../../src/authorize/index.js';
import { problemJsonErrorHandler } from '../../../src/problem/handler.js';
import { loopDelayHandler } from '../../security/support/loop-delay.js';
import { GATEWAY_BASE, LOOP_DELAY_PATH, type GatewayProcessOptions } from './gateway-process.js';

const [policyFile, backend, optionsArg] = process.argv.slice(2);
if (policyFile === undefined || backend === undefined) throw new Error('usage: gateway-process-main.ts <policy file> <backend URL>');
const options = JSON.parse(optionsArg ?? '{}') as GatewayProcessOptions;

const app = express();
app.get(LOOP_DELAY_PATH, loopDelayHandler());
if (options.tenantPatternOnTheLoop !== undefined) {
  // The control: the pattern run by JavaScript's backtracking engine, on this event loop.
  const pattern = new RegExp(options.tenantPatternOnTheLoop);
  app.use(GATEWAY_BASE, (req, _res, next) => {
    const tenant = req.headers['x-tenant'];
    if (typeof tenant === 'string') pattern.test(tenant);
    next();
  });
}
app.use(
  GATEWAY_BASE,
  xacmlAuthorize({ xacmlPolicy: readFileSync(policyFile, 'utf8'), serviceName: 'PetStore', serviceVersion: 1, providerName: 'Ente' }),
  createProxyMiddleware({ target: backend }),
);
app.use(problemJsonErrorHandler());
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
if (options.maxHeadersCount !== undefined) server.maxHeadersCount = options.maxHeadersCount;
