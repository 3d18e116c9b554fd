/**
 * The token-policy keys of the configuration file added by issue 14 (metadata completion, client
 * authentication by bearer token, cache bounds, negative cache, call bound, throttle, stale on
 * error): validated with their path, and passed to the token policy `createGateway` builds.
 */
import { expect } from 'chai';
import { tokenPolicyOptionsFor } from '../../src/gateway/compile.js';
import { ConfigError } from '../../src/config/errors.js';
import { resolveConfig } from '../../src/config/validate.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { createTokenPolicy } from '../../src/token/policy.js';

function document(policy: Record<string, unknown>): GatewayConfig {
  return {
    tokenPolicies: { idp: { issuer: 'http://127.0.0.1:9000', clientId: 'gateway', clientSecret: 'gateway-secret', ...policy } },
    apis: [
      {
        provider: 'Ente',
        name: 'PetStore',
        version: 1,
        backend: { url: 'http://127.0.0.1:9001' },
        tokenManagement: { enabled: true, policy: 'idp' },
      },
    ],
  } as unknown as GatewayConfig;
}

async function issuesOf(policy: Record<string, unknown>): Promise<string[]> {
  const error = await resolveConfig(document(policy)).catch((e: unknown) => e);
  expect(error).to.be.instanceOf(ConfigError);
  return (error as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
}

describe('configuration: token-policy keys of issue 14', () => {
  const keys = {
    introspectionEndpoint: 'http://127.0.0.1:9000/oauth/introspect',
    tokenEndpoint: 'http://127.0.0.1:9000/oauth/token',
    clientAuthMethod: 'bearer',
    bearer: { scope: 'introspection', clientAuthMethod: 'client_secret_post' },
    cacheMaxEntries: 500,
    cacheMaxBytes: 1_000_000,
    negativeCacheTtlSeconds: 10,
    negativeCacheMaxEntries: 100,
    maxConcurrentCalls: 8,
    invalidTokenThrottle: { maxRefusals: 5, windowSeconds: 30 },
    staleIfErrorSeconds: 120,
  };

  it('are kept, passed to the token policy, and the policy accepts them; explicit endpoints keep discovery', async () => {
    const config = await resolveConfig(document(keys));
    const api = config.apis[0]!;
    const [, options] = tokenPolicyOptionsFor(config.tokenPolicies['idp']!, api as typeof api & { tokenManagement: { enabled: true } });
    expect(options).to.deep.include({
      issuer: 'http://127.0.0.1:9000',
      introspectionEndpoint: keys.introspectionEndpoint,
      tokenEndpoint: keys.tokenEndpoint,
      clientAuthMethod: 'bearer',
      bearer: keys.bearer,
      cache: { ttlSeconds: 300, maxEntries: 500, maxBytes: 1_000_000 },
      negativeCache: { ttlSeconds: 10, maxEntries: 100 },
      maxConcurrentCalls: 8,
      invalidTokenThrottle: { maxRefusals: 5, windowSeconds: 30 },
      staleIfErrorSeconds: 120,
    });
    expect(options).to.not.have.property('metadata');
    createTokenPolicy(options).close();
  });

  it('negativeCacheTtlSeconds 0 and invalidTokenThrottle false turn those off', async () => {
    const config = await resolveConfig(document({ negativeCacheTtlSeconds: 0, invalidTokenThrottle: false }));
    const api = config.apis[0]!;
    const [, options] = tokenPolicyOptionsFor(config.tokenPolicies['idp']!, api as typeof api & { tokenManagement: { enabled: true } });
    expect(options).to.deep.include({ negativeCache: false, invalidTokenThrottle: false });
  });

  it('jwksCooldownSeconds (issue 31, key rotation) is passed to the token policy; 0 is refused', async () => {
    const config = await resolveConfig(document({ jwksCooldownSeconds: 5 }));
    const api = config.apis[0]!;
    const [, options] = tokenPolicyOptionsFor(config.tokenPolicies['idp']!, api as typeof api & { tokenManagement: { enabled: true } });
    expect(options).to.deep.include({ jwksCooldownSeconds: 5 });
    expect(await issuesOf({ jwksCooldownSeconds: 0 })).to.deep.equal(['tokenPolicies.idp.jwksCooldownSeconds: must be a positive number']);
  });

  it('refuses bad values, naming them', async () => {
    expect(
      await issuesOf({
        clientAuthMethod: 'private_key_jwt',
        bearer: { scope: 'x' },
        tokenEndpoint: 'ftp://x',
        cacheMaxEntries: 0,
        negativeCacheTtlSeconds: -1,
        invalidTokenThrottle: { maxRefusals: 1.5, burst: 3 },
      }),
    ).to.have.members([
      'tokenPolicies.idp.clientAuthMethod: must be one of client_secret_basic, client_secret_post, bearer',
      'tokenPolicies.idp.tokenEndpoint: must be an http(s) URL',
      'tokenPolicies.idp.bearer: is only used with clientAuthMethod bearer',
      'tokenPolicies.idp.cacheMaxEntries: must be a positive integer',
      'tokenPolicies.idp.negativeCacheTtlSeconds: must be a number of seconds, 0 (off) or more',
      'tokenPolicies.idp.invalidTokenThrottle.burst: unknown field (allowed: maxRefusals, windowSeconds, maxAddresses)',
      'tokenPolicies.idp.invalidTokenThrottle.maxRefusals: must be a positive integer',
    ]);
  });
});
