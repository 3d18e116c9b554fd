/**
 * The authorization server's metadata a token policy works with: discovered (OpenID Connect
 * discovery, then RFC 8414 authorization server metadata when that fails or lacks an endpoint the
 * policy needs), with the endpoints the policy names explicitly merged over it. A server may
 * publish no `introspection_endpoint` (it is optional) or serve its document where the discovery
 * rules do not look: explicit endpoints complete discovery, they do not turn it off.
 *
 * @module
 */
import * as client from 'openid-client';
import type { ServerMetadata } from 'openid-client';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { classifyClientError } from './classify.js';

const log = logger('token');

/** Endpoints a policy may give explicitly (RFC 8414 names). */
export interface ExplicitEndpoints {
  introspection_endpoint?: string;
  jwks_uri?: string;
  userinfo_endpoint?: string;
  token_endpoint?: string;
}

/** What {@link resolveMetadata} needs. */
export interface MetadataSettings {
  /** Realm of the errors. */
  realm: string;
  /** The issuer: where discovery looks, and what the discovered `issuer` must equal. */
  issuer: URL;
  /** The issuer identifier as configured (the metadata's `issuer` when explicit endpoints are used alone). */
  issuerId: string;
  /** Metadata given as a whole instead of discovered (no discovery then). */
  given: ServerMetadata | undefined;
  /** Endpoints given explicitly, merged over whatever metadata is found. */
  explicit: ExplicitEndpoints;
  /** The endpoints the policy's switches use. */
  needs: ReadonlyArray<keyof ExplicitEndpoints>;
  /** Discovery's fetch (bounded), timeout in seconds, `http://` allowed. */
  fetch: client.CustomFetch;
  timeout: number;
  insecure: boolean;
}

/** The first endpoint of `needs` that `metadata` lacks. */
function missing(metadata: Partial<ServerMetadata>, needs: MetadataSettings['needs']): keyof ExplicitEndpoints | undefined {
  return needs.find((name) => typeof metadata[name] !== 'string');
}

/** Whether a discovery failure means the server did not answer at all (no point asking it again at another URL). */
function silent(err: unknown): boolean {
  if (err instanceof TypeError) return true; // fetch failed: refused, reset, DNS
  return err instanceof client.ClientError && (err.code === 'OAUTH_TIMEOUT' || err.code === 'OAUTH_ABORT');
}

/** One discovery attempt: the metadata, or the classified failure (`silent` when the server did not answer). */
async function discover(
  settings: MetadataSettings,
  algorithm: 'oidc' | 'oauth2',
): Promise<ServerMetadata | (GatewayError & { silent?: boolean })> {
  try {
    const config = await client.discovery(settings.issuer, 'metadata', undefined, client.None(), {
      algorithm,
      timeout: settings.timeout,
      [client.customFetch]: settings.fetch,
      ...(settings.insecure ? { execute: [client.allowInsecureRequests] } : {}),
    });
    return config.serverMetadata();
  } catch (err) {
    return Object.assign(classifyClientError(err, settings.realm, 'discovery'), { silent: silent(err) });
  }
}

/**
 * The metadata to use: given metadata, else OpenID Connect discovery, else (failed, or lacking a
 * needed endpoint not given explicitly) RFC 8414 metadata, the two merged when both answer; the
 * explicit endpoints over all of it. When discovery fails altogether but the explicit endpoints
 * cover every need, they are used alone. Rejects with a 503 `GatewayError` that says what is
 * missing or why discovery failed.
 */
export async function resolveMetadata(settings: MetadataSettings): Promise<ServerMetadata> {
  const { explicit, needs, realm } = settings;
  let found: ServerMetadata | undefined = settings.given;
  let failure: GatewayError | undefined;
  if (found === undefined) {
    const oidc = await discover(settings, 'oidc');
    if (oidc instanceof GatewayError) failure = oidc;
    else found = oidc;
    // RFC 8414 next, unless the server did not answer at all (a timeout would only double).
    const answered = !(oidc instanceof GatewayError && oidc.silent === true);
    if (answered && (found === undefined || missing({ ...found, ...explicit }, needs) !== undefined)) {
      const oauth = await discover(settings, 'oauth2');
      if (!(oauth instanceof GatewayError)) {
        // OpenID Connect's document wins where both say something; RFC 8414's fills its gaps.
        found = { ...oauth, ...found };
        failure = undefined;
      } else if (failure !== undefined) {
        failure = new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
          realm,
          diagnostic: `${failure.diagnostic ?? 'discovery failed'}; RFC 8414 metadata: ${(oauth.diagnostic ?? 'failed').replace(/^discovery: /, '')}`,
          cause: failure.cause,
        });
      }
    }
  }
  const metadata: ServerMetadata = { ...(found ?? { issuer: settings.issuerId }), ...explicit };
  const lacking = missing(metadata, needs);
  if (lacking === undefined) {
    if (failure !== undefined) log('policy %s: discovery failed (%s); using the explicit endpoints', realm, failure.diagnostic);
    else log('policy %s: metadata of %s%s', realm, metadata.issuer, Object.keys(explicit).length > 0 ? ', explicit endpoints merged' : '');
    return metadata;
  }
  if (failure !== undefined) throw failure;
  throw new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
    realm,
    diagnostic: `discovery: the authorization server's metadata has no ${lacking} (give it explicitly in the token policy)`,
  });
}
