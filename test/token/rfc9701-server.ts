/**
 * A purpose-built authorization server that answers introspection as RFC 9701 asks: its discovery
 * document names `introspection_endpoint`, `jwks_uri` and `introspection_signing_alg_values_supported`;
 * the introspection endpoint authenticates the client (`client_secret_basic`, the id and secret
 * form-decoded as RFC 6749 2.3.1 says, or `client_secret_post`) and, to a request that accepts
 * `application/token-introspection+jwt`, answers a JWS of that type (header `typ`
 * `token-introspection+jwt`, claims `iss`, `aud` = the client, `iat`, `token_introspection`),
 * else plain RFC 7662 JSON. A test switches it to misbehave in one way at a time.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/** One way of answering a signed introspection wrongly (`none`: as RFC 9701 asks). */
export type Misbehaviour =
  | 'none'
  /** Signed with a key that is not the published one, under the published key's `kid`. */
  | 'wrong-key'
  /** Signed with a key the JWKS does not hold, under a `kid` of its own. */
  | 'unknown-kid'
  /** Plain RFC 7662 JSON although the JWT was asked for. */
  | 'unsigned'
  /** `typ` `JWT` instead of `token-introspection+jwt`. */
  | 'wrong-typ'
  /** `aud` another client. */
  | 'wrong-aud'
  /** `iss` another issuer. */
  | 'wrong-iss'
  /** No `iat`. */
  | 'no-iat'
  /** `iat` ten minutes ago. */
  | 'old-iat'
  /** `iat` ten minutes ahead. */
  | 'future-iat'
  /** An unsecured JWS (`alg` `none`, empty signature). */
  | 'alg-none'
  /** HS256 with the client's secret as the key. */
  | 'hs256'
  /** RS256 with a published RSA key, although the metadata lists ES256 only. */
  | 'unlisted-alg'
  /** No `token_introspection` claim (the introspection claims at the top level). */
  | 'no-token-introspection'
  /** The right JWS, served as `application/json`. */
  | 'jwt-as-json'
  /** `token_introspection.active` the string `"true"`. */
  | 'active-string';

export interface Rfc9701Server {
  /** `http://127.0.0.1:<port>`: also the issuer. */
  readonly issuer: string;
  /** How the next introspections are answered. */
  misbehaviour: Misbehaviour;
  /** Requests received per path. */
  readonly calls: Record<string, number>;
  /** The `Accept` header of each introspection request. */
  readonly accepts: string[];
  /** Issues an opaque token whose introspection answers `claims` (with `active: true`). */
  issue(claims: Record<string, unknown>): string;
  /** Makes a token inactive. */
  revoke(token: string): void;
  /** Signs with a new key from now on, published in the JWKS beside the old one. */
  rotate(): Promise<void>;
  /** JWKS requests answered. */
  readonly jwksFetches: number;
  stop(): Promise<void>;
}

/** Registered clients: id → secret. */
const CLIENTS: Record<string, string> = { gateway: 'gateway-secret', 'other-rs': 'other-secret' };

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** The client the request authenticates as, or `undefined` (RFC 6749 2.3.1: basic credentials form-decoded). */
function authenticate(req: IncomingMessage, form: URLSearchParams): string | undefined {
  const header = req.headers.authorization;
  let id: string | undefined;
  let secret: string | undefined;
  if (header?.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    id = decode(decoded.slice(0, colon));
    secret = decode(decoded.slice(colon + 1));
  } else {
    id = form.get('client_id') ?? undefined;
    secret = form.get('client_secret') ?? undefined;
  }
  return id !== undefined && Object.hasOwn(CLIENTS, id) && CLIENTS[id] === secret ? id : undefined;
}

interface Keys {
  es: { privateKey: CryptoKey; jwk: JWK };
  /** Published beside `es`: the keys of before a rotation. */
  retired: JWK[];
  rsa: { privateKey: CryptoKey; jwk: JWK };
  /** Not published. */
  stranger: CryptoKey;
}

async function makeKeys(): Promise<Keys> {
  const es = await generateKeyPair('ES256');
  const rsa = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('ES256');
  return {
    es: { privateKey: es.privateKey, jwk: { ...(await exportJWK(es.publicKey)), kid: 'as-es256', alg: 'ES256', use: 'sig' } },
    retired: [],
    rsa: { privateKey: rsa.privateKey, jwk: { ...(await exportJWK(rsa.publicKey)), kid: 'as-rs256', alg: 'RS256', use: 'sig' } },
    stranger: stranger.privateKey,
  };
}

/** The RFC 9701 section 5 answer, bent by `misbehaviour`. */
async function signedAnswer(
  keys: Keys,
  issuer: string,
  client: string,
  answer: Record<string, unknown>,
  misbehaviour: Misbehaviour,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {
    iss: misbehaviour === 'wrong-iss' ? 'https://elsewhere.example' : issuer,
    aud: misbehaviour === 'wrong-aud' ? 'other-rs' : client,
    ...(misbehaviour === 'no-iat' ? {} : { iat: misbehaviour === 'old-iat' ? now - 600 : misbehaviour === 'future-iat' ? now + 600 : now }),
    ...(misbehaviour === 'no-token-introspection'
      ? answer
      : { token_introspection: misbehaviour === 'active-string' ? { ...answer, active: String(answer['active']) } : answer }),
  };
  const typ = misbehaviour === 'wrong-typ' ? 'JWT' : 'token-introspection+jwt';
  if (misbehaviour === 'alg-none') {
    const part = (value: unknown) => base64url.encode(JSON.stringify(value));
    return `${part({ alg: 'none', typ })}.${part(claims)}.`;
  }
  if (misbehaviour === 'hs256')
    return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ }).sign(new TextEncoder().encode(CLIENTS[client]));
  if (misbehaviour === 'unlisted-alg')
    return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ, kid: keys.rsa.jwk.kid! }).sign(keys.rsa.privateKey);
  const kid = misbehaviour === 'unknown-kid' ? 'not-published' : keys.es.jwk.kid!;
  const key = misbehaviour === 'wrong-key' || misbehaviour === 'unknown-kid' ? keys.stranger : keys.es.privateKey;
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ, kid }).sign(key);
}

export async function startRfc9701Server(): Promise<Rfc9701Server> {
  const keys = await makeKeys();
  const tokens = new Map<string, Record<string, unknown>>();
  const calls: Record<string, number> = {};
  const accepts: string[] = [];

  async function introspect(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    accepts.push(req.headers.accept ?? '');
    const form = new URLSearchParams(body);
    const client = authenticate(req, form);
    if (client === undefined) {
      res.setHeader('www-authenticate', 'Basic realm="as"');
      json(res, { error: 'invalid_client' }, 401);
      return;
    }
    const found = tokens.get(form.get('token') ?? '');
    // RFC 7662 2.2: an inactive token's answer says nothing more.
    const answer = found === undefined ? { active: false } : found;
    const wantsJwt = (req.headers.accept ?? '').split(',').some((t) => t.split(';')[0]!.trim() === 'application/token-introspection+jwt');
    if (!wantsJwt || state.misbehaviour === 'unsigned') {
      json(res, answer);
      return;
    }
    const jws = await signedAnswer(keys, state.issuer, client, answer, state.misbehaviour);
    res.writeHead(200, {
      'content-type': state.misbehaviour === 'jwt-as-json' ? 'application/json' : 'application/token-introspection+jwt',
      'cache-control': 'no-store',
    });
    res.end(jws);
  }

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    calls[path] = (calls[path] ?? 0) + 1;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (path === '/.well-known/openid-configuration' || path === '/.well-known/oauth-authorization-server') {
        json(res, {
          issuer: state.issuer,
          introspection_endpoint: `${state.issuer}/introspect`,
          jwks_uri: `${state.issuer}/jwks`,
          introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
          introspection_signing_alg_values_supported: ['ES256'],
        });
      } else if (path === '/jwks') {
        res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
        state.jwksFetches += 1;
        res.end(JSON.stringify({ keys: [keys.es.jwk, ...keys.retired, keys.rsa.jwk] }));
      } else if (path === '/introspect' && req.method === 'POST') {
        introspect(req, res, body).catch(() => res.writeHead(500).end());
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let rotations = 0;
  const state: Rfc9701Server & { jwksFetches: number } = {
    issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    misbehaviour: 'none',
    jwksFetches: 0,
    calls,
    accepts,
    issue(claims) {
      const token = randomBytes(24).toString('base64url');
      tokens.set(token, { active: true, token_type: 'Bearer', iss: state.issuer, ...claims });
      return token;
    },
    revoke(token) {
      tokens.delete(token);
    },
    async rotate() {
      const next = await generateKeyPair('ES256');
      rotations += 1;
      keys.retired.push(keys.es.jwk);
      keys.es = {
        privateKey: next.privateKey,
        jwk: { ...(await exportJWK(next.publicKey)), kid: `as-es256-${rotations}`, alg: 'ES256', use: 'sig' },
      };
    },
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return state;
}
