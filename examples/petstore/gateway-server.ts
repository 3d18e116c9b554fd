/**
 * The gateway of the example: `createGateway` from the configuration file, served by
 * `serveGateway` (the APIs on a plain `node:http` listener, admin and console on another port, as
 * `express-access-gateway serve` does), imported from the package as a user would.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  createGateway,
  PostgresTransactionStore,
  serveGateway,
  type Gateway,
  type GatewayConfig,
  type ServerTimeouts,
} from 'express-access-gateway';

/** An identity provider to use instead of the one the configuration names. */
export interface IdentityProvider {
  /** Issuer URL (its metadata is discovered). */
  issuer: string;
  /** The gateway's client id there (it introspects tokens). */
  clientId: string;
  /** Its secret. */
  clientSecret: string;
  /** How the gateway authenticates its introspection calls. Default: the file's (`client_secret_basic`). */
  clientAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'bearer';
  /** Introspection endpoint, completing the discovered metadata (for a server that does not publish it). */
  introspectionEndpoint?: string;
  /** JWKS URI, completing the discovered metadata. */
  jwksUri?: string;
  /** UserInfo endpoint, completing the discovered metadata. */
  userinfoEndpoint?: string;
}

/** Options of {@link startGatewayServer}. */
export interface GatewayServerOptions {
  /** The configuration file. Relative paths in it resolve from its folder. */
  configFile: string;
  /** TCP port; `0` picks one. Default `8080`. */
  port?: number;
  /** TCP port of the admin listener (admin routes and console, their own origin); `0` picks one. Default `8081`. */
  adminPort?: number;
  /** Interface of the APIs (the admin listener stays on `127.0.0.1`). Default `127.0.0.1`. */
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

/** A running gateway. */
export interface GatewayServer {
  /** `http://127.0.0.1:<port>`: the APIs. */
  readonly url: string;
  /** The port of the APIs. */
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
  const idp = options.idp;
  // As `express-access-gateway serve`: one of several instances when the environment says so
  // (docs/deployment.md); with none of these set, nothing but Node is needed.
  const env = process.env;
  // As serve: Redis only with the secret that signs what the instances share there.
  if (env.REDIS_URL && !env.GATEWAY_CLUSTER_SECRET)
    throw new Error(
      'REDIS_URL needs GATEWAY_CLUSTER_SECRET: a secret of at least 32 characters given to every instance (for example: openssl rand -base64 32)',
    );
  const nodeId = env.GATEWAY_NODE_ID || undefined;
  const store = env.DATABASE_URL
    ? await PostgresTransactionStore.create({
        connectionString: env.DATABASE_URL,
        ...(nodeId === undefined ? {} : { nodeId }),
        ...(env.DATABASE_SCHEMA ? { schema: env.DATABASE_SCHEMA } : {}),
      })
    : undefined;
  const gateway = createGateway({
    ...(nodeId === undefined ? {} : { nodeId }),
    ...(env.REDIS_URL ? { redis: env.REDIS_URL, clusterSecret: env.GATEWAY_CLUSTER_SECRET!.split(',') } : {}),
    ...(env.REDIS_KEY_PREFIX ? { redisKeyPrefix: env.REDIS_KEY_PREFIX } : {}),
    ...(env.REDIS_COMMAND_TIMEOUT_MS ? { redisCommandTimeoutMs: Number(env.REDIS_COMMAND_TIMEOUT_MS) } : {}),
    ...(store === undefined ? {} : { store }),
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
              if (idp.clientAuthMethod !== undefined) policy.clientAuthMethod = idp.clientAuthMethod;
              if (idp.introspectionEndpoint !== undefined) policy.introspectionEndpoint = idp.introspectionEndpoint;
              if (idp.jwksUri !== undefined) policy.jwksUri = idp.jwksUri;
              if (idp.userinfoEndpoint !== undefined) policy.userinfoEndpoint = idp.userinfoEndpoint;
            }
            return document;
          },
    baseDir: path.dirname(configFile),
    admin: { basicAuth: { username: 'admin', password: adminPassword } },
  });
  // A bad configuration stops the start here, with the field named.
  try {
    await gateway.ready();
  } catch (err) {
    await gateway.close();
    await store?.close();
    throw err;
  }

  let served;
  try {
    served = await serveGateway(gateway, {
      port: options.port ?? 8080,
      adminPort: options.adminPort ?? 8081,
      host: options.host ?? '127.0.0.1',
      ...(options.gracePeriodMs === undefined ? {} : { gracePeriodMs: options.gracePeriodMs }),
      ...(options.serverTimeouts === undefined ? {} : { timeouts: options.serverTimeouts }),
    });
  } catch (err) {
    await gateway.close();
    await store?.close();
    throw err;
  }
  // Records still queued for the database are written (or spilled) once the exchanges are done.
  return {
    url: served.url,
    port: served.port,
    adminUrl: served.adminUrl!,
    adminPassword,
    gateway,
    stop: () => served.stop().then(() => store?.close()),
  };
}
