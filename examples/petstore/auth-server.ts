/**
 * A demo OAuth 2.0 authorization server built with `oidc-provider` 9, for the runnable example and
 * for every integration test. It runs in-process on loopback and issues client_credentials tokens:
 *
 * - opaque access tokens (default) whose introspection response carries `aud` (the API audience),
 *   `azp` and `sub` (the client id), `scope`, `client_id`, `exp`, `iat`, `iss`, `active`;
 * - JWT access tokens (`format: 'jwt'`, through a second resource indicator) signed with a key
 *   published at the issuer's `jwks_uri`, so JWT validation can be tested;
 * - introspection (the `gateway` client may introspect every client's tokens, others only their own)
 *   and revocation (a client revokes its own tokens);
 * - introspection and revocation of its own JWT access tokens too, as Keycloak, WSO2 and similar
 *   servers do (oidc-provider itself refuses both for JWTs, which it does not store: see below);
 * - a small UserInfo answer for client_credentials tokens (see {@link DemoAuthServer}).
 *
 * JWT access tokens at the introspection and revocation endpoints: oidc-provider handles the
 * request first, so the calling client is authenticated exactly as for opaque tokens (same methods,
 * same errors: a bad secret still gets 401 `invalid_client`). For a JWT it then answers 400
 * `unsupported_token_type`; a Koa middleware of the provider replaces that answer, and only that
 * one, for an authenticated client:
 *
 * - introspection: when the token verifies with `jose` against this server's own key (`typ`
 *   `at+jwt`, RS256, `iss` = this issuer, `exp` not passed), its `jti` was not revoked, and the
 *   client may introspect it (the same rule as for opaque tokens), the answer is `active: true`
 *   with the JWT's claims plus `client_id` and `token_type: 'Bearer'`; otherwise `{"active":false}`
 *   (RFC 7662: never an error for a bad token);
 * - revocation: when the token verifies and belongs to the calling client, its `jti` is recorded
 *   as revoked (kept until the token's `exp`, in a set owned by this server instance); the answer
 *   is 200 either way (RFC 7009 section 2.2). {@link DemoAuthServer.revoke} goes through this
 *   endpoint, so it revokes JWTs too.
 *
 * Revoked JWTs are also refused by the demo UserInfo answer. Such a request is still counted once in
 * {@link DemoAuthServer.stats} (`introspections` counts POSTs to the endpoint, whatever the token).
 *
 * @example
 * ```ts
 * const as = await startDemoAuthServer({ port: 0 });
 * const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
 * // ... call the gateway with `Authorization: Bearer ${token}`
 * await as.stop();
 * ```
 *
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';

/** A client registered at the demo authorization server. */
export interface DemoClient {
  /** `client_id`. */
  clientId: string;
  /** `client_secret` (also used as the HMAC key of `client_secret_jwt`, not supported here). */
  clientSecret: string;
  /**
   * How the client authenticates at the token, introspection and revocation endpoints.
   * Default `client_secret_basic`. `private_key_jwt` needs {@link DemoClient.jwks}.
   */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
  /** Public keys of a `private_key_jwt` client. */
  jwks?: { keys: JWK[] };
  /** Scopes the client may request, space separated. Default `read write`. */
  scope?: string;
  /**
   * Claims the demo UserInfo answer returns for this client's tokens (merged over the default
   * profile: `name`, `given_name`, `middle_name`, `family_name`, `email`, `preferred_username`).
   */
  profile?: Record<string, unknown>;
  /**
   * The user authentication this client's tokens say is behind them, as the tokens of an
   * interactive login carry it (OpenID Connect `acr` and `auth_time`, read by step-up
   * authentication, RFC 9470): the claims go into its JWT access tokens and the introspection
   * answers of its opaque ones. `authTime` is given the current time (seconds since the epoch) when
   * a token is issued, so that "an hour ago" stays an hour ago. Default: neither claim.
   */
  authentication?: { acr?: string; authTime?: (nowSeconds: number) => number };
}

/** Options of {@link startDemoAuthServer}. */
export interface DemoAuthServerOptions {
  /** TCP port; `0` (the default) picks an ephemeral one (tests); the example uses 9000. */
  port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /**
   * Registered clients. Default: `client1`/`client1-secret`, `client2`/`client2-secret`,
   * `client3`/`client3-secret` (token clients) and `gateway`/`gateway-secret` (introspection client).
   */
  clients?: DemoClient[];
  /** Access token lifetime in seconds. Default 3600 (tests use a short one for "expired"). */
  accessTokenTtl?: number;
  /** The API identifier put in `aud`. Default `petstore-api`. */
  audience?: string;
  /**
   * A scope the token must carry for UserInfo to answer; without it UserInfo answers 403
   * `insufficient_scope`, as Keycloak does for tokens without `openid`. Default: none required.
   */
  userInfoScope?: string;
  /**
   * Client id(s) allowed to introspect tokens of every client (other clients only introspect their
   * own). Default `gateway`.
   */
  introspectionClientId?: string | string[];
}

/** Counters of requests the demo server received. */
export interface DemoAuthServerStats {
  /** POST requests to the introspection endpoint. */
  introspections: number;
  /** POST requests to the token endpoint. */
  tokenRequests: number;
  /** Requests to the UserInfo endpoint. */
  userinfo: number;
  /** GET requests to the discovery document. */
  discoveries: number;
}

/** A running demo authorization server. */
export interface DemoAuthServer {
  /** `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  /** The TCP port it listens on. */
  readonly port: number;
  /** Request counters (mutable, reset them in tests if needed). */
  readonly stats: DemoAuthServerStats;
  /** The API audience put in `aud`. */
  readonly audience: string;
  /** Endpoint URLs, as published in discovery. */
  readonly endpoints: { token: string; introspection: string; revocation: string; userinfo: string; jwks: string };
  /** Resource indicators that select the access token format. */
  readonly resources: { opaque: string; jwt: string };
  /**
   * Obtains an access token with the client_credentials grant, over real HTTP, authenticating as the
   * client is registered (`client_secret_basic` or `client_secret_post`).
   */
  issueToken(
    clientId: string,
    clientSecret: string,
    options?: {
      scope?: string;
      format?: 'opaque' | 'jwt';
      /**
       * Binds the token to this key (RFC 9449, oidc-provider's `dPoP` feature): the token request
       * carries a DPoP proof signed with it, and the token's `cnf.jkt` is the key's thumbprint.
       */
      dpop?: { privateKey: CryptoKey; publicJwk: JWK; alg: string };
    },
  ): Promise<string>;
  /**
   * Revokes a token (RFC 7009) over real HTTP. Works for JWT access tokens too: the server records
   * their `jti`, so introspection then answers `active: false` for them.
   */
  revoke(token: string, clientId: string, clientSecret: string): Promise<void>;
  /** Closes the listening server and every open socket: the server is then "down". */
  stop(): Promise<void>;
  /** Listens again on the same port after {@link DemoAuthServer.stop}. */
  start(): Promise<void>;
}

/** Default clients of the demo server. */
export const defaultDemoClients: readonly DemoClient[] = [
  { clientId: 'client1', clientSecret: 'client1-secret' },
  { clientId: 'client2', clientSecret: 'client2-secret' },
  { clientId: 'client3', clientSecret: 'client3-secret' },
  { clientId: 'gateway', clientSecret: 'gateway-secret' },
];

// The parts of oidc-provider's API used here (the package ships no type declarations).
interface OidcToken {
  kind: string;
  clientId: string;
  accountId?: string;
  isValid?: boolean;
  isExpired?: boolean;
}
interface OidcClient {
  clientId: string;
}
/** The parts of oidc-provider's (Koa) request context read by the JWT middleware. */
interface OidcKoaContext {
  status: number;
  body: unknown;
  oidc?: { route?: string; client?: OidcClient; params?: { token?: unknown } };
}
interface OidcProviderInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  use(middleware: (ctx: OidcKoaContext, next: () => Promise<void>) => Promise<void>): unknown;
  ClientCredentials: { find(value: string): Promise<OidcToken | undefined> };
}
type OidcProviderConstructor = new (issuer: string, configuration: Record<string, unknown>) => OidcProviderInstance;
interface OidcProviderModule {
  default: OidcProviderConstructor;
  errors: { InvalidTarget: new (description?: string) => Error };
}

/**
 * Loads oidc-provider. The specifier goes through a variable because the package has no type
 * declarations (a typed import would fail strict type-checking); the one warning it prints at import
 * time on Node 20 ("Unsupported runtime") is filtered so test output stays quiet.
 */
async function loadProvider(): Promise<OidcProviderModule> {
  const specifier = 'oidc-provider';
  const original = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].includes('Unsupported runtime')) return;
    original.apply(console, args);
  };
  try {
    return (await import(specifier)) as OidcProviderModule;
  } finally {
    console.warn = original;
  }
}

/**
 * A minimal in-memory storage adapter, one per server: oidc-provider's own one is shared by every
 * provider in the process and warns at start-up.
 */
function memoryAdapterFactory(): (model: string) => unknown {
  const store = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>();
  const get = (key: string): Record<string, unknown> | undefined => {
    const entry = store.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return entry.payload;
  };
  return (model: string) => ({
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
      store.set(`${model}:${id}`, { payload, expiresAt });
      if (model === 'Session' && typeof payload['uid'] === 'string') {
        store.set(`sessionUid:${payload['uid']}`, { payload: { id }, expiresAt });
      }
      if (typeof payload['grantId'] === 'string') {
        const grantKey = `grant:${payload['grantId']}`;
        const members = (get(grantKey)?.['members'] as string[] | undefined) ?? [];
        store.set(grantKey, { payload: { members: [...members, `${model}:${id}`] }, expiresAt: Infinity });
      }
    },
    async find(id: string) {
      return get(`${model}:${id}`);
    },
    async findByUid(uid: string) {
      const ref = get(`sessionUid:${uid}`);
      return ref === undefined ? undefined : get(`${model}:${String(ref['id'])}`);
    },
    async findByUserCode() {
      return undefined;
    },
    async consume(id: string) {
      const payload = get(`${model}:${id}`);
      if (payload !== undefined) payload['consumed'] = Math.floor(Date.now() / 1000);
    },
    async destroy(id: string) {
      store.delete(`${model}:${id}`);
    },
    async revokeByGrantId(grantId: string) {
      const members = (get(`grant:${grantId}`)?.['members'] as string[] | undefined) ?? [];
      for (const key of members) store.delete(key);
      store.delete(`grant:${grantId}`);
    },
  });
}

function formEncode(value: string): string {
  // RFC 6749 section 2.3.1: client id and secret are form-urlencoded before Basic encoding.
  return encodeURIComponent(value).replace(/%20/g, '+');
}

/**
 * Starts the demo authorization server on loopback.
 *
 * Listens first (so that the port, and thus the issuer `http://127.0.0.1:<port>`, is known), then
 * builds the provider with that issuer. Besides oidc-provider's own endpoints it answers the
 * UserInfo endpoint (`/me`, as published in discovery) itself for client_credentials tokens, with a
 * demo profile of the client (`sub` = client id): oidc-provider's UserInfo only serves user tokens,
 * and the gateway's UserInfo switch needs something to call. Other tokens go to oidc-provider.
 */
export async function startDemoAuthServer(options: DemoAuthServerOptions = {}): Promise<DemoAuthServer> {
  const host = options.host ?? '127.0.0.1';
  const audience = options.audience ?? 'petstore-api';
  const ttl = options.accessTokenTtl ?? 3600;
  const clients = options.clients ?? [...defaultDemoClients];
  const introspectors = new Set([options.introspectionClientId ?? 'gateway'].flat());
  if (!Number.isInteger(ttl) || ttl <= 0) throw new TypeError('accessTokenTtl must be a positive integer');

  const stats: DemoAuthServerStats = { introspections: 0, tokenRequests: 0, userinfo: 0, discoveries: 0 };
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server: Server = createServer((req, res) => handler(req, res));
  await listen(server, options.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const resources = { opaque: 'urn:example:petstore:opaque', jwt: 'urn:example:petstore:jwt' };
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const signingKey = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  // The server's own public JWKS (what it publishes), to recognize its JWT access tokens.
  const ownKeys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  // jti -> exp of revoked JWT access tokens (per server: no state shared between instances).
  const revokedJwts = new Map<string, number>();

  /**
   * The claims of one of this server's JWT access tokens: signature by its key, `typ` `at+jwt`,
   * `iss`, `exp` (no tolerance, as the provider's `clockTolerance: 0`); `undefined` for anything
   * else, including a revoked one.
   */
  async function ownJwt(token: unknown, { checkRevoked = true } = {}): Promise<JWTPayload | undefined> {
    if (typeof token !== 'string' || !isJws(token)) return undefined;
    try {
      const { payload } = await jwtVerify(token, ownKeys, { issuer, algorithms: ['RS256'], typ: 'at+jwt', requiredClaims: ['exp', 'jti'] });
      if (typeof payload.client_id !== 'string') return undefined;
      if (checkRevoked && revokedJwts.has(payload.jti as string)) return undefined;
      return payload;
    } catch {
      return undefined;
    }
  }
  function recordRevoked(payload: JWTPayload): void {
    const now = Math.floor(Date.now() / 1000);
    for (const [jti, exp] of revokedJwts) if (exp <= now) revokedJwts.delete(jti);
    revokedJwts.set(payload.jti as string, payload.exp as number);
  }

  const authentications = new Map(clients.map((c) => [c.clientId, c.authentication]));
  /** `acr` and `auth_time` of a client's tokens, as {@link DemoClient.authentication} gives them. */
  function authenticationClaims(clientId: string): { acr?: string; auth_time?: number } {
    const authentication = authentications.get(clientId);
    const claims: { acr?: string; auth_time?: number } = {};
    if (authentication?.acr !== undefined) claims.acr = authentication.acr;
    if (authentication?.authTime !== undefined) claims.auth_time = authentication.authTime(Math.floor(Date.now() / 1000));
    return claims;
  }

  const { default: Provider, errors } = await loadProvider();
  const provider = new Provider(issuer, {
    adapter: memoryAdapterFactory(),
    clients: clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: c.tokenEndpointAuthMethod ?? 'client_secret_basic',
      ...(c.jwks ? { jwks: c.jwks } : {}),
      scope: c.scope ?? 'read write',
    })),
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    scopes: ['openid', 'read', 'write'],
    ttl: { ClientCredentials: ttl, AccessToken: ttl },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // The gateway's client introspects every client's tokens; a client only its own.
        allowedPolicy: async (_ctx: unknown, client: OidcClient, token: OidcToken) =>
          introspectors.has(client.clientId) || client.clientId === token.clientId,
      },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: OidcClient, token: OidcToken) => client.clientId === token.clientId,
      },
      resourceIndicators: {
        enabled: true,
        // Without a `resource` parameter the token is for the API, opaque.
        defaultResource: async () => resources.opaque,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => {
          if (resource !== resources.opaque && resource !== resources.jwt) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: 'read write',
            audience,
            accessTokenTTL: ttl,
            accessTokenFormat: resource === resources.jwt ? 'jwt' : 'opaque',
          };
        },
      },
    },
    // `azp` on every token; `sub` = client id on client_credentials ones (user tokens have theirs);
    // `acr` and `auth_time` for a client given an authentication.
    extraTokenClaims: async (_ctx: unknown, token: OidcToken) => ({
      azp: token.clientId,
      ...(token.kind === 'ClientCredentials' ? { sub: token.clientId } : {}),
      ...authenticationClaims(token.clientId),
    }),
    clockTolerance: 0,
  });

  // JWT access tokens at introspection and revocation (see the module comment). Runs around
  // oidc-provider's routes: after `next()` the route has authenticated the client (or failed) and
  // rendered its answer; only "authenticated client, structured token refused" is replaced.
  provider.use(async (ctx, next) => {
    await next();
    const route = ctx.oidc?.route;
    if (route !== 'introspection' && route !== 'revocation') return;
    const refusedJwt = ctx.status === 400 && (ctx.body as { error?: unknown } | undefined)?.error === 'unsupported_token_type';
    const client = ctx.oidc?.client;
    if (!refusedJwt || client === undefined) return;
    const token = ctx.oidc?.params?.token;
    if (route === 'introspection') {
      const payload = await ownJwt(token);
      const clientId = payload?.client_id as string | undefined;
      const allowed = clientId !== undefined && (introspectors.has(client.clientId) || client.clientId === clientId);
      ctx.status = 200;
      ctx.body =
        payload !== undefined && allowed
          ? {
              ...payload,
              active: true,
              client_id: clientId,
              token_type: (payload.cnf as { jkt?: unknown } | undefined)?.jkt ? 'DPoP' : 'Bearer',
            }
          : { active: false };
      return;
    }
    // Revocation: a client revokes its own tokens; an expired one needs no revoking.
    const payload = await ownJwt(token, { checkRevoked: false });
    if (payload !== undefined && payload.client_id === client.clientId) recordRevoked(payload);
    ctx.status = 200;
    ctx.body = '';
  });

  const endpoints = {
    token: `${issuer}/token`,
    introspection: `${issuer}/token/introspection`,
    revocation: `${issuer}/token/revocation`,
    userinfo: `${issuer}/me`,
    jwks: `${issuer}/jwks`,
  };
  const callback = provider.callback();
  const profiles = new Map(clients.map((c) => [c.clientId, c.profile ?? {}]));

  /** The client id and scope of a valid client_credentials token, opaque or one of our JWTs. */
  async function clientToken(value: string): Promise<{ clientId: string; scope: unknown } | undefined> {
    const jwt = await ownJwt(value);
    if (jwt !== undefined) return { clientId: jwt.client_id as string, scope: jwt['scope'] };
    const token = await provider.ClientCredentials.find(value).catch(() => undefined);
    if (token === undefined || token.isValid === false) return undefined;
    return { clientId: token.clientId, scope: (token as { scope?: unknown }).scope };
  }

  async function userinfo(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const match = /^bearer +([^\s]+)$/i.exec(req.headers.authorization ?? '');
    if (!match?.[1]) return false;
    const token = await clientToken(match[1]);
    if (token === undefined) return false;
    if (
      options.userInfoScope !== undefined &&
      !String(token.scope ?? '')
        .split(' ')
        .includes(options.userInfoScope)
    ) {
      res.writeHead(403, { 'www-authenticate': `Bearer error="insufficient_scope", scope="${options.userInfoScope}"` });
      res.end();
      return true;
    }
    const body = {
      sub: token.clientId,
      name: `Demo ${token.clientId}`,
      given_name: 'Demo',
      middle_name: 'Client',
      family_name: token.clientId,
      email: `${token.clientId}@example.test`,
      preferred_username: token.clientId,
      ...profiles.get(token.clientId),
    };
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
    return true;
  }

  handler = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST' && path === '/token/introspection') stats.introspections += 1;
    if (req.method === 'POST' && path === '/token') stats.tokenRequests += 1;
    if (req.method === 'GET' && path === '/.well-known/openid-configuration') stats.discoveries += 1;
    if (path === '/me') {
      stats.userinfo += 1;
      userinfo(req, res).then(
        (handled) => {
          if (!handled) callback(req, res);
        },
        () => {
          res.statusCode = 500;
          res.end();
        },
      );
      return;
    }
    callback(req, res);
  };

  const secrets = new Map(clients.map((c) => [c.clientId, c]));
  async function post(
    url: string,
    clientId: string,
    clientSecret: string,
    params: Record<string, string>,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    const method = secrets.get(clientId)?.tokenEndpointAuthMethod ?? 'client_secret_basic';
    const body = new URLSearchParams(params);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      ...extraHeaders,
    };
    if (method === 'client_secret_post') {
      body.set('client_id', clientId);
      body.set('client_secret', clientSecret);
    } else {
      headers['authorization'] = `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`).toString('base64')}`;
    }
    return fetch(url, { method: 'POST', headers, body });
  }

  let running = true;
  return {
    issuer,
    port,
    stats,
    audience,
    endpoints,
    resources,
    async issueToken(clientId, clientSecret, tokenOptions = {}) {
      const params: Record<string, string> = { grant_type: 'client_credentials' };
      if (tokenOptions.scope !== undefined) params['scope'] = tokenOptions.scope;
      params['resource'] = tokenOptions.format === 'jwt' ? resources.jwt : resources.opaque;
      const key = tokenOptions.dpop;
      const proof: Record<string, string> =
        key === undefined
          ? {}
          : {
              dpop: await new SignJWT({ htm: 'POST', htu: endpoints.token, jti: randomUUID() })
                .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk })
                .setIssuedAt()
                .sign(key.privateKey),
            };
      const response = await post(endpoints.token, clientId, clientSecret, params, proof);
      const json = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!response.ok || typeof json.access_token !== 'string') {
        throw new Error(`token request failed: ${response.status} ${json.error ?? ''} ${json.error_description ?? ''}`.trim());
      }
      return json.access_token;
    },
    async revoke(token, clientId, clientSecret) {
      const response = await post(endpoints.revocation, clientId, clientSecret, { token });
      if (!response.ok) throw new Error(`revocation failed: ${response.status}`);
      await response.arrayBuffer();
    },
    async stop() {
      if (!running) return;
      running = false;
      await new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets would keep the server "up" for clients that already connected.
        server.closeAllConnections();
      });
    },
    async start() {
      if (running) return;
      await listen(server, port, host);
      running = true;
    },
  };
}

/** Whether a string is a compact JWS (what oidc-provider's own check calls a structured token). */
function isJws(value: string): boolean {
  try {
    decodeProtectedHeader(value);
    return value.split('.').length === 3;
  } catch {
    return false;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
