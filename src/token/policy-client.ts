/**
 * A token policy's client at its authorization server: the server's metadata (discovered, or
 * given), and the openid-client configuration built on it, with the client's authentication, the
 * policy's bounded fetch and timeout, and the checks of signed introspection answers; with
 * `clientAuthMethod: 'bearer'`, the source of the gateway's own token too.
 *
 * @module
 */
import type { JWTVerifyGetKey } from 'jose';
import * as client from 'openid-client';
import type { Configuration, ServerMetadata } from 'openid-client';
import type { boundedFetch } from './bounded-fetch.js';
import { BearerTokenSource, credentialsAuth, type CredentialsAuthMethod } from './client-auth.js';
import type { TokenPolicyOptions } from './policy-options.js';
import type { TokenPolicySettings } from './policy-settings.js';
import { resolveMetadata, type ExplicitEndpoints } from './server-metadata.js';
import { introspectionAlgorithms, signedIntrospectionFetch } from './signed-introspection.js';

/** The metadata resolved, the configuration built on it, and the gateway's bearer token source if any. */
export interface PolicyClient {
  config: Configuration;
  /** The server's `issuer`, as its metadata says. */
  issuer: string;
  bearer: BearerTokenSource | undefined;
}

/** What resolving a policy's client needs of the policy. */
export interface PolicyClientOptions {
  settings: TokenPolicySettings;
  /** The policy's options: its client's credentials, and the issuer or metadata as given. */
  options: Readonly<TokenPolicyOptions>;
  /** The policy's fetch, its answers bounded in size. */
  fetch: ReturnType<typeof boundedFetch>;
  /** Runs the discovery as a call to the authorization server (timed, traced). */
  discovery: <T>(run: () => Promise<T>) => Promise<T>;
  /** The policy's key getter over the server's JWKS, for signed introspection answers. */
  keys: (config: Configuration) => JWTVerifyGetKey;
}

/** Resolves the server's metadata and builds the policy's client on it. */
export async function resolvePolicyClient({ settings, options, fetch, discovery, keys }: PolicyClientOptions): Promise<PolicyClient> {
  const { name, introspection, signedIntrospection: signed, authMethod, bearerAuth, insecure, timeoutMs } = settings;
  const needs: Array<keyof ExplicitEndpoints> = [];
  if (introspection) needs.push('introspection_endpoint');
  if (settings.jwtValidation || signed !== undefined) needs.push('jwks_uri');
  if (settings.userInfo) needs.push('userinfo_endpoint');
  if (authMethod === 'bearer' && introspection) needs.push('token_endpoint');
  let algorithms: string[] = [];
  const metadata = await discovery(async () => {
    const found = await resolveMetadata({
      realm: name,
      issuer: settings.issuerUrl,
      issuerId: String(options.issuer ?? options.metadata?.issuer),
      given: options.metadata as ServerMetadata | undefined,
      explicit: settings.explicit,
      needs,
      fetch,
      timeout: timeoutMs / 1000,
      insecure,
    });
    // Metadata that allows no algorithm the gateway accepts fails as discovery does (the server is unusable as it says).
    if (signed !== undefined)
      algorithms = introspectionAlgorithms(signed.algorithms, found.introspection_signing_alg_values_supported, name);
    return found;
  });
  const clientMetadata = options.clientSecret !== undefined ? { client_secret: options.clientSecret } : {};
  /** A configuration; `introspects`: the one of the introspection calls (signed answers asked and verified there). */
  const configure = (auth: client.ClientAuth, introspects = true): Configuration => {
    const config = new client.Configuration(metadata, settings.clientId, clientMetadata, auth);
    config[client.customFetch] =
      signed === undefined || !introspects
        ? fetch
        : signedIntrospectionFetch(fetch, {
            realm: name,
            endpoint: new URL(metadata.introspection_endpoint!).href,
            issuer: metadata.issuer,
            clientId: settings.clientId,
            algorithms,
            maxAgeSeconds: signed.maxAgeSeconds,
            clockSkew: settings.clockSkew,
            keys: () => keys(config),
          });
    if (insecure) client.allowInsecureRequests(config);
    // openid-client counts in seconds; our options, like the configuration file, in milliseconds.
    config.timeout = timeoutMs / 1000;
    return config;
  };
  if (bearerAuth === undefined) {
    return {
      config: configure(credentialsAuth(authMethod as CredentialsAuthMethod, options.clientSecret, options.privateKey)),
      issuer: metadata.issuer,
      bearer: undefined,
    };
  }
  const bearer = new BearerTokenSource(
    configure(credentialsAuth(bearerAuth.method, options.clientSecret, options.privateKey), false),
    bearerAuth.scope,
    name,
  );
  return { config: configure(bearer.auth()), issuer: metadata.issuer, bearer };
}
