/**
 * The servers measured by `bench/gateway.ts`, one per child process (so that each has a core's
 * event loop to itself and none shares it with the load generator). Started as
 * `tsx bench/servers.ts <kind> <json options>`; reports its port over IPC. Imports the built
 * package, as a user would.
 *
 * Kinds: `bare` (the handler alone), `chain` (the handler behind the whole middleware chain),
 * `peer` (the handler behind express-oauth2-jwt-bearer), `backend` (the example's petstore
 * backend), `relay` (a bare relay to the backend), `gateway` (createGateway).
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { auth } from 'express-oauth2-jwt-bearer';
import {
  createGateway,
  createRelay,
  createTokenPolicy,
  forwardTokenHeaders,
  introspect,
  MemoryTransactionStore,
  problemJsonErrorHandler,
  recordTransaction,
  requireToken,
  xacmlAuthorize,
} from 'express-access-gateway';
import { doggie, startPetstoreBackend } from '../examples/petstore/backend.js';

interface Options {
  issuer?: string;
  audience?: string;
  policyFile?: string;
  target?: string;
  configFile?: string;
}

const [kind, json] = process.argv.slice(2);
const options = JSON.parse(json ?? '{}') as Options;
const pet = JSON.stringify(doggie);
const handler: RequestHandler = (_req, res) => {
  res.type('application/json').send(pet);
};

function serve(app: express.Express): Promise<number> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(0, '127.0.0.1');
    server.keepAliveTimeout = 65_000;
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
    server.once('error', reject);
  });
}

async function start(): Promise<number> {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  switch (kind) {
    case 'bare':
      app.get('/pet/:id', handler);
      return serve(app);
    case 'chain': {
      const policy = createTokenPolicy({ name: 'DemoIdP', issuer: options.issuer!, clientId: 'gateway', clientSecret: 'gateway-secret' });
      app.get(
        '/pet/:id',
        recordTransaction({ store: new MemoryTransactionStore(), recordOutgoingHeaders: true }),
        requireToken({ policy }),
        introspect({ policy }),
        xacmlAuthorize({ policy: readFileSync(options.policyFile!, 'utf8'), serviceName: 'PetStore', serviceVersion: 1, providerName: 'Ente' }),
        forwardTokenHeaders(),
        handler,
      );
      app.use(problemJsonErrorHandler());
      return serve(app);
    }
    case 'peer':
      app.get('/pet/:id', auth({ issuerBaseURL: options.issuer!, audience: options.audience!, tokenSigningAlg: 'RS256' }), handler);
      return serve(app);
    case 'backend':
      return (await startPetstoreBackend({ port: 0 })).port;
    case 'relay':
      app.use('/gateway/Ente/PetStore/v1', createRelay({ target: options.target! }));
      app.use(problemJsonErrorHandler());
      return serve(app);
    case 'gateway': {
      const gateway = createGateway({ config: options.configFile! });
      await gateway.ready();
      app.use(gateway.router);
      return serve(app);
    }
    default:
      throw new Error(`unknown server kind ${String(kind)}`);
  }
}

start().then(
  (port) => process.send?.({ port }),
  (err: unknown) => {
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);

// A clean exit on SIGTERM, so that `--cpu-prof` can write its profile when the bench stops a server.
process.on('SIGTERM', () => process.exit(0));

// The bench asks for this process's CPU time (user + system, µs, all threads) and event-loop
// utilization before and after a measurement, to report the CPU each request costs and whether the
// server was saturated (or the load generator was the limit).
process.on('message', (message) => {
  if (message === 'cpu-usage') process.send?.({ cpuUsage: process.cpuUsage(), eventLoop: performance.eventLoopUtilization() });
});
