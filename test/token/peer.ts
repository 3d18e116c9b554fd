/**
 * A purpose-built authorization server for the tests the demo one (oidc-provider) cannot play: it
 * signs whatever JWT a test asks for (no `exp`, any `typ`, an ID token for another client, `exp`
 * of 1e20) with its own key, published at its `jwks_uri`, and answers discovery, RFC 8414
 * metadata, the token endpoint, introspection and UserInfo with whatever a test sets, however
 * large or wrong. It counts the requests of each path and how many were in flight at once.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';

/** What an endpoint does with a request (its body already read, in `body`): write any answer on `res`. */
export type PeerHandler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

export interface Peer {
  /** `http://127.0.0.1:<port>`: also the issuer. */
  readonly issuer: string;
  /** Requests received, per path (`/introspect`, `/userinfo`, `/jwks`, `/token`, discovery). */
  readonly calls: Record<string, number>;
  /** Requests of each path being answered right now. */
  readonly inFlight: Record<string, number>;
  /** Most requests of each path ever in flight at once. */
  readonly maxInFlight: Record<string, number>;
  /** Answer of `GET /.well-known/openid-configuration` (default: {@link Peer.metadata}). */
  discovery: PeerHandler;
  /** Answer of `GET /.well-known/oauth-authorization-server` (RFC 8414; default: 404). */
  oauthMetadata: PeerHandler;
  /** Answer of `POST /token` (default: 404). */
  token: PeerHandler;
  /** Answer of `POST /introspect` (default: `{"active":false}`). */
  introspection: PeerHandler;
  /** Answer of `GET /userinfo` (default: a small profile). */
  userinfo: PeerHandler;
  /** The full metadata document of the peer (every endpoint). */
  metadata(): Record<string, unknown>;
  /** Signs `claims` with the peer's key (RS256, its `kid`); `typ` is put in the header when given. */
  sign(claims: JWTPayload, typ?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Writes `body` as JSON. */
export function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The `token` parameter of an introspection request body. */
export function tokenOf(body: string): string {
  return new URLSearchParams(body).get('token') ?? '';
}

export async function startPeer(): Promise<Peer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'peer-key', alg: 'RS256', use: 'sig' };
  const calls: Record<string, number> = {};
  const inFlight: Record<string, number> = {};
  const maxInFlight: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    calls[path] = (calls[path] ?? 0) + 1;
    inFlight[path] = (inFlight[path] ?? 0) + 1;
    maxInFlight[path] = Math.max(maxInFlight[path] ?? 0, inFlight[path]);
    let counted = true;
    const done = () => {
      if (counted) inFlight[path]! -= 1;
      counted = false;
    };
    res.on('close', done);
    // Read the request first: the answer may come before the body was read.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      void (async () => {
        switch (path) {
          case '/.well-known/openid-configuration':
            return peer.discovery(req, res, body);
          case '/.well-known/oauth-authorization-server':
            return peer.oauthMetadata(req, res, body);
          case '/jwks':
            return json(res, { keys: [jwk] });
          case '/token':
            return peer.token(req, res, body);
          case '/introspect':
            return peer.introspection(req, res, body);
          case '/userinfo':
            return peer.userinfo(req, res, body);
          default:
            res.writeHead(404).end();
        }
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const notFound: PeerHandler = (_req, res) => {
    res.writeHead(404).end();
  };
  const peer: Peer = {
    issuer,
    calls,
    inFlight,
    maxInFlight,
    metadata: () => ({
      issuer: peer.issuer,
      jwks_uri: `${peer.issuer}/jwks`,
      introspection_endpoint: `${peer.issuer}/introspect`,
      userinfo_endpoint: `${peer.issuer}/userinfo`,
      token_endpoint: `${peer.issuer}/token`,
    }),
    discovery: (_req, res) => json(res, peer.metadata()),
    oauthMetadata: notFound,
    token: notFound,
    introspection: (_req, res) => json(res, { active: false }),
    userinfo: (_req, res) => json(res, { sub: 'client1', name: 'Demo' }),
    async sign(claims, typ) {
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'peer-key', ...(typ === undefined ? {} : { typ }) })
        .sign(privateKey as CryptoKey);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return peer;
}

/** Seconds since the epoch. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);
