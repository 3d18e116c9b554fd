/**
 * The gateway of the example: `createGateway` from the configuration file, its APIs served by a
 * plain `node:http` server and its admin routes and console by an Express app on another port,
 * imported from the package as a user would.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
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
  /** Stops the server and the gateway. */
  stop(): Promise<void>;
}

/** Starts the example gateway: the APIs on `gateway.handler`, admin and console on their own listener. */
export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const configFile = path.resolve(options.configFile);
  const adminPassword = options.adminPassword ?? randomBytes(12).toString('base64url');
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
  // The APIs on a plain node:http handler: the request stays off Express's router, whose debug
  // output prints request URLs, `?access_token=` included.
  const app = createServer(gateway.handler);
  // The console and admin routes get their own listener, so their own origin: no page relayed
  // from a backend through an API can reach them with an operator's credentials.
  const adminApp = express();
  adminApp.disable('x-powered-by');
  adminApp.use(gateway.adminRouter);
  const server = await listen(app, options.port ?? 8080, host);
  const adminServer = await listen(adminApp, options.adminPort ?? 8081, host);
  const origin = (s: Server): string => `http://${host.includes(':') ? `[${host}]` : host}:${(s.address() as AddressInfo).port}`;
  return {
    url: origin(server),
    port: (server.address() as AddressInfo).port,
    adminUrl: origin(adminServer),
    adminPassword,
    gateway,
    async stop() {
      await Promise.all([stopServer(server), stopServer(adminServer)]);
      await gateway.close();
    },
  };
}

async function listen(app: Server | express.Express, port: number, host: string): Promise<Server> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, host);
    s.once('listening', () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

function stopServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
