/**
 * The options of a token policy, checked once: their schema (`policy-schema.ts`), then the rules
 * beside it that a schema cannot say, what `createTokenPolicy` and the configuration validator both
 * apply, so that a setting is valid in a file exactly when it is valid in code. Pure: builds
 * nothing, calls nothing.
 *
 * @module
 */
import { isIP } from 'node:net';
import { SharedTokenResults } from '../cluster/shared-token-results.js';
import type { RuleIssue } from '../issues.js';
import { optionChecks } from '../options.js';
import { mergeIssues, schemaIssues, withDefaults } from '../schema.js';
import type { ClientAuthMethod, CredentialsAuthMethod } from './client-auth.js';
import type { TokenPolicyOptions } from './policy-options.js';
import {
  BearerOptionsSchema,
  CacheOptionsSchema,
  InvalidTokenThrottleSchema,
  NegativeCacheOptionsSchema,
  SignedIntrospectionSchema,
  TokenPolicyOptionsSchema,
  URL_OPTIONS,
} from './policy-schema.js';
import type { ExplicitEndpoints } from './server-metadata.js';
import type { DpopSettings } from './binding/dpop.js';

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
  readonly certificateBoundTokens: 'enforce' | 'ignore';
  /** The valid-result cache, `undefined` when off. */
  readonly cache: { readonly ttlSeconds: number; readonly maxEntries: number; readonly maxBytes: number } | undefined;
  /** The refusal cache, `undefined` when off. */
  readonly negativeCache: { readonly ttlSeconds: number; readonly maxEntries: number } | undefined;
  readonly maxConcurrentCalls: number;
  readonly throttle: { readonly maxRefusals: number; readonly windowSeconds: number; readonly maxAddresses: number } | undefined;
  readonly clockSkew: number;
  readonly timeoutMs: number;
  /** Least time between two JWKS fetches for unknown keys, milliseconds. */
  readonly jwksCooldownMs: number;
  readonly shared: SharedTokenResults | undefined;
  /** DPoP, `undefined` when `dpop` is `off`. */
  readonly dpop: DpopSettings | undefined;
  /** Signed introspection answers (RFC 9701), `undefined` when off (or introspection is). */
  readonly signedIntrospection: SignedIntrospectionSettings | undefined;
}

/** What signed introspection answers (RFC 9701) are checked against.  @internal */
export interface SignedIntrospectionSettings {
  /** The algorithms given; `undefined`: the server's (`introspection_signing_alg_values_supported`), else the asymmetric ones. */
  readonly algorithms: readonly string[] | undefined;
  /** Oldest answer accepted, seconds since its `iat`. */
  readonly maxAgeSeconds: number;
}

/** Options as a caller may give them: not checked yet, any member may be of any type. */
export type UncheckedTokenPolicyOptions = { readonly [K in keyof TokenPolicyOptions]?: unknown };

const FACTORY = 'createTokenPolicy';
const OPTIONS = TokenPolicyOptionsSchema.properties;
/** Where each explicit endpoint goes in the metadata. */
const ENDPOINT_OPTIONS = {
  introspectionEndpoint: 'introspection_endpoint',
  jwksUri: 'jwks_uri',
  userinfoEndpoint: 'userinfo_endpoint',
  tokenEndpoint: 'token_endpoint',
} as const;

/** The schema's default of an option or a member. */
function defaultOf<T>(schema: { default?: unknown }): T {
  return schema.default as T;
}

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

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * An http(s) URL with a host, or what is wrong with `value`. The issuer identifier has no query or
 * fragment (RFC 8414 section 2); an endpoint may have a query, never a fragment (RFC 6749 section 3.1).
 */
function httpUrl(value: string, issuer: boolean): URL | string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    // Said below.
  }
  if (parsed === undefined || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.hostname === '')
    return 'must be an http(s) URL';
  if (parsed.hash !== '' || (issuer && parsed.search !== ''))
    return issuer ? 'must be an http(s) URL without query or fragment' : 'must be an http(s) URL without fragment';
  return parsed;
}

/** The options with their `URL` objects as text: the schema and the rules read URLs as strings. */
function urlsAsText(options: unknown): unknown {
  if (!isObject(options) || !URL_OPTIONS.some((key) => options[key] instanceof URL)) return options;
  const copy: Record<string, unknown> = { ...options };
  for (const key of URL_OPTIONS) if (copy[key] instanceof URL) copy[key] = (copy[key] as URL).href;
  return copy;
}

/** The issuer and the endpoints: one issuer, http(s) URLs, `http://` only on loopback or when allowed. */
function endpointRules(options: UncheckedTokenPolicyOptions, issues: RuleIssue[]): void {
  const { issuer, metadata } = options;
  if ((issuer === undefined) === (metadata === undefined))
    issues.push({ path: 'issuer', message: 'or options.metadata: give exactly one of them' });
  const [at, given] = issuer !== undefined ? ['issuer', issuer] : ['metadata.issuer', isObject(metadata) ? metadata.issuer : undefined];
  const issuerUrl = typeof given === 'string' ? httpUrl(given, true) : undefined;
  if (typeof issuerUrl === 'string') issues.push({ path: at, message: issuerUrl });
  for (const option of Object.keys(ENDPOINT_OPTIONS) as Array<keyof typeof ENDPOINT_OPTIONS>) {
    const value = options[option];
    const url = typeof value === 'string' ? httpUrl(value, false) : undefined;
    if (typeof url === 'string') issues.push({ path: option, message: url });
  }
  if (issuerUrl instanceof URL && issuerUrl.protocol === 'http:') {
    const allowed = typeof options.allowInsecureRequests === 'boolean' ? options.allowInsecureRequests : isLoopback(issuerUrl.hostname);
    if (!allowed)
      issues.push({ path: 'issuer', message: 'uses http:// on a non-loopback host: use https or set options.allowInsecureRequests' });
  }
}

/** The client authentication: `bearer` only with its method, the secret or the key the method needs. */
function authenticationRules(options: UncheckedTokenPolicyOptions, issues: RuleIssue[]): void {
  const method = options.clientAuthMethod ?? defaultOf(OPTIONS.clientAuthMethod);
  if (method !== 'bearer' && options.bearer !== undefined)
    issues.push({ path: 'bearer', message: 'is only used with clientAuthMethod bearer' });
  const bearerMethod = isObject(options.bearer) ? options.bearer.clientAuthMethod : undefined;
  const credentials = method === 'bearer' ? (bearerMethod ?? defaultOf(BearerOptionsSchema.properties.clientAuthMethod)) : method;
  if (credentials === 'private_key_jwt') {
    if (!isObject(options.privateKey)) issues.push({ path: 'privateKey', message: 'is required with private_key_jwt' });
  } else if (typeof options.clientSecret !== 'string' || options.clientSecret === '') {
    issues.push({ path: 'clientSecret', message: `must be a non-empty string (required with ${String(credentials)})` });
  }
}

/** Whether a JWS algorithm is one no signature of the authorization server may use: `none`, or HMAC (a shared secret). */
function notAsymmetric(algorithm: unknown): boolean {
  return typeof algorithm !== 'string' || algorithm === 'none' || /^HS/i.test(algorithm);
}

/** DPoP: asymmetric proof algorithms, an http(s) `publicBaseUrl` without query or fragment, a replay store. */
function dpopRules(options: UncheckedTokenPolicyOptions, issues: RuleIssue[]): void {
  const algorithms = options.dpopSigningAlgs;
  if (Array.isArray(algorithms) && algorithms.some(notAsymmetric))
    issues.push({ path: 'dpopSigningAlgs', message: 'must be a non-empty array of asymmetric JWS algorithms' });
  const base = options.publicBaseUrl;
  const url = typeof base === 'string' ? httpUrl(base, true) : undefined;
  if (typeof url === 'string') issues.push({ path: 'publicBaseUrl', message: url });
  const replay = options.dpopReplay;
  if (replay !== undefined && (!isObject(replay) || typeof replay.remember !== 'function'))
    issues.push({ path: 'dpopReplay', message: 'must be a DpopReplayStore (an object with remember(jti, ttlMs))' });
}

/** What a validation accepts: one switch on at least, asymmetric algorithms, an audience for JWTs, `typ` values. */
function validationRules(options: UncheckedTokenPolicyOptions, issues: RuleIssue[]): void {
  // A value that is not a boolean is the schema's to refuse: taken as on here, so as not to say more.
  const on = (value: unknown, fallback: boolean): boolean => (value === undefined ? fallback : value !== false);
  const jwtValidation = on(options.jwtValidation, defaultOf(OPTIONS.jwtValidation));
  if (!on(options.introspection, defaultOf(OPTIONS.introspection)) && !jwtValidation && !on(options.userInfo, defaultOf(OPTIONS.userInfo)))
    issues.push({ path: '', message: 'must switch on at least one of introspection, jwtValidation, userInfo' });
  const algorithms = options.jwtAlgorithms;
  if (Array.isArray(algorithms) && algorithms.some(notAsymmetric))
    issues.push({ path: 'jwtAlgorithms', message: 'must be a non-empty array of asymmetric JWS algorithms' });
  const signed = options.signedIntrospection;
  const signedAlgorithms = isObject(signed) ? signed.algorithms : undefined;
  if (Array.isArray(signedAlgorithms) && signedAlgorithms.some(notAsymmetric))
    issues.push({ path: 'signedIntrospection.algorithms', message: 'must be a non-empty array of asymmetric JWS algorithms' });
  const { audience } = options;
  const hasAudience = audience !== undefined && !(Array.isArray(audience) && audience.length === 0);
  if (options.anyAudience === true && hasAudience)
    issues.push({ path: 'anyAudience', message: 'true cannot be given with options.audience' });
  if (jwtValidation && !hasAudience && options.anyAudience !== true) {
    issues.push({
      path: 'jwtValidation',
      message: 'needs options.audience (or options.anyAudience: true to accept a JWT of the issuer meant for any audience)',
    });
  }
  const types = options.jwtTypes;
  if (Array.isArray(types) && types.some((t) => typeof t !== 'string' || normalizeTyp(t.trim()) === ''))
    issues.push({ path: 'jwtTypes', message: 'must be a non-empty array of JWT typ values, such as ["at+jwt"]' });
}

/**
 * The rules beside the schema, every problem at once. The values may be of any type: one the
 * schema refuses is left to it (a rule reads only what it can).  @internal
 */
export function tokenPolicyRuleIssues(options: UncheckedTokenPolicyOptions): RuleIssue[] {
  const issues: RuleIssue[] = [];
  endpointRules(options, issues);
  authenticationRules(options, issues);
  validationRules(options, issues);
  dpopRules(options, issues);
  const stale = options.staleIfErrorSeconds;
  if (typeof stale === 'number' && stale > 0 && options.cache === false)
    issues.push({ path: 'staleIfErrorSeconds', message: 'needs the cache (options.cache is false)' });
  if (options.shared !== undefined && !(options.shared instanceof SharedTokenResults))
    issues.push({ path: 'shared', message: 'must be a SharedTokenResults (see GatewayCluster.tokenResults)' });
  return issues;
}

/**
 * Every problem of the options of a token policy, paths below `options`: the schema's, then the
 * rules' (and DPoP's `publicBaseUrl`, which a file's policy gets from the gateway).  @internal
 */
export function tokenPolicyOptionIssues(options: unknown): RuleIssue[] {
  const given = urlsAsText(options);
  const fromSchema = schemaIssues(TokenPolicyOptionsSchema, given, '', 'option');
  if (!isObject(given)) return fromSchema;
  const rules = tokenPolicyRuleIssues(given);
  const dpop = given.dpop;
  if ((dpop === 'allowed' || dpop === 'required') && given.publicBaseUrl === undefined)
    rules.push({ path: 'publicBaseUrl', message: `is required with dpop '${dpop}' (the origin clients call, for the proofs' htu)` });
  return mergeIssues(fromSchema, rules);
}

/**
 * Checks the options of a token policy and applies their defaults (the schema's).
 *
 * @throws InvalidOptionError naming every bad option (`createTokenPolicy: options.<path> ...; options.<path> ...`).
 * @internal
 */
export function tokenPolicySettings(options: TokenPolicyOptions): TokenPolicySettings {
  optionChecks(FACTORY).failAll(tokenPolicyOptionIssues(options));
  const issuerUrl = new URL(String(options.issuer ?? options.metadata!.issuer));
  const explicit: ExplicitEndpoints = {};
  for (const [option, field] of Object.entries(ENDPOINT_OPTIONS) as Array<[keyof typeof ENDPOINT_OPTIONS, keyof ExplicitEndpoints]>) {
    if (options[option] !== undefined) explicit[field] = new URL(String(options[option])).href;
  }
  const authMethod = options.clientAuthMethod ?? defaultOf<ClientAuthMethod>(OPTIONS.clientAuthMethod);
  const bearer = authMethod === 'bearer' ? withDefaults(BearerOptionsSchema, options.bearer) : undefined;
  const audience = options.audience ?? [];
  const cache = options.cache === false ? undefined : withDefaults(CacheOptionsSchema, options.cache);
  const negativeCache = options.negativeCache === false ? undefined : withDefaults(NegativeCacheOptionsSchema, options.negativeCache);
  const { invalidTokenThrottle } = options;
  return {
    name: options.name,
    clientId: options.clientId,
    issuerUrl,
    explicit,
    authMethod,
    bearerAuth: bearer === undefined ? undefined : { scope: bearer.scope, method: bearer.clientAuthMethod },
    introspection: options.introspection ?? defaultOf(OPTIONS.introspection),
    jwtValidation: options.jwtValidation ?? defaultOf(OPTIONS.jwtValidation),
    userInfo: options.userInfo ?? defaultOf(OPTIONS.userInfo),
    algorithms: [...(options.jwtAlgorithms ?? defaultOf<string[]>(OPTIONS.jwtAlgorithms))],
    audience: typeof audience === 'string' ? [audience] : [...audience],
    jwtTypes: options.jwtTypes === undefined ? undefined : new Set(options.jwtTypes.map((t) => normalizeTyp(t.trim()))),
    maxResponseSize: options.maxResponseSize ?? defaultOf(OPTIONS.maxResponseSize),
    insecure: options.allowInsecureRequests ?? isLoopback(issuerUrl.hostname),
    staleIfErrorSeconds: options.staleIfErrorSeconds ?? defaultOf(OPTIONS.staleIfErrorSeconds),
    certificateBoundTokens: options.certificateBoundTokens ?? defaultOf(OPTIONS.certificateBoundTokens),
    cache,
    negativeCache,
    maxConcurrentCalls: options.maxConcurrentCalls ?? defaultOf(OPTIONS.maxConcurrentCalls),
    throttle: invalidTokenThrottle === false ? undefined : withDefaults(InvalidTokenThrottleSchema, invalidTokenThrottle),
    clockSkew: options.clockSkew ?? defaultOf(OPTIONS.clockSkew),
    timeoutMs: options.timeoutMs ?? defaultOf(OPTIONS.timeoutMs),
    jwksCooldownMs: (options.jwksCooldownSeconds ?? defaultOf<number>(OPTIONS.jwksCooldownSeconds)) * 1000,
    shared: options.shared,
    dpop: dpopSettingsOf(options),
    signedIntrospection: signedIntrospectionOf(options),
  };
}

/** The settings of signed introspection answers, `undefined` when off or when introspection is. */
function signedIntrospectionOf(options: TokenPolicyOptions): SignedIntrospectionSettings | undefined {
  const given = options.signedIntrospection ?? defaultOf<boolean>(OPTIONS.signedIntrospection);
  if (given === false || options.introspection === false) return undefined;
  const members = given === true ? {} : given;
  return {
    algorithms: members.algorithms === undefined ? undefined : [...members.algorithms],
    maxAgeSeconds: members.maxAgeSeconds ?? defaultOf<number>(SignedIntrospectionSchema.properties.maxAgeSeconds),
  };
}

/** The DPoP settings of checked options; `dpop` on without `publicBaseUrl` is refused here (the file's policies get it from the gateway). */
function dpopSettingsOf(options: TokenPolicyOptions): DpopSettings | undefined {
  const mode = options.dpop ?? defaultOf<'off'>(OPTIONS.dpop);
  if (mode === 'off') return undefined;
  return {
    mode,
    algorithms: [...(options.dpopSigningAlgs ?? defaultOf<string[]>(OPTIONS.dpopSigningAlgs))],
    maxAgeSeconds: options.dpopProofMaxAgeSeconds ?? defaultOf(OPTIONS.dpopProofMaxAgeSeconds),
    maxProofsPerKey: options.dpopMaxProofsPerKey ?? defaultOf(OPTIONS.dpopMaxProofsPerKey),
    nonce: options.dpopNonce ?? defaultOf(OPTIONS.dpopNonce),
    publicBaseUrl: new URL(String(options.publicBaseUrl)),
    replay: options.dpopReplay,
  };
}
