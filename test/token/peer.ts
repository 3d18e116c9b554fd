/**
 * A purpose-built authorization server for the tests the demo one (oidc-provider) cannot play: it
 * signs whatever JWT a test asks for (no `exp`, any `typ`, an ID token for another client, `exp`
 * of 1e20) with its own key, published at its `jwks_uri`, and answers introspection and UserInfo
 * with whatever a test sets, however large or wrong.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';

/** What an endpoint does with a request: write any answer on `res`. */
export type PeerHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface Peer {
  /** `http://127.0.0.1:<port>`: also the issuer. */
  readonly issuer: string;
  /** Requests received, per path (`/introspect`, `/userinfo`, `/jwks`, discovery). */
  readonly calls: Record<string, number>;
  /** Answer of `POST /introspect` (default: `{"active":false}`). */
  introspection: PeerHandler;
  /** Answer of `GET /userinfo` (default: a small profile). */
  userinfo: PeerHandler;
  /** Signs `claims` with the peer's key (RS256, its `kid`); `typ` is put in the header when given. */
  sign(claims: JWTPayload, typ?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Writes `body` as JSON. */
export function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function startPeer(): Promise<Peer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'peer-key', alg: 'RS256', use: 'sig' };
  const calls: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    calls[path] = (calls[path] ?? 0) + 1;
    // Drain the request first: the answer may come before the body was read.
    req.resume();
    req.on('end', () => {
      void (async () => {
        switch (path) {
          case '/.well-known/openid-configuration':
            return json(res, {
              issuer: peer.issuer,
              jwks_uri: `${peer.issuer}/jwks`,
              introspection_endpoint: `${peer.issuer}/introspect`,
              userinfo_endpoint: `${peer.issuer}/userinfo`,
              token_endpoint: `${peer.issuer}/token`,
            });
          case '/jwks':
            return json(res, { keys: [jwk] });
          case '/introspect':
            return peer.introspection(req, res);
          case '/userinfo':
            return peer.userinfo(req, res);
          default:
            res.writeHead(404).end();
        }
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const peer: Peer = {
    issuer,
    calls,
    introspection: (_req, res) => json(res, { active: false }),
    userinfo: (_req, res) => json(res, { sub: 'client1', name: 'Demo' }),
    async sign(claims, typ) {
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'peer-key', ...(typ === undefined ? {} : { typ }) }).sign(privateKey as CryptoKey);
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
