/**
 * An authorization server issuing certificate-bound access tokens (RFC 8705) for the tests:
 * `oidc-provider` with its `mTLS.certificateBoundAccessTokens` feature. Its issuer (discovery,
 * introspection) is plain HTTP on loopback; its token endpoint is also served on an HTTPS listener
 * that asks for the client's certificate, so that a client_credentials token obtained there is
 * bound to that certificate (`cnf.x5t#S256` in the introspection answer).
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, request, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { exportJWK, generateKeyPair } from 'jose';
import type { Issued, TestPki } from '../../support/certificates.js';

export interface MtlsAuthServer {
  /** `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  /**
   * A client_credentials token from the mTLS token endpoint: bound to `certificate` for the bound
   * client (`bound`), a plain bearer token for the other (`plain`).
   */
  issueToken(clientId: 'bound' | 'plain', certificate: Issued, format?: 'opaque' | 'jwt'): Promise<string>;
  /** The audience of its JWT access tokens (`format: 'jwt'`). */
  readonly jwtAudience: string;
  stop(): Promise<void>;
}

interface ProviderLike {
  callback(): (req: unknown, res: unknown) => void;
}

const OPAQUE_RESOURCE = 'urn:test:api';
const JWT_RESOURCE = 'urn:test:jwt-api';

export async function startMtlsAuthServer(pki: TestPki): Promise<MtlsAuthServer> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  // The package ships no type declarations: imported by a name the compiler does not resolve.
  const specifier = 'oidc-provider';
  const { default: Provider } = (await import(specifier)) as {
    default: new (issuer: string, configuration: Record<string, unknown>) => ProviderLike;
  };
  const client = (id: string, bound: boolean) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'read',
    ...(bound ? { tls_client_certificate_bound_access_tokens: true } : {}),
  });
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'mtls-test', alg: 'RS256', use: 'sig' }] },
    ttl: { ClientCredentials: 600 },
    clients: [client('bound', true), client('plain', false), client('gateway', false)],
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    scopes: ['read'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: async () => true },
      // A token asked for the JWT resource is a JWT (its cnf in the claims); any other is opaque.
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => OPAQUE_RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => ({
          scope: 'read',
          audience: resource === JWT_RESOURCE ? JWT_RESOURCE : OPAQUE_RESOURCE,
          accessTokenTTL: 600,
          accessTokenFormat: resource === JWT_RESOURCE ? 'jwt' : 'opaque',
        }),
      },
      mTLS: {
        enabled: true,
        certificateBoundAccessTokens: true,
        // The certificate of the HTTPS listener's connection (none on the plain HTTP one).
        getCertificate(ctx: { req: { socket: Partial<TLSSocket> } }) {
          const raw = ctx.req.socket.getPeerCertificate?.(false)?.raw;
          return raw === undefined ? undefined : new X509Certificate(raw);
        },
      },
    },
    extraTokenClaims: async (_ctx: unknown, token: { clientId: string }) => ({ sub: token.clientId }),
  });
  const callback = provider.callback();
  http.on('request', callback);
  const https: HttpsServer = createHttpsServer(
    { cert: pki.server.cert, key: pki.server.key, ca: pki.ca.cert, requestCert: true, rejectUnauthorized: true },
    callback,
  );
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  const tokenEndpoint = `https://127.0.0.1:${(https.address() as AddressInfo).port}/token`;

  async function issueToken(clientId: 'bound' | 'plain', certificate: Issued, format: 'opaque' | 'jwt' = 'opaque'): Promise<string> {
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      scope: 'read',
      resource: format === 'jwt' ? JWT_RESOURCE : OPAQUE_RESOURCE,
    }).toString();
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        tokenEndpoint,
        {
          method: 'POST',
          ca: pki.ca.cert,
          cert: certificate.cert,
          key: certificate.key,
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    if (answer.status !== 200) throw new Error(`token endpoint answered ${answer.status}: ${answer.text}`);
    return (JSON.parse(answer.text) as { access_token: string }).access_token;
  }

  return {
    issuer,
    issueToken,
    jwtAudience: JWT_RESOURCE,
    async stop() {
      for (const server of [http, https]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
