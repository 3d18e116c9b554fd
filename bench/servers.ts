/**
 * The servers measured by `bench/gateway.ts`, one per child process (so that each has a core's
 * event loop to itself and none shares it with the load generator). Started as
 * `tsx bench/servers.ts <kind> <json options>`; reports its port over IPC. Imports the built
 * package, as a user would.
 *
 * Kinds: `bare` (the handler alone), `chain` (the handler behind the whole middleware chain),
 * `peer` (the handler behind express-oauth2-jwt-bearer), `minimal` (the handler behind a
 * hand-written minimum of the chain's work, for reference), `bare-node` and `chain-node` (the
 * same handler, alone and behind the same chain, on plain `node:http`), `backend` (the example's
 * petstore backend), `relay` (a bare relay to the backend in Express), `node-relay` (a dozen lines
 * of `node:http` and undici), `fastify-proxy` (fastify + @fastify/http-proxy), `gateway`
 * (createGateway mounted in Express) and `gateway-handler` (the same on `gateway.handler`; with
 * `redisUrl`, token results shared in Redis; with `databaseUrl`, records in PostgreSQL; with
 * `metrics: false`, without metrics).
 */
import { hash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import proxy from '@fastify/http-proxy';
import express, { type RequestHandler } from 'express';
import Fastify from 'fastify';
import { Agent } from 'undici';
import { auth } from 'express-oauth2-jwt-bearer';
import {
  createGateway,
  createRelay,
  createTokenPolicy,
  forwardTokenHeaders,
  introspect,
  MemoryTransactionStore,
  PostgresTransactionStore,
  problemJsonErrorHandler,
  recordTransaction,
  requireToken,
  xacmlAuthorize,
} from 'express-access-gateway';
import { doggie, startPetstoreBackend } from '../examples/petstore/backend.js';

interface Options {
  /** `gateway-handler`: `false` runs the gateway with `metrics: false` (default: metrics on). */
  metrics?: boolean;
  issuer?: string;
  audience?: string;
  policyFile?: string;
  target?: string;
  configFile?: string;
  /** `gateway-handler`: token results shared through this Redis. */
  redisUrl?: string;
  /** `gateway-handler`: records in PostgreSQL (this connection string, this schema) instead of memory. */
  databaseUrl?: string;
  databaseSchema?: string;
  /** `gateway-handler` with `databaseUrl`: the record journal on. */
  journal?: boolean;
}

const [kind, json] = process.argv.slice(2);
const options = JSON.parse(json ?? '{}') as Options;
const pet = JSON.stringify(doggie);
const handler: RequestHandler = (_req, res) => {
  res.type('application/json').send(pet);
};

/**
 * A reference, not a product: the least work any implementation of the chain must do per request,
 * written by hand with no validation, no errors, no XACML and no generality. Two ids, the token
 * hashed for a cache lookup, `req.gateway`, the token header dropped, five headers for the
 * backend, the id headers through the app's response prototype, and a record with an id index in
 * a bounded ring. It measures how much of the target ratio is left to everything else.
 */
function minimalChain(app: express.Express): RequestHandler {
  interface Minimal {
    id: string;
    messageId: string;
    startedAt: number;
    diagnostics: unknown[];
    outgoing: Record<string, string>;
  }
  const tokens = new Map<string, { subject: string; clientId: string; audience: string; issuer: string }>();
  const ring: Array<{ id: string } | undefined> = new Array(10_000);
  const index = new Map<string, number>();
  let saved = 0;
  const proto = app.response as unknown as { writeHead: (...args: unknown[]) => unknown };
  const hidden = Object.getPrototypeOf(proto) as typeof proto;
  proto.writeHead = function (this: express.Response & { req: { minimal?: Minimal } }, ...args: unknown[]) {
    const minimal = this.req.minimal;
    const status = args[0] as number;
    if (minimal !== undefined) {
      this.setHeader('Gateway-Transaction-ID', minimal.id);
      if (status < 400) this.setHeader('Gateway-Message-ID', minimal.messageId);
    }
    return Reflect.apply(hidden.writeHead, this, args);
  };
  return (req, res, next) => {
    const minimal: Minimal = { id: randomUUID(), messageId: randomUUID(), startedAt: Date.now(), diagnostics: [], outgoing: {} };
    (req as unknown as { minimal: Minimal }).minimal = minimal;
    const key = `DemoIdP:${hash('sha256', (req.headers.authorization ?? '').slice(7), 'base64url')}`;
    let token = tokens.get(key);
    if (token === undefined) {
      token = { subject: 'client1', clientId: 'client1', audience: 'petstore', issuer: options.issuer ?? '' };
      tokens.set(key, token);
    }
    minimal.diagnostics.push({ time: Date.now(), level: 'info', code: 'TOKEN_VALID', message: 'token valid' });
    delete req.headers.authorization;
    const url = req.originalUrl.includes('access_token') ? '' : req.originalUrl;
    const out = minimal.outgoing;
    req.headers['gateway-token-subject'] = out['Gateway-Token-Subject'] = token.subject;
    req.headers['gateway-token-clientid'] = out['Gateway-Token-ClientId'] = token.clientId;
    req.headers['gateway-token-audience'] = out['Gateway-Token-Audience'] = token.audience;
    req.headers['gateway-token-issuer'] = out['Gateway-Token-Issuer'] = token.issuer;
    req.headers['gateway-transaction-id'] = out['Gateway-Transaction-ID'] = minimal.id;
    const clientAddress = req.socket.remoteAddress;
    res.on('close', () => {
      const record = {
        ...minimal,
        endedAt: Date.now(),
        method: req.method,
        url,
        status: res.statusCode,
        outcome: 'OK',
        clientAddress,
        sender: token,
        outgoing: { headers: { ...out } },
      };
      const slot = saved++ % ring.length;
      const old = ring[slot];
      if (old !== undefined) index.delete(old.id);
      ring[slot] = record;
      index.set(record.id, slot);
    });
    next();
  };
}

/** The same answer as `handler`, without Express. */
function plainHandler(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(pet) });
  res.end(pet);
}

type Step = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Runs middleware in order on plain node:http, as a tiny router would. */
function runSteps(steps: readonly Step[], req: IncomingMessage, res: ServerResponse, done: (err?: unknown) => void): void {
  let index = 0;
  const next = (err?: unknown): void => {
    if (err !== undefined && err !== null) return done(err);
    const step = steps[index++];
    if (step === undefined) return done();
    step(req, res, next);
  };
  next();
}

/** A bare relay in a dozen lines of node:http and undici: what any relay has to do at the least. */
function nodeRelay(target: string, prefix: string): RequestListener {
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  return (req, res) => {
    const { host: _host, connection: _connection, ...headers } = req.headers;
    agent.stream(
      {
        origin: target,
        path: (req.url ?? '/').slice(prefix.length) || '/',
        method: req.method ?? 'GET',
        headers: headers as Record<string, string>,
        body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
      },
      ({ statusCode, headers: answer }) => {
        const { connection: _c, 'keep-alive': _k, 'transfer-encoding': _t, ...kept } = answer;
        res.writeHead(statusCode, kept as Record<string, string>);
        return res;
      },
      (err) => {
        if (err) res.destroy();
      },
    );
  };
}

function serveNode(listener: RequestListener): Promise<number> {
  return serve(createServer(listener));
}

function serve(app: express.Express | Server): Promise<number> {
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
        xacmlAuthorize({
          xacmlPolicy: readFileSync(options.policyFile!, 'utf8'),
          serviceName: 'PetStore',
          serviceVersion: 1,
          providerName: 'Ente',
        }),
        forwardTokenHeaders(),
        handler,
      );
      app.use(problemJsonErrorHandler());
      return serve(app);
    }
    case 'bare-node':
      return serveNode(plainHandler);
    case 'chain-node': {
      const policy = createTokenPolicy({ name: 'DemoIdP', issuer: options.issuer!, clientId: 'gateway', clientSecret: 'gateway-secret' });
      const steps = [
        recordTransaction({ store: new MemoryTransactionStore(), recordOutgoingHeaders: true }),
        requireToken({ policy }),
        introspect({ policy }),
        xacmlAuthorize({
          xacmlPolicy: readFileSync(options.policyFile!, 'utf8'),
          serviceName: 'PetStore',
          serviceVersion: 1,
          providerName: 'Ente',
        }),
        forwardTokenHeaders(),
      ] as unknown as Step[];
      const errors = problemJsonErrorHandler();
      return serveNode((req, res) =>
        runSteps(steps, req, res, (err) => (err === undefined ? plainHandler(req, res) : errors(err, req, res, () => res.destroy()))),
      );
    }
    case 'node-relay':
      return serveNode(nodeRelay(options.target!, '/gateway/Ente/PetStore/v1'));
    case 'fastify-proxy': {
      const app = Fastify({ logger: false });
      await app.register(proxy, { upstream: options.target!, prefix: '/gateway/Ente/PetStore/v1', rewritePrefix: '' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return (app.server.address() as AddressInfo).port;
    }
    case 'gateway-handler': {
      const store =
        options.databaseUrl === undefined
          ? undefined
          : new PostgresTransactionStore({
              connectionString: options.databaseUrl,
              schema: options.databaseSchema ?? 'bench',
              retentionDays: 0,
              ...(options.journal === true ? { journal: true } : {}),
            });
      await store?.ready();
      const gateway = createGateway({
        config: options.configFile!,
        ...(store === undefined ? {} : { store }),
        // One bench process: any secret of the required length signs what it shares.
        ...(options.redisUrl === undefined ? {} : { redis: options.redisUrl, clusterSecret: randomBytes(32).toString('base64url') }),
        ...(options.metrics === false ? { metrics: false } : {}),
      });
      await gateway.ready();
      return serveNode(gateway.handler);
    }
    case 'minimal':
      app.get('/pet/:id', minimalChain(app), handler);
      return serve(app);
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
