/**
 * The gateway of the example: `createGateway` from the configuration file, its APIs served by a
 * plain `node:http` server and its admin routes and console by an Express app on another port,
 * imported from the package as a user would.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import { createGateway, type Gateway, type GatewayConfig } from 'express-access-gateway';

/** An identity provider to use instead of the one the configuration names. */
export interface IdentityProvider {
  /** Issuer URL (its metadata is discovered). */
  issuer: string;
  /** The gateway's client id there (it introspects tokens). */
  clientId: string;
  /** Its secret. */
  clientSecret: string;
}

/** Options of {@link startGatewayServer}. */
export interface GatewayServerOptions {
  /** The configuration file. Relative paths in it resolve from its folder. */
  configFile: string;
  /** TCP port; `0` picks one. Default `8080`. */
  port?: number;
  /** TCP port of the admin listener (admin routes and console, their own origin); `0` picks one. Default `8081`. */
  adminPort?: number;
  /** Interface. Default `127.0.0.1`. */
  host?: string;
  /** Password of the `admin` user (admin routes and console). Default: a random one. */
  adminPassword?: string;
  /** Overrides the issuer and client of every token policy of the file. */
  idp?: IdentityProvider;
  /** Timeouts of both listeners, against slow or idle clients holding connections. */
  serverTimeouts?: ServerTimeouts;
  /**
   * Milliseconds that {@link GatewayServer.stop} lets exchanges in flight finish before it closes
   * their connections. Default `10000`.
   */
  gracePeriodMs?: number;
}

/**
 * Timeouts of the example's listeners, with Node's names (`http.createServer` options). A client
 * that sends its headers or body slowly, or keeps an idle connection, is dropped within
 * `requestTimeout + connectionsCheckingInterval` (31 s with the defaults).
 */
export interface ServerTimeouts {
  /** Milliseconds to receive a request's headers. Default `10000` (Node: `60000`). */
  headersTimeout?: number;
  /**
   * Milliseconds to receive a whole request, body included (answered `408` past it). At least
   * `headersTimeout`. Default `30000` (Node: `300000`).
   */
  requestTimeout?: number;
  /**
   * Milliseconds an idle keep-alive connection is kept (Node closes it a second later, so that a
   * client that trusts the announced `Keep-Alive: timeout=` never reuses a closing one). Default `5000`.
   */
  keepAliveTimeout?: number;
  /** How often, in milliseconds, the two timeouts above are checked. Default `1000` (Node: `30000`). */
  connectionsCheckingInterval?: number;
}

const DEFAULT_TIMEOUTS: Required<ServerTimeouts> = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
};

function serverTimeouts(given: ServerTimeouts | undefined): Required<ServerTimeouts> {
  const timeouts: Required<ServerTimeouts> = {
    headersTimeout: given?.headersTimeout ?? DEFAULT_TIMEOUTS.headersTimeout,
    requestTimeout: given?.requestTimeout ?? DEFAULT_TIMEOUTS.requestTimeout,
    keepAliveTimeout: given?.keepAliveTimeout ?? DEFAULT_TIMEOUTS.keepAliveTimeout,
    connectionsCheckingInterval: given?.connectionsCheckingInterval ?? DEFAULT_TIMEOUTS.connectionsCheckingInterval,
  };
  for (const [name, value] of Object.entries(timeouts)) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
      throw new TypeError(`startGatewayServer: options.serverTimeouts.${name} must be a positive integer of milliseconds`);
    }
  }
  if (timeouts.headersTimeout > timeouts.requestTimeout) {
    throw new TypeError('startGatewayServer: options.serverTimeouts.headersTimeout must not exceed requestTimeout');
  }
  return timeouts;
}

/** A running gateway. */
export interface GatewayServer {
  /** `http://127.0.0.1:<port>`: the APIs. */
  readonly url: string;
  readonly port: number;
  /** `http://127.0.0.1:<adminPort>`: admin routes and monitoring console, on their own origin. */
  readonly adminUrl: string;
  /** The password of the `admin` user. */
  readonly adminPassword: string;
  /** The gateway handles (`resetAllCaches`, `store`...). */
  readonly gateway: Gateway;
  /**
   * Stops: no new connection is accepted, exchanges in flight finish (up to `gracePeriodMs`, then
   * their connections are closed), then the gateway closes.
   */
  stop(): Promise<void>;
}

/** Starts the example gateway: the APIs on `gateway.handler`, admin and console on their own listener. */
export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const configFile = path.resolve(options.configFile);
  const adminPassword = options.adminPassword ?? randomBytes(12).toString('base64url');
  const timeouts = serverTimeouts(options.serverTimeouts);
  const gracePeriodMs = options.gracePeriodMs ?? 10_000;
  if (typeof gracePeriodMs !== 'number' || !Number.isFinite(gracePeriodMs) || gracePeriodMs < 0) {
    throw new TypeError('startGatewayServer: options.gracePeriodMs must be a non-negative number of milliseconds');
  }
  const idp = options.idp;
  const gateway = createGateway({
    // With another identity provider the file is read by a loader that swaps the token policies'
    // issuer and client; either way it is read again at each ResetAllCaches.
    config:
      idp === undefined
        ? configFile
        : async () => {
            const document = JSON.parse(await readFile(configFile, 'utf8')) as GatewayConfig;
            for (const policy of Object.values(document.tokenPolicies ?? {})) {
              policy.issuer = idp.issuer;
              policy.clientId = idp.clientId;
              policy.clientSecret = idp.clientSecret;
            }
            return document;
          },
    baseDir: path.dirname(configFile),
    admin: { basicAuth: { username: 'admin', password: adminPassword } },
  });
  // A bad configuration stops the start here, with the field named.
  await gateway.ready();

  const host = options.host ?? '127.0.0.1';
  // The console and admin routes get their own listener, so their own origin: no page relayed
  // from a backend through an API can reach them with an operator's credentials.
  const adminApp = express();
  adminApp.disable('x-powered-by');
  adminApp.use(gateway.adminRouter);
  // The APIs on a plain node:http handler: the request stays off Express's router, whose debug
  // output prints request URLs, `?access_token=` included.
  const server = await listen(gateway.handler, options.port ?? 8080, host, timeouts);
  const adminServer = await listen(adminApp, options.adminPort ?? 8081, host, timeouts);
  const origin = (s: Server): string => `http://${host.includes(':') ? `[${host}]` : host}:${(s.address() as AddressInfo).port}`;
  return {
    url: origin(server),
    port: (server.address() as AddressInfo).port,
    adminUrl: origin(adminServer),
    adminPassword,
    gateway,
    async stop() {
      await Promise.all([stopServer(server, gracePeriodMs), stopServer(adminServer, gracePeriodMs)]);
      await gateway.close();
    },
  };
}

async function listen(handler: RequestListener, port: number, host: string, timeouts: Required<ServerTimeouts>): Promise<Server> {
  const { keepAliveTimeout, ...requestTimeouts } = timeouts;
  const server = createServer(requestTimeouts, handler);
  server.keepAliveTimeout = keepAliveTimeout;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** Answers a request that arrives on an open connection during the stop, then closes it. */
function closeAfterAnswer(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Connection', 'close');
}

/**
 * Stops accepting, lets the exchanges in flight finish, closing each connection as it falls idle,
 * and closes what is left after `gracePeriodMs`.
 */
function stopServer(server: Server, gracePeriodMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    server.prependListener('request', closeAfterAnswer);
    // close() closes only the connections idle now; the others become idle as their answer ends.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(() => server.closeAllConnections(), gracePeriodMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(deadline);
      resolve();
    });
  });
}
