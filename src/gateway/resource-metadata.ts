/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of the APIs that opt in
 * (`protectedResourceMetadata: true`): the document, built once per configuration load, and where
 * it is served, `/.well-known/oauth-protected-resource<basePath>/<provider>/<name>/v<version>`
 * (RFC 9728 section 3.1: the well-known segment inserted between the host and the path of the
 * resource identifier). The request path answers it before any API routing; the 401 challenges of
 * the API name its URL (`resource_metadata`, section 5.1).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from '../config/errors.js';
import type { ResolvedApi } from '../config/types.js';
import { gatewayContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { setIdentityHead } from '../exchange/head.js';
import { apiKey } from '../record/types.js';
import { ALL_METHODS } from '../token/extract.js';
import type { TokenPolicy } from '../token/policy.js';
import type { TokenPolicyOptions } from '../token/policy-options.js';
import { parseInvocation } from './routing.js';

/** The well-known URI suffix of RFC 9728 section 3. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** One API's metadata, ready to serve. */
export interface ResourceMetadata {
  /** The metadata's URL (`resource_metadata` of the challenges). */
  readonly url: string;
  /** The document, as sent (JSON). */
  readonly body: string;
}

/** The fields of RFC 9728 section 2 that come from the token policy's sender constraints. */
function senderConstraintFields(facts: TokenPolicy): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (facts.dpop === 'allowed' || facts.dpop === 'required') {
    if (facts.dpopSigningAlgs !== undefined) fields['dpop_signing_alg_values_supported'] = [...facts.dpopSigningAlgs];
    fields['dpop_bound_access_tokens_required'] = facts.dpop === 'required';
  }
  if (facts.certificateBoundTokens === 'enforce') fields['tls_client_certificate_bound_access_tokens'] = true;
  return fields;
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
 * resource identifier is it, then the base path and the API's prefix.
 *
 * @throws ConfigError (at `apis[i].protectedResourceMetadata`) without a `publicBaseUrl`.
 */
export function resourceMetadata(
  api: ResolvedApi,
  at: string,
  token: { policy: TokenPolicy; options: TokenPolicyOptions },
  publicBaseUrl: string | undefined,
  basePath: string,
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
  const prefix = base.pathname.replace(/\/+$/, '');
  const path = `${prefix}${basePath === '/' ? '' : basePath}/${api.provider}/${api.name}/v${api.version}`;
  const { options, policy } = token;
  const scopes = scopesOf(api);
  const document: Record<string, unknown> = {
    resource: `${base.origin}${path}`,
    authorization_servers: [String(options.issuer ?? options.metadata?.issuer)],
    ...(scopes.length === 0 ? {} : { scopes_supported: scopes }),
    // What the gateway's token extraction accepts (RFC 6750 section 2).
    bearer_methods_supported: [...ALL_METHODS],
    ...senderConstraintFields(policy),
  };
  return { url: `${base.origin}${RESOURCE_METADATA_PATH}${path}`, body: JSON.stringify(document) };
}

/** The APIs the answer reads: the compiled configuration's, by their key (`apiKey`). */
interface ApisWithMetadata {
  readonly apis: ReadonlyMap<string, { readonly metadata?: ResourceMetadata | undefined }>;
}

/**
 * Answers the protected resource metadata of the API a path names (RFC 9728), from the gateway
 * itself (never relayed): 200 JSON for an API that opts in, else the error given to `next`
 * (404 problem+json). `prefix` is where the metadata paths start (up to the `/` before the
 * provider); `req.url` is the canonical path.
 */
export function metadataAnswer(
  prefix: string,
  server: string | undefined,
): (runtime: ApisWithMetadata, req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
  return (runtime, req, res, next) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const named = path.slice(prefix.length - 1);
    const parsed = parseInvocation(named);
    // Exactly `/<provider>/<name>/v<version>`: nothing after the version.
    const compiled =
      parsed === undefined || parsed.prefix !== named
        ? undefined
        : runtime.apis.get(apiKey({ provider: parsed.provider, name: parsed.api, version: parsed.version }));
    const metadata = compiled?.metadata;
    if (metadata === undefined) {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `no protected resource metadata at ${path}` }));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(new GatewayError('ERR_API_NOT_FOUND', { diagnostic: `the protected resource metadata at ${path} answers GET and HEAD only` }));
      return;
    }
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Content-Length', Buffer.byteLength(metadata.body));
    setIdentityHead(res, gatewayContext(req), 200, server);
    res.end(req.method === 'HEAD' ? undefined : metadata.body);
  };
}
