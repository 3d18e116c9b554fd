/**
 * The gateway as its own server: the APIs on a plain `node:http` listener (`gateway.handler`), the
 * admin routes, console and health on another, with timeouts against slow clients and a graceful
 * stop. What `express-access-gateway serve` and the example run.
 *
 * @module
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Gateway } from '../gateway/create-gateway.js';
import { adminAdmissionSettings, admitted, type AdminAdmissionOptions } from './admission.js';
import { InvalidOptionError, optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { contextOptions, readTls, tlsSettings, type ServeTlsOptions, type TlsMaterial, type TlsSettings } from './tls.js';
import { answerUnservedMethods, refuseMethod, type UnservedAnswers } from './unserved-methods.js';

/**
 * Timeouts of both listeners, with Node's names (`http.createServer` options). A client that sends
 * its headers or body slowly, or keeps an idle connection, is dropped within
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

/** Options of {@link serveGateway}. */
export interface ServeOptions {
  /** TCP port of the APIs; `0` picks one. Default `8080`. */
  port?: number;
  /** Interface of the APIs' listener. Default `127.0.0.1`. */
  host?: string;
  /**
   * Interface of the admin listener, apart from `host`: `host: '0.0.0.0'` exposes the APIs only.
   * Default `127.0.0.1`.
   */
  adminHost?: string;
  /**
   * TCP port of the admin listener (admin routes, console, health: their own origin); `0` picks one,
   * `false` serves none. Default `8081`.
   */
  adminPort?: number | false;
  /**
   * Requests of the admin listener admitted per second (a token bucket): past the rate a request
   * waits, its connection paused, so that a flood of the admin port takes a bounded share of the
   * CPU that serves the APIs. Health checks are always admitted at once.
   */
  adminAdmission?: AdminAdmissionOptions;
  /** Timeouts of both listeners. */
  timeouts?: ServerTimeouts;
  /**
   * Milliseconds that {@link GatewayServer.stop} lets exchanges in flight finish before it closes
   * their connections. Default `10000`.
   */
  gracePeriodMs?: number;
  /**
   * HTTPS: both listeners speak TLS with this certificate and key; with `clientCa` the APIs'
   * listener asks clients for a certificate (certificate-bound tokens, RFC 8705). Files are read
   * again by {@link GatewayServer.reloadTls}. Default: plain HTTP.
   */
  tls?: ServeTlsOptions;
}

/** A running gateway server. */
export interface GatewayServer {
  /** `http://<host>:<port>`: the APIs. */
  readonly url: string;
  /** The port of the APIs. */
  readonly port: number;
  /** `http://<adminHost>:<adminPort>`: admin routes, console and health; `undefined` without an admin listener. */
  readonly adminUrl: string | undefined;
  /** The gateway served. */
  readonly gateway: Gateway;
  /**
   * Reads the `tls` files again and uses them for new connections (open ones keep theirs): a
   * renewed certificate without a restart. Rejects, leaving the ones in force, when a file cannot
   * be read or used. Without `tls`, resolves and does nothing.
   */
  reloadTls(): Promise<void>;
  /**
   * Stops: no new connection is accepted, exchanges in flight finish (up to `gracePeriodMs`, then
   * their connections are closed), then the gateway closes. Resolves once everything is closed.
   */
  stop(): Promise<void>;
}

const DEFAULT_TIMEOUTS: Required<ServerTimeouts> = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
};

function checkedTimeouts(check: OptionChecks, given: ServerTimeouts | undefined): Required<ServerTimeouts> {
  const timeouts: Required<ServerTimeouts> = { ...DEFAULT_TIMEOUTS };
  check.object(given, 'timeouts', {});
  for (const name of Object.keys(DEFAULT_TIMEOUTS) as Array<keyof ServerTimeouts>) {
    timeouts[name] = check.positive(given?.[name], `timeouts.${name}`, DEFAULT_TIMEOUTS[name], true);
  }
  if (timeouts.headersTimeout > timeouts.requestTimeout) check.fail('timeouts.headersTimeout', 'must not exceed requestTimeout');
  return timeouts;
}

function checkedPort(check: OptionChecks, value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65_535)
    check.fail(path, 'must be a TCP port (0 to 65535)');
  return value;
}

const SERVE_KEYS = optionKeys<ServeOptions>({
  port: true,
  host: true,
  adminPort: true,
  adminHost: true,
  adminAdmission: true,
  timeouts: true,
  gracePeriodMs: true,
  tls: true,
});

/**
 * Serves a gateway: its APIs with `gateway.handler` on a plain `node:http` server, and its
 * `adminRouter` (admin routes, console, health) on a second listener, so on another origin than
 * any page a backend serves through an API. Both listeners drop slow and idle clients (see
 * {@link ServerTimeouts}), and answer `CONNECT` and methods Node's parser does not know with 501
 * problem+json (`ERR_METHOD_NOT_IMPLEMENTED`; recorded on the APIs' listener). Rejects when a port
 * cannot be bound.
 *
 * @example
 * ```ts
 * import { createGateway, serveGateway } from 'express-access-gateway';
 *
 * const gateway = createGateway({ config: 'gateway.config.json', admin: { basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD! } } });
 * await gateway.ready();
 * const server = await serveGateway(gateway, { port: 8080, adminPort: 8081 });
 * process.on('SIGTERM', () => void server.stop());
 * ```
 */
export async function serveGateway(gateway: Gateway, options: ServeOptions = {}): Promise<GatewayServer> {
  const check = optionChecks('serveGateway');
  if (gateway === null || typeof gateway !== 'object' || typeof gateway.handler !== 'function') {
    throw new InvalidOptionError('serveGateway: gateway', 'must be what createGateway returns');
  }
  check.object(options, '');
  check.known(options, '', SERVE_KEYS);
  const port = checkedPort(check, options.port ?? 8080, 'port');
  const adminPort = options.adminPort === false ? false : checkedPort(check, options.adminPort ?? 8081, 'adminPort');
  const host = check.string(options.host, 'host', '127.0.0.1', undefined, 'a host name or address');
  const adminHost = check.string(options.adminHost, 'adminHost', '127.0.0.1', undefined, 'a host name or address');
  const timeouts = checkedTimeouts(check, options.timeouts);
  const gracePeriodMs = check.nonNegative(options.gracePeriodMs, 'gracePeriodMs', 10_000);
  const admission = adminAdmissionSettings(check, options.adminAdmission);
  const tls = tlsSettings(check, options.tls);
  const material = tls === undefined ? undefined : await readTls(tls);

  const servers: Server[] = [];
  // Connections node:http handed over (CONNECT, unknown methods), by server: a stop waits for them too.
  const unserved = new Map<Server, UnservedAnswers>();
  const listen = async (...args: Parameters<typeof listenOn>): Promise<Server> => {
    const { server, answers } = await listenOn(...args);
    unserved.set(server, answers);
    return server;
  };
  try {
    // CONNECT and methods Node's parser does not know: 501, recorded (API) or not (admin).
    servers.push(await listen(gateway.handler, port, host, timeouts, gateway.handler, material && { material, settings: tls!, api: true }));
    if (adminPort !== false) {
      const adminApp = express();
      adminApp.disable('x-powered-by');
      adminApp.use(gateway.adminRouter);
      servers.push(
        await listen(
          admitted(adminApp, admission),
          adminPort,
          adminHost,
          timeouts,
          refuseMethod,
          material && { material, settings: tls!, api: false },
        ),
      );
    }
  } catch (err) {
    await Promise.all(servers.map((server) => stopServer(server, unserved.get(server)!, 0)));
    throw err;
  }
  const scheme = tls === undefined ? 'http' : 'https';
  const origin = (server: Server, name: string): string =>
    `${scheme}://${name.includes(':') ? `[${name}]` : name}:${(server.address() as AddressInfo).port}`;
  let stopping: Promise<void> | undefined;
  return {
    url: origin(servers[0]!, host),
    port: (servers[0]!.address() as AddressInfo).port,
    adminUrl: servers[1] === undefined ? undefined : origin(servers[1], adminHost),
    gateway,
    async reloadTls() {
      if (tls === undefined) return;
      const fresh = await readTls(tls);
      servers.forEach((server, i) => (server as unknown as HttpsServer).setSecureContext(contextOptions(fresh, i === 0)));
    },
    stop() {
      stopping ??= Promise.all(servers.map((server) => stopServer(server, unserved.get(server)!, gracePeriodMs))).then(() =>
        gateway.close(),
      );
      return stopping;
    },
  };
}

/** A listener's TLS: the material read, the settings, and whether it is the APIs' listener (the one that asks for client certificates). */
interface ListenerTls {
  material: TlsMaterial;
  settings: TlsSettings;
  api: boolean;
}

/** A server listening, and the connections it handed over to answer requests it does not serve. */
async function listenOn(
  handler: RequestListener,
  port: number,
  host: string,
  timeouts: Required<ServerTimeouts>,
  unservedMethods: RequestListener,
  tls: ListenerTls | undefined,
): Promise<{ server: Server; answers: UnservedAnswers }> {
  const { keepAliveTimeout, ...requestTimeouts } = timeouts;
  const server: Server = tls === undefined ? createServer(requestTimeouts, handler) : httpsServer(handler, requestTimeouts, tls);
  server.keepAliveTimeout = keepAliveTimeout;
  const answers = answerUnservedMethods(server, unservedMethods);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, answers };
}

/**
 * An HTTPS server: the listener's certificate and key; on the APIs' listener with a client CA,
 * client certificates asked for (required or not); a TLS handshake bounded by `headersTimeout`.
 */
function httpsServer(handler: RequestListener, timeouts: Omit<Required<ServerTimeouts>, 'keepAliveTimeout'>, tls: ListenerTls): Server {
  const askClients = tls.api && tls.material.clientCa !== undefined;
  const server = createHttpsServer(
    {
      ...timeouts,
      ...contextOptions(tls.material, tls.api),
      handshakeTimeout: timeouts.headersTimeout,
      requestCert: askClients,
      // An unverified certificate lets the client in under `optional`; it never binds a token.
      rejectUnauthorized: askClients && tls.settings.clientAuth === 'required',
    },
    handler,
  );
  return server as unknown as Server;
}

/** Answers a request that arrives on an open connection during the stop, then closes it. */
function closeAfterAnswer(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Connection', 'close');
}

/**
 * Stops accepting, lets the exchanges in flight finish, closing each connection as it falls idle,
 * and closes what is left after `gracePeriodMs`.
 */
function stopServer(server: Server, unserved: UnservedAnswers, gracePeriodMs: number): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise<void>((resolve) => {
    server.prependListener('request', closeAfterAnswer);
    // close() closes only the connections idle now; the others become idle as their answer ends.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(() => {
      server.closeAllConnections();
      unserved.closeAll();
    }, gracePeriodMs);
    server.close(() => {
      clearInterval(sweep);
      // The connections answering a CONNECT or an unknown method close as their answer is sent.
      void unserved.settled().then(() => {
        clearTimeout(deadline);
        resolve();
      });
    });
  });
}
