/**
 * The options of a token policy, checked once: what `createTokenPolicy` and the configuration
 * validator both apply, so that a setting is valid in a file exactly when it is valid in code.
 * Pure: builds nothing, calls nothing.
 *
 * @module
 */
import { isIP } from 'node:net';
import { SharedTokenResults } from '../cluster/shared-token-results.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import type { ClientAuthMethod, CredentialsAuthMethod } from './client-auth.js';
import type { TokenPolicyOptions } from './policy.js';
import type { ExplicitEndpoints } from './server-metadata.js';

/** What a token policy works with, its options checked and defaults applied.  @internal */
export interface TokenPolicySettings {
  readonly name: string;
  readonly clientId: string;
  readonly issuerUrl: URL;
  readonly explicit: ExplicitEndpoints;
  readonly authMethod: ClientAuthMethod;
  /** How the gateway gets its own bearer token (with `clientAuthMethod: 'bearer'`). */
  readonly bearerAuth: { scope: string | undefined; method: CredentialsAuthMethod } | undefined;
  readonly introspection: boolean;
  readonly jwtValidation: boolean;
  readonly userInfo: boolean;
  readonly algorithms: readonly string[];
  readonly audience: readonly string[];
  /** Accepted `typ` values, normalized (see {@link normalizeTyp}). */
  readonly jwtTypes: ReadonlySet<string> | undefined;
  readonly maxResponseSize: number;
  readonly insecure: boolean;
  readonly staleIfErrorSeconds: number;
  /** The valid-result cache, `undefined` when off. */
  readonly cache: { readonly ttlSeconds: number; readonly maxEntries: number; readonly maxBytes: number } | undefined;
  /** The refusal cache, `undefined` when off. */
  readonly negativeCache: { readonly ttlSeconds: number; readonly maxEntries: number } | undefined;
  readonly maxConcurrentCalls: number;
  readonly throttle: { readonly maxRefusals: number; readonly windowSeconds: number; readonly maxAddresses: number } | undefined;
  readonly clockSkew: number;
  readonly timeoutMs: number;
  readonly shared: SharedTokenResults | undefined;
}

const FACTORY = 'createTokenPolicy';
const DEFAULT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'bearer'];
const CREDENTIALS_METHODS: readonly CredentialsAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
const ENDPOINT_OPTIONS = {
  introspectionEndpoint: 'introspection_endpoint',
  jwksUri: 'jwks_uri',
  userinfoEndpoint: 'userinfo_endpoint',
  tokenEndpoint: 'token_endpoint',
} as const;

/** A `typ` as RFC 7515 section 4.1.9 compares it: case-insensitive, `application/` implied.  @internal */
export function normalizeTyp(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/**
 * An http(s) URL with a host. The issuer identifier has no query or fragment (RFC 8414 section 2);
 * an endpoint may have a query, never a fragment (RFC 6749 section 3.1).
 */
function url(check: OptionChecks, value: unknown, path: string, issuer = false): URL {
  let parsed: URL | undefined;
  try {
    if (typeof value === 'string' || value instanceof URL) parsed = new URL(String(value));
  } catch {
    // Reported below.
  }
  if (parsed === undefined || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.hostname === '')
    return check.fail(path, 'must be an http(s) URL');
  if (parsed.hash !== '' || (issuer && parsed.search !== ''))
    return check.fail(path, issuer ? 'must be an http(s) URL without query or fragment' : 'must be an http(s) URL without fragment');
  return parsed;
}

/** An optional section: `undefined` when `false` (off), `{}` when not given (defaults). */
function section<T extends object>(check: OptionChecks, value: unknown, path: string, keys: readonly string[]): Partial<T> | undefined {
  if (value === false) return undefined;
  if (value === undefined) return {};
  return check.known(check.object<Partial<T>>(value, path), path, keys);
}

const TOKEN_POLICY_KEYS = optionKeys<TokenPolicyOptions>({
  name: true,
  issuer: true,
  metadata: true,
  introspectionEndpoint: true,
  jwksUri: true,
  userinfoEndpoint: true,
  tokenEndpoint: true,
  clientId: true,
  clientSecret: true,
  clientAuthMethod: true,
  privateKey: true,
  bearer: true,
  introspection: true,
  jwtValidation: true,
  userInfo: true,
  jwtAlgorithms: true,
  audience: true,
  anyAudience: true,
  jwtTypes: true,
  maxResponseSize: true,
  clockSkew: true,
  timeoutMs: true,
  allowInsecureRequests: true,
  cache: true,
  negativeCache: true,
  maxConcurrentCalls: true,
  invalidTokenThrottle: true,
  staleIfErrorSeconds: true,
  shared: true,
});
const BEARER_KEYS = optionKeys<NonNullable<TokenPolicyOptions['bearer']>>({ scope: true, clientAuthMethod: true });
const CACHE_KEYS = optionKeys<Exclude<TokenPolicyOptions['cache'], false | undefined>>({
  ttlSeconds: true,
  maxEntries: true,
  maxBytes: true,
});
const NEGATIVE_CACHE_KEYS = optionKeys<Exclude<TokenPolicyOptions['negativeCache'], false | undefined>>({
  ttlSeconds: true,
  maxEntries: true,
});
const THROTTLE_KEYS = optionKeys<Exclude<TokenPolicyOptions['invalidTokenThrottle'], false | undefined>>({
  maxRefusals: true,
  windowSeconds: true,
  maxAddresses: true,
});

/**
 * Checks the options of a token policy.
 *
 * @throws InvalidOptionError naming the first bad option (`createTokenPolicy: options.<path> ...`).
 * @internal
 */
export function tokenPolicySettings(options: TokenPolicyOptions): TokenPolicySettings {
  const check = optionChecks(FACTORY);
  check.object(options, '');
  check.known(options, '', TOKEN_POLICY_KEYS);
  const name = check.string(options.name, 'name');
  const clientId = check.string(options.clientId, 'clientId');
  const { issuer, metadata, privateKey } = options;
  if ((issuer === undefined) === (metadata === undefined)) check.fail('issuer', 'or options.metadata: give exactly one of them');
  if (metadata !== undefined) check.object(metadata, 'metadata');
  const issuerUrl = issuer !== undefined ? url(check, issuer, 'issuer', true) : url(check, metadata!.issuer, 'metadata.issuer', true);
  const explicit: ExplicitEndpoints = {};
  for (const [option, field] of Object.entries(ENDPOINT_OPTIONS) as Array<[keyof typeof ENDPOINT_OPTIONS, keyof ExplicitEndpoints]>) {
    if (options[option] !== undefined) explicit[field] = url(check, options[option], option).href;
  }
  const authMethod = check.oneOf(options.clientAuthMethod, 'clientAuthMethod', AUTH_METHODS, 'client_secret_basic');
  let bearerAuth: TokenPolicySettings['bearerAuth'];
  if (authMethod === 'bearer') {
    const bearer = check.known(
      check.object<NonNullable<TokenPolicyOptions['bearer']>>(options.bearer, 'bearer', {}),
      'bearer',
      BEARER_KEYS,
    );
    const scope = bearer.scope === undefined ? undefined : check.string(bearer.scope, 'bearer.scope');
    bearerAuth = {
      scope,
      method: check.oneOf(bearer.clientAuthMethod, 'bearer.clientAuthMethod', CREDENTIALS_METHODS, 'client_secret_basic'),
    };
  } else if (options.bearer !== undefined) {
    check.fail('bearer', 'is only used with clientAuthMethod bearer');
  }
  const credentials = bearerAuth?.method ?? (authMethod as CredentialsAuthMethod);
  if (credentials !== 'private_key_jwt')
    check.string(options.clientSecret, 'clientSecret', undefined, undefined, `a non-empty string (required with ${credentials})`);
  if (credentials === 'private_key_jwt' && (typeof privateKey !== 'object' || privateKey === null))
    check.fail('privateKey', 'is required with private_key_jwt');
  const introspection = check.boolean(options.introspection, 'introspection', true);
  const jwtValidation = check.boolean(options.jwtValidation, 'jwtValidation', false);
  const userInfo = check.boolean(options.userInfo, 'userInfo', false);
  if (!introspection && !jwtValidation && !userInfo)
    check.fail('', 'must switch on at least one of introspection, jwtValidation, userInfo');
  const algorithms = options.jwtAlgorithms ?? DEFAULT_ALGORITHMS;
  if (
    !Array.isArray(algorithms) ||
    algorithms.length === 0 ||
    algorithms.some((a) => typeof a !== 'string' || a === 'none' || /^HS/i.test(a))
  ) {
    check.fail('jwtAlgorithms', 'must be a non-empty array of asymmetric JWS algorithms');
  }
  const audience = options.audience === undefined ? [] : typeof options.audience === 'string' ? [options.audience] : options.audience;
  if (!Array.isArray(audience) || audience.some((a) => typeof a !== 'string' || a === ''))
    check.fail('audience', 'must be a string or an array of strings');
  const anyAudience = check.boolean(options.anyAudience, 'anyAudience', false);
  if (anyAudience && audience.length > 0) check.fail('anyAudience', 'true cannot be given with options.audience');
  if (jwtValidation && audience.length === 0 && !anyAudience) {
    check.fail(
      'jwtValidation',
      'needs options.audience (or options.anyAudience: true to accept a JWT of the issuer meant for any audience)',
    );
  }
  const jwtTypes = options.jwtTypes;
  if (
    jwtTypes !== undefined &&
    (!Array.isArray(jwtTypes) || jwtTypes.length === 0 || jwtTypes.some((t) => typeof t !== 'string' || normalizeTyp(t.trim()) === ''))
  ) {
    check.fail('jwtTypes', 'must be a non-empty array of JWT typ values, such as ["at+jwt"]');
  }
  const maxResponseSize = check.positive(options.maxResponseSize, 'maxResponseSize', 256 * 1024, true);
  const insecure = check.boolean(options.allowInsecureRequests, 'allowInsecureRequests', isLoopback(issuerUrl.hostname));
  if (issuerUrl.protocol === 'http:' && !insecure)
    check.fail('issuer', 'uses http:// on a non-loopback host: use https or set options.allowInsecureRequests');

  const cache = section<Exclude<TokenPolicyOptions['cache'], false | undefined>>(check, options.cache, 'cache', CACHE_KEYS);
  const negative = section<Exclude<TokenPolicyOptions['negativeCache'], false | undefined>>(
    check,
    options.negativeCache,
    'negativeCache',
    NEGATIVE_CACHE_KEYS,
  );
  const throttle = section<Exclude<TokenPolicyOptions['invalidTokenThrottle'], false | undefined>>(
    check,
    options.invalidTokenThrottle,
    'invalidTokenThrottle',
    THROTTLE_KEYS,
  );
  const staleIfErrorSeconds = check.nonNegative(options.staleIfErrorSeconds, 'staleIfErrorSeconds', 0);
  if (staleIfErrorSeconds > 0 && cache === undefined) check.fail('staleIfErrorSeconds', 'needs the cache (options.cache is false)');
  if (options.shared !== undefined && !(options.shared instanceof SharedTokenResults))
    check.fail('shared', 'must be a SharedTokenResults (see GatewayCluster.tokenResults)');
  return {
    name,
    clientId,
    issuerUrl,
    explicit,
    authMethod,
    bearerAuth,
    introspection,
    jwtValidation,
    userInfo,
    algorithms: [...algorithms],
    audience: [...audience],
    jwtTypes: jwtTypes === undefined ? undefined : new Set(jwtTypes.map((t) => normalizeTyp(t.trim()))),
    maxResponseSize,
    insecure,
    staleIfErrorSeconds,
    cache:
      cache === undefined
        ? undefined
        : {
            ttlSeconds: check.positive(cache.ttlSeconds, 'cache.ttlSeconds', 300),
            maxEntries: check.positive(cache.maxEntries, 'cache.maxEntries', 10_000, true),
            maxBytes: check.positive(cache.maxBytes, 'cache.maxBytes', 32 * 1024 * 1024, true),
          },
    negativeCache:
      negative === undefined
        ? undefined
        : {
            ttlSeconds: check.positive(negative.ttlSeconds, 'negativeCache.ttlSeconds', 30),
            maxEntries: check.positive(negative.maxEntries, 'negativeCache.maxEntries', 10_000, true),
          },
    maxConcurrentCalls: check.positive(options.maxConcurrentCalls, 'maxConcurrentCalls', 64, true),
    throttle:
      throttle === undefined
        ? undefined
        : {
            maxRefusals: check.positive(throttle.maxRefusals, 'invalidTokenThrottle.maxRefusals', 20, true),
            windowSeconds: check.positive(throttle.windowSeconds, 'invalidTokenThrottle.windowSeconds', 10),
            maxAddresses: check.positive(throttle.maxAddresses, 'invalidTokenThrottle.maxAddresses', 10_000, true),
          },
    clockSkew: check.nonNegative(options.clockSkew, 'clockSkew', 5),
    timeoutMs: check.positive(options.timeoutMs, 'timeoutMs', 5000),
    shared: options.shared,
  };
}
