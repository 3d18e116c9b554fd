/**
 * The configuration file's top-level settings of the listener the clients reach: `trustProxy`
 * (whose forwarded headers are believed), `publicBaseUrl` (the origin clients use) and
 * `clientCertificateHeader` (where a TLS-terminating proxy puts the client's certificate).
 *
 * @module
 */
import { Type } from '@sinclair/typebox';
import proxyAddr from 'proxy-addr';
import type { RuleIssue } from '../issues.js';
import { NonEmptyString } from '../schema.js';

/** Header names a proxy cannot use for the client certificate: the gateway reads or writes them for other ends. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'cookie',
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'dpop',
]);

/** `trustProxy`: Express's `trust proxy` values a JSON file can hold. */
export const TrustProxySchema = Type.Union(
  [Type.Boolean(), Type.Integer({ minimum: 0 }), NonEmptyString(), Type.Array(NonEmptyString(), { minItems: 1 })],
  {
    description:
      'Whose `X-Forwarded-*`, `Forwarded` and client certificate headers are believed: `true`, `false` (the default), a hop count, or addresses and subnets (`"loopback"`, `"10.0.0.0/8"`, a comma-separated list or an array).',
    errorMessage: 'must be a boolean, a hop count, or addresses and subnets (a string or an array of strings)',
  },
);

/** `publicBaseUrl`: the origin clients use. */
export const PublicBaseUrlSchema = Type.String({
  pattern: '^[hH][tT][tT][pP][sS]?://[^/?#\\s@]+(/[^?#\\s]*)?$',
  description:
    'The origin (and path prefix, if any) clients reach the gateway at, such as `https://api.example.org`: DPoP proofs are checked against it, protected resource metadata is named from it.',
  errorMessage: 'must be an http(s) URL without query or fragment',
});

/** `clientCertificateHeader`: a header name. */
export const ClientCertificateHeaderSchema = Type.String({
  pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
  description:
    'The header in which a TLS-terminating proxy sends the client certificate, URL-encoded PEM (nginx `$ssl_client_escaped_cert`), such as `X-SSL-Client-Cert`: read only from peers `trustProxy` trusts, never relayed.',
  errorMessage: 'must be a header name such as X-SSL-Client-Cert',
});

/** The problems of the listener's settings that the schema cannot see (addresses that do not parse, a reserved header). */
export function listenerRules(input: Readonly<Record<string, unknown>>, issues: RuleIssue[]): void {
  const trust = input.trustProxy;
  const list = typeof trust === 'string' ? trust.split(',').map((item) => item.trim()) : Array.isArray(trust) ? trust : undefined;
  if (list !== undefined && list.every((item) => typeof item === 'string')) {
    try {
      if (list.some((item) => item === '')) throw new Error('an empty address');
      proxyAddr.compile(list as string[]);
    } catch (err) {
      issues.push({ path: 'trustProxy', message: `has an invalid address: ${(err as Error).message}` });
    }
  }
  const header = input.clientCertificateHeader;
  if (typeof header === 'string' && RESERVED_HEADERS.has(header.toLowerCase()))
    issues.push({ path: 'clientCertificateHeader', message: `cannot be ${header}: the gateway reads or writes it for another purpose` });
  // Everyone, or a hop count, trusts whoever connects: any client could name any certificate.
  if (typeof header === 'string' && (trust === true || typeof trust === 'number'))
    issues.push({
      path: 'trustProxy',
      message:
        "must list the proxies (addresses or subnets) with clientCertificateHeader: true or a hop count would believe any client's certificate header",
    });
}
