/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of the APIs that opt in
 * (`protectedResourceMetadata: true`): the document, built once per configuration load but for its
 * `resource`, and where it is served, `/.well-known/oauth-protected-resource<basePath>/<provider>/<name>/v<version>[/<path>]`
 * (RFC 9728 section 3.1: the well-known segment inserted between the host and the path of the
 * resource identifier). Every URL under the API has its own document, whose `resource` is that URL
 * without its query: a client that learnt the metadata's URL from a challenge keeps the document
 * only when `resource` is identical to the URL it requested (section 3.3). The request path
 * answers it before any API routing; the challenges of the API's requests name the document of the
 * URL requested (`resource_metadata`, section 5.1): every 401, and the 400 of a request without
 * any token (the client's first step of section 5).
 *
 * `tls_client_certificate_bound_access_tokens` is advertised, when the token policy enforces
 * certificate-bound tokens, only to a request whose listener can see client certificates: one of a
 * TLS server that asks clients for a certificate (`serveGateway`'s `tls.clientCa`, or a host's own
 * `requestCert` server), or one from a proxy `trustProxy` trusts when `clientCertificateHeader`
 * names where it puts them. Elsewhere a bound token could never be accepted.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ConfigError } from '../config/errors.js';
import type { ResolvedApi } from '../config/types.js';
import { gatewayContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { setIdentityHead } from '../exchange/head.js';
import { apiKey } from '../record/types.js';
import { ALL_METHODS } from '../token/extract.js';
import type { TokenPolicy } from '../token/policy.js';
import type { TokenPolicyOptions } from '../token/policy-options.js';
import type { TrustFunction } from '../trust-proxy.js';
import { parseInvocation } from './routing.js';

/** The well-known URI suffix of RFC 9728 section 3. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** One API's metadata, ready to serve for any URL under it. */
export interface ResourceMetadata {
  /** The API's own metadata URL (its prefix's). */
  readonly url: string;
  /**
   * What a URL's path below the base path (`/<provider>/<name>/v<version>…`) is appended to: the
   * origin of `publicBaseUrl`, its path prefix and the base path.
   */
  readonly resourceBase: string;
  /** The same for the metadata's URL: the origin, the well-known segment, the prefix and the base path. */
  readonly metadataBase: string;
  /** The document's members after `resource`, as JSON (`,` first), for a listener that cannot see client certificates. */
  readonly members: string;
  /** The same where it can (`tls_client_certificate_bound_access_tokens` added), when the token policy enforces bound tokens. */
  readonly certificateMembers: string | undefined;
  /** Whether a request's listener can see client certificates. */
  readonly seesCertificates: (req: IncomingMessage) => boolean;
}

/** How the API listener can see client certificates: a trusted proxy's header, besides its own TLS. */
export interface CertificateSight {
  /** `clientCertificateHeader`: where a TLS-terminating proxy puts the client's certificate. */
  readonly header: string | undefined;
  /** Whose headers are believed (`trustProxy`). */
  readonly trust: TrustFunction;
}

/**
 * Whether a TLS socket's server asks clients for a certificate. Node keeps the `requestCert`
 * option on the `tls.Server` it accepted the socket on (`serveGateway` sets it with a client CA).
 */
function asksClientCertificates(req: IncomingMessage): boolean {
  const socket = req.socket as (TLSSocket & { server?: { requestCert?: unknown } }) | null | undefined;
  return socket?.encrypted === true && socket.server?.requestCert === true;
}

/**
 * Whether a request's listener can see its client's certificate, as the token policy's check reads
 * it: from a trusted proxy's header when one is named (the peer is a proxy `trustProxy` trusts),
 * else from the request's own TLS connection.
 */
function certificateSight(sight: CertificateSight): (req: IncomingMessage) => boolean {
  if (sight.header === undefined) return asksClientCertificates;
  const { trust } = sight;
  return (req) => {
    const peer = req.socket?.remoteAddress;
    return (peer !== undefined && trust(peer, 0)) || asksClientCertificates(req);
  };
}

/** The DPoP fields of RFC 9728 section 2, from the token policy's settings. */
function dpopFields(facts: TokenPolicy): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (facts.dpop === 'allowed' || facts.dpop === 'required') {
    if (facts.dpopSigningAlgs !== undefined) fields['dpop_signing_alg_values_supported'] = [...facts.dpopSigningAlgs];
    fields['dpop_bound_access_tokens_required'] = facts.dpop === 'required';
  }
  return fields;
}

/** Members of a JSON object, as the text between its braces. */
function membersOf(object: Record<string, unknown>): string {
  return JSON.stringify(object).slice(1, -1);
}

/** The scopes the API's rules ask for, the API's then its operations', each once (`scopes_supported`). */
function scopesOf(api: ResolvedApi): string[] {
  const scopes = new Set(api.requiredScopes);
  for (const way of api.scopeAlternatives ?? []) for (const scope of way) scopes.add(scope);
  for (const operation of api.operations ?? []) {
    for (const scope of operation.requiredScopes ?? []) scopes.add(scope);
    for (const way of operation.scopeAlternatives ?? []) for (const scope of way) scopes.add(scope);
  }
  return [...scopes];
}

/**
 * Builds an API's metadata. `publicBaseUrl` is the origin (and path prefix) clients use; the
 * API's resource identifier is it, then the base path and the API's prefix, and a URL's under the
 * API is it with the rest of the URL's path. `sight`: how the listener sees client certificates
 * besides its own TLS.
 *
 * @throws ConfigError (at `apis[i].protectedResourceMetadata`) without a `publicBaseUrl`.
 */
export function resourceMetadata(
  api: ResolvedApi,
  at: string,
  token: { policy: TokenPolicy; options: TokenPolicyOptions },
  publicBaseUrl: string | undefined,
  basePath: string,
  sight: CertificateSight,
): ResourceMetadata {
  if (publicBaseUrl === undefined) {
    throw new ConfigError([
      {
        path: `${at}.protectedResourceMetadata`,
        message: "needs publicBaseUrl at the top of the configuration (or createGateway's publicBaseUrl): the resource's URL",
      },
    ]);
  }
  const base = new URL(publicBaseUrl);
  const prefix = `${base.pathname.replace(/\/+$/, '')}${basePath === '/' ? '' : basePath}`;
  const { options, policy } = token;
  const scopes = scopesOf(api);
  const members: Record<string, unknown> = {
    authorization_servers: [String(options.issuer ?? options.metadata?.issuer)],
    ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
    // What the gateway's token extraction accepts (RFC 6750 section 2).
    bearer_methods_supported: [...ALL_METHODS],
    ...dpopFields(policy),
  };
  const metadataBase = `${base.origin}${RESOURCE_METADATA_PATH}${prefix}`;
  return {
    url: `${metadataBase}/${api.provider}/${api.name}/v${api.version}`,
    resourceBase: `${base.origin}${prefix}`,
    metadataBase,
    members: membersOf(members),
    certificateMembers:
      policy.certificateBoundTokens === 'enforce' ? membersOf({ ...members, tls_client_certificate_bound_access_tokens: true }) : undefined,
    seesCertificates: certificateSight(sight),
  };
}

/**
 * The metadata's URL for a request of the API: `path` is the request's canonical path below the
 * base path (`/<provider>/<name>/v<version>…`, a query ignored), whose document's `resource` is
 * the URL requested (RFC 9728 section 3.3).
 */
export function resourceMetadataUrl(metadata: ResourceMetadata, path: string): string {
  const query = path.indexOf('?');
  return `${metadata.metadataBase}${query === -1 ? path : path.slice(0, query)}`;
}

/** The document of the resource at `path` (below the base path, without query), as sent to `req`. */
function documentOf(metadata: ResourceMetadata, path: string, req: IncomingMessage): string {
  const members =
    metadata.certificateMembers !== undefined && metadata.seesCertificates(req) ? metadata.certificateMembers : metadata.members;
  return `{"resource":${JSON.stringify(`${metadata.resourceBase}${path}`)},${members}}`;
}

/** The APIs the answer reads: the compiled configuration's, by their key (`apiKey`). */
interface ApisWithMetadata {
  readonly apis: ReadonlyMap<string, { readonly metadata?: ResourceMetadata | undefined }>;
}

/**
 * Answers the protected resource metadata of the URL a path names (RFC 9728), from the gateway
 * itself (never relayed): 200 JSON for a URL under an API that opts in (the API's own, or any
 * below it), else the error given to `next` (404 problem+json). `prefix` is where the metadata
 * paths start (up to the `/` before the provider); `req.url` is the canonical path.
 */
export function metadataAnswer(
  prefix: string,
  server: string | undefined,
): (runtime: ApisWithMetadata, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
  return (runtime, req, res, next) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const named = path.slice(prefix.length - 1);
    const parsed = parseInvocation(named);
    // `/<provider>/<name>/v<version>`, then any path below it: each URL of the API is a resource.
    const compiled =
      parsed === undefined ? undefined : runtime.apis.get(apiKey({ provider: parsed.provider, name: parsed.api, version: parsed.version }));
    const metadata = compiled?.metadata;
    if (metadata === undefined) {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `no protected resource metadata at ${path}` }));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `the protected resource metadata at ${path} answers GET and HEAD only` }));
      return;
    }
    const body = documentOf(metadata, named, req);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    setIdentityHead(res, gatewayContext(req), 200, server);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
