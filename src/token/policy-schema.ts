/**
 * The schema of a token policy, written once: {@link TokenPolicyOptionsSchema} is every option of
 * `createTokenPolicy`, its type, bounds and default; the configuration file's token policy
 * (`tokenPolicies.<name>`, {@link TokenPolicySchema}) is made of the same member schemas, a few
 * under a key of its own ({@link FLATTENED_FILE_KEYS}). What a schema cannot say (URLs and their
 * schemes, one option given with another) is the token policy's rules (`policy-settings.ts`),
 * which both run after it; the secret's source is the configuration's loader's.
 *
 * @module
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { SharedTokenResults } from '../cluster/shared-token-results.js';
import { NonEmptyString, NonNegativeNumber, OneOf, PositiveInteger, PositiveNumber } from '../schema.js';
import type { DpopReplayStore } from './binding/replay.js';
import type { ClientPrivateKey } from './client-auth.js';
import type { AuthorizationServerMetadata, TokenPolicyOptions } from './policy-options.js';

/** How the gateway authenticates at the introspection endpoint. */
export const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'bearer'] as const;

/** How it authenticates with its own credentials (at the token endpoint, for its bearer token). */
export const CREDENTIALS_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;

/** The client authentications a file can configure (private_key_jwt needs a key object: code only). */
export const FILE_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'bearer'] as const;

/** The prefix of every variable `clientSecretEnv` may name (see `config/validate.ts`). */
export const CLIENT_SECRET_ENV_PREFIX = 'GATEWAY_SECRET_';

/** The JWS algorithms JWT validation accepts unless told otherwise: the asymmetric ones. */
export const DEFAULT_JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/**
 * The options that take an http(s) URL. Code may give a `URL` object, checked as its `href`; the
 * schema says the string, the rules its scheme, host and fragment.
 */
export const URL_OPTIONS = ['issuer', 'introspectionEndpoint', 'jwksUri', 'userinfoEndpoint', 'tokenEndpoint', 'publicBaseUrl'] as const;

/**
 * The DPoP proof algorithms accepted unless told otherwise (docs/sender-constrained-tokens.md,
 * "Switching it on").
 */
export const DEFAULT_DPOP_ALGORITHMS = ['ES256', 'PS256', 'EdDSA'];

const Url = (description: string) => NonEmptyString({ description });

/**
 * An option only code can give (an object JSON cannot hold): the schema lets any value through and
 * says its type, the rules check it. Never in the configuration file.
 */
function CodeOnly<T>(description: string) {
  return Type.Unsafe<T>(Type.Unknown({ description, codeOnly: true }));
}

/** Seconds, where 0 turns a feature off. */
const Seconds = (description: string, defaultValue: number) =>
  NonNegativeNumber({ description, default: defaultValue, errorMessage: 'must be a number of seconds, 0 (off) or more' });

/** `metadata`: the authorization server's metadata (RFC 8414 names), given instead of discovered. */
const MetadataSchema = Type.Unsafe<AuthorizationServerMetadata>(
  Type.Object(
    { issuer: Url('Issuer identifier (checked against `iss`).') },
    { additionalProperties: true, description: 'Authorization server metadata given instead of discovered; code only.' },
  ),
);

/** `bearer`: how the gateway gets its own token, with `clientAuthMethod: 'bearer'`. */
export const BearerOptionsSchema = Type.Object(
  {
    scope: Type.Optional(NonEmptyString({ description: "Scope of the gateway's token, such as `introspection`; none by default." })),
    clientAuthMethod: Type.Optional(
      OneOf(CREDENTIALS_METHODS, { description: 'Authentication at the token endpoint.', default: 'client_secret_basic' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'With `clientAuthMethod: "bearer"`: the scope asked for, and how the gateway authenticates at the token endpoint.',
  },
);

/** `cache`, when given as an object: the valid-result cache. */
export const CacheOptionsSchema = Type.Object(
  {
    ttlSeconds: Type.Optional(
      PositiveNumber({
        description: "Longest time a validated token result is reused, in seconds (never past the token's `exp`).",
        default: 300,
      }),
    ),
    maxEntries: Type.Optional(
      PositiveInteger({ description: 'Most valid token results cached (least recently used evicted).', default: 10_000 }),
    ),
    maxBytes: Type.Optional(
      PositiveInteger({
        description: 'Most estimated bytes of cached token results (least recently used evicted).',
        default: 32 * 1024 * 1024,
      }),
    ),
  },
  { additionalProperties: false },
);

/** `negativeCache`, when given as an object: the refusal cache. */
export const NegativeCacheOptionsSchema = Type.Object(
  {
    ttlSeconds: Type.Optional(
      PositiveNumber({ description: 'How long a refused token is answered again without a call, in seconds.', default: 30 }),
    ),
    maxEntries: Type.Optional(PositiveInteger({ description: 'Most refused tokens remembered.', default: 10_000 })),
  },
  { additionalProperties: false },
);

/** `invalidTokenThrottle` when given as an object. */
export const InvalidTokenThrottleSchema = Type.Object(
  {
    maxRefusals: Type.Optional(PositiveInteger({ description: 'Refused tokens within the window that start the throttle.', default: 20 })),
    windowSeconds: Type.Optional(PositiveNumber({ description: "The window, seconds, from the address's first refusal.", default: 10 })),
    maxAddresses: Type.Optional(PositiveInteger({ description: 'Most addresses remembered.', default: 10_000 })),
  },
  { additionalProperties: false },
);

/** `signedIntrospection`, when given as an object: RFC 9701 JWT introspection answers. */
export const SignedIntrospectionSchema = Type.Object(
  {
    algorithms: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description:
          "JWS algorithms the signed answer may use; never `none` or HMAC. Default: the server's `introspection_signing_alg_values_supported` (its asymmetric ones), else the asymmetric ones.",
        errorMessage: 'must be a non-empty array of asymmetric JWS algorithms',
      }),
    ),
    maxAgeSeconds: Type.Optional(PositiveNumber({ description: 'Oldest signed answer accepted, seconds since its `iat`.', default: 300 })),
  },
  { additionalProperties: false },
);

/** A section that `false` turns off and an object sets (its members default). */
function Section<T extends TSchema>(section: T, description: string, errorMessage: string) {
  return Type.Union([Type.Literal(false), section], { description, errorMessage });
}

/** The options of `createTokenPolicy`. */
export const TokenPolicyOptionsSchema = Type.Object(
  {
    name: NonEmptyString({ description: 'Policy name: the realm of the `WWW-Authenticate` challenges.' }),
    issuer: Type.Optional(Url('Issuer URL; its metadata (`/.well-known/openid-configuration`) gives the endpoints.')),
    metadata: Type.Optional(MetadataSchema),
    introspectionEndpoint: Type.Optional(Url('Introspection endpoint, merged over the discovered metadata.')),
    jwksUri: Type.Optional(Url('JWKS URI for JWT validation, merged over the discovered metadata.')),
    userinfoEndpoint: Type.Optional(Url('UserInfo endpoint, merged over the discovered metadata.')),
    tokenEndpoint: Type.Optional(Url('Token endpoint, for `clientAuthMethod: "bearer"`.')),
    clientId: NonEmptyString({ description: 'Client id the gateway authenticates with at the introspection endpoint.' }),
    clientSecret: Type.Optional(NonEmptyString({ description: 'Its secret.' })),
    clientAuthMethod: Type.Optional(
      OneOf(AUTH_METHODS, { description: 'How the gateway authenticates to the introspection endpoint.', default: 'client_secret_basic' }),
    ),
    privateKey: Type.Optional(CodeOnly<ClientPrivateKey>('Private key of `private_key_jwt`: a `CryptoKey`, or `{ key, kid }`.')),
    bearer: Type.Optional(BearerOptionsSchema),
    introspection: Type.Optional(Type.Boolean({ description: 'Validate by RFC 7662 introspection.', default: true })),
    jwtValidation: Type.Optional(
      Type.Boolean({ description: "Validate the token as a JWT signed by a key of the issuer's JWKS.", default: false }),
    ),
    userInfo: Type.Optional(Type.Boolean({ description: 'Call the UserInfo endpoint with the token.', default: false })),
    jwtAlgorithms: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description: 'JWS algorithms JWT validation accepts; never `none` or HMAC.',
        default: DEFAULT_JWT_ALGORITHMS,
        errorMessage: 'must be a non-empty array of asymmetric JWS algorithms',
      }),
    ),
    audience: Type.Optional(
      Type.Union([NonEmptyString(), Type.Array(NonEmptyString())], {
        description: 'Audience a JWT must carry when JWT validation is on; with introspection, `aud` is checked against it too.',
        errorMessage: 'must be a string or an array of strings',
      }),
    ),
    anyAudience: Type.Optional(
      Type.Boolean({ description: 'Validate JWTs without an `audience`. Cannot be given with `audience`.', default: false }),
    ),
    jwtTypes: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description: 'JWT `typ` values JWT validation accepts, such as `["at+jwt"]`.',
        errorMessage: 'must be a non-empty array of JWT typ values, such as ["at+jwt"]',
      }),
    ),
    maxResponseSize: Type.Optional(
      PositiveInteger({ description: 'Largest discovery, introspection or UserInfo answer read, in bytes.', default: 256 * 1024 }),
    ),
    clockSkew: Type.Optional(NonNegativeNumber({ description: 'Tolerated clock difference for `exp`/`nbf`/`iat`, seconds.', default: 5 })),
    timeoutMs: Type.Optional(
      PositiveNumber({ description: 'Timeout of each call to the authorization server, in milliseconds.', default: 5000 }),
    ),
    allowInsecureRequests: Type.Optional(Type.Boolean({ description: 'Allow `http://` endpoints. Default: only for a loopback issuer.' })),
    cache: Type.Optional(
      Section(
        CacheOptionsSchema,
        'The valid-result cache; `false` turns it off.',
        'must be false or an object { ttlSeconds?, maxEntries?, maxBytes? }',
      ),
    ),
    negativeCache: Type.Optional(
      Section(
        NegativeCacheOptionsSchema,
        'The refusal cache; `false` turns it off.',
        'must be false or an object { ttlSeconds?, maxEntries? }',
      ),
    ),
    maxConcurrentCalls: Type.Optional(
      PositiveInteger({ description: 'Most calls in flight to the authorization server at once.', default: 64 }),
    ),
    invalidTokenThrottle: Type.Optional(
      Section(
        InvalidTokenThrottleSchema,
        'Throttle of invalid tokens per client address; `false` turns it off.',
        'must be false or an object { maxRefusals?, windowSeconds?, maxAddresses? }',
      ),
    ),
    staleIfErrorSeconds: Type.Optional(
      Seconds('Seconds a token valid at its last check may still be served while the server is down; `0` is off.', 0),
    ),
    certificateBoundTokens: Type.Optional(
      OneOf(['enforce', 'ignore'] as const, {
        description:
          'Sender-constrained tokens: `enforce` accepts a token whose `cnf` holds `x5t#S256` only with that client certificate (RFC 8705), one whose `cnf` holds `jkt` only with a DPoP proof of that key (RFC 9449); `ignore` accepts either as a bearer token.',
        default: 'enforce',
      }),
    ),
    signedIntrospection: Type.Optional(
      Type.Union([Type.Boolean(), SignedIntrospectionSchema], {
        description:
          'Ask introspection answers as JWTs signed by the authorization server (RFC 9701) and accept nothing else; `true`, or an object that sets them.',
        default: false,
        errorMessage: 'must be a boolean or an object { algorithms?, maxAgeSeconds? }',
      }),
    ),
    jwksCooldownSeconds: Type.Optional(
      PositiveNumber({
        description:
          'Least time between two fetches of the JWKS for JWTs signed with a key it does not hold, in seconds; such a JWT is refused meanwhile, and remembered refused no longer.',
        default: 30,
      }),
    ),
    shared: Type.Optional(CodeOnly<SharedTokenResults>('Token results shared between gateway instances (`GatewayCluster.tokenResults`).')),
    dpop: Type.Optional(
      OneOf(['off', 'allowed', 'required'] as const, {
        description: 'DPoP (RFC 9449): `allowed` accepts DPoP-bound tokens beside Bearer ones, `required` DPoP only.',
        default: 'off',
      }),
    ),
    dpopSigningAlgs: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description: 'JWS algorithms a DPoP proof may be signed with; never `none` or HMAC.',
        default: DEFAULT_DPOP_ALGORITHMS,
        errorMessage: 'must be a non-empty array of asymmetric JWS algorithms',
      }),
    ),
    dpopProofMaxAgeSeconds: Type.Optional(
      PositiveNumber({
        description: 'Oldest DPoP proof accepted, seconds since its `iat` (its `jti` is remembered as long).',
        default: 300,
      }),
    ),
    dpopMaxProofsPerKey: Type.Optional(
      PositiveInteger({
        description: 'Most proofs of one key remembered within their lifetime; past it that key gets 429 until some expire.',
        default: 20_000,
      }),
    ),
    dpopNonce: Type.Optional(Type.Boolean({ description: 'Issue DPoP nonces (`use_dpop_nonce`, `DPoP-Nonce`).', default: false })),
    publicBaseUrl: Type.Optional(
      Url('The origin (and path prefix, if any) clients call the gateway at (DPoP `htu`); the gateway gives its own `publicBaseUrl`.'),
    ),
    dpopReplay: Type.Optional(CodeOnly<DpopReplayStore>('Where DPoP proof `jti`s are remembered (the gateway gives one on its Redis).')),
  },
  { additionalProperties: false },
);

const options = TokenPolicyOptionsSchema.properties;

/**
 * The file's keys that stand for a member of an option's section: `cacheTtlSeconds` is
 * `cache.ttlSeconds`. Every other key of the file is the option of the same name, but
 * `clientSecretEnv` (the loader reads the secret from it).
 */
export const FLATTENED_FILE_KEYS = {
  cacheTtlSeconds: ['cache', 'ttlSeconds'],
  cacheMaxEntries: ['cache', 'maxEntries'],
  cacheMaxBytes: ['cache', 'maxBytes'],
  negativeCacheTtlSeconds: ['negativeCache', 'ttlSeconds'],
  negativeCacheMaxEntries: ['negativeCache', 'maxEntries'],
} as const;

/** `tokenPolicies.<name>`: the options a JSON file can give, under the file's keys. */
export const TokenPolicySchema = Type.Object(
  {
    issuer: Type.Optional(options.issuer, false),
    clientId: options.clientId,
    clientSecret: Type.Optional(NonEmptyString({ description: 'Its secret. Give this or `clientSecretEnv`, not both.' })),
    clientSecretEnv: Type.Optional(
      Type.String({
        pattern: `^${CLIENT_SECRET_ENV_PREFIX}[A-Za-z0-9_]+$`,
        description: `Name of an environment variable (starting with \`${CLIENT_SECRET_ENV_PREFIX}\`) that holds the secret, read at load.`,
        errorMessage: `must name an environment variable starting with ${CLIENT_SECRET_ENV_PREFIX} (for example ${CLIENT_SECRET_ENV_PREFIX}IDP)`,
      }),
    ),
    clientAuthMethod: Type.Optional(
      OneOf(FILE_AUTH_METHODS, { description: options.clientAuthMethod.description, default: 'client_secret_basic' }),
    ),
    bearer: Type.Optional(
      Type.Object(
        {
          scope: BearerOptionsSchema.properties.scope,
          clientAuthMethod: Type.Optional(
            OneOf(['client_secret_basic', 'client_secret_post'] as const, {
              description: BearerOptionsSchema.properties.clientAuthMethod.description,
              default: 'client_secret_basic',
            }),
          ),
        },
        { additionalProperties: false, description: BearerOptionsSchema.description },
      ),
    ),
    allowInsecureRequests: options.allowInsecureRequests,
    introspectionEndpoint: options.introspectionEndpoint,
    userinfoEndpoint: options.userinfoEndpoint,
    jwksUri: options.jwksUri,
    tokenEndpoint: options.tokenEndpoint,
    audience: options.audience,
    anyAudience: options.anyAudience,
    jwtTypes: options.jwtTypes,
    maxResponseSize: options.maxResponseSize,
    cacheTtlSeconds: CacheOptionsSchema.properties.ttlSeconds,
    timeoutMs: options.timeoutMs,
    cacheMaxEntries: CacheOptionsSchema.properties.maxEntries,
    cacheMaxBytes: CacheOptionsSchema.properties.maxBytes,
    // 0 here turns the refusal cache off (the option's `negativeCache: false`).
    negativeCacheTtlSeconds: Type.Optional(
      Seconds(
        'How long a refused token is answered again without a call, in seconds; `0` turns it off.',
        NegativeCacheOptionsSchema.properties.ttlSeconds.default as number,
      ),
    ),
    negativeCacheMaxEntries: NegativeCacheOptionsSchema.properties.maxEntries,
    maxConcurrentCalls: options.maxConcurrentCalls,
    invalidTokenThrottle: options.invalidTokenThrottle,
    staleIfErrorSeconds: options.staleIfErrorSeconds,
    certificateBoundTokens: options.certificateBoundTokens,
    jwksCooldownSeconds: options.jwksCooldownSeconds,
    signedIntrospection: options.signedIntrospection,
    dpop: options.dpop,
    dpopSigningAlgs: options.dpopSigningAlgs,
    dpopProofMaxAgeSeconds: options.dpopProofMaxAgeSeconds,
    dpopMaxProofsPerKey: options.dpopMaxProofsPerKey,
    dpopNonce: options.dpopNonce,
  },
  {
    additionalProperties: false,
    description: 'A token policy: the authorization server that validates tokens. Its name is the realm.',
  },
);

/** A token policy of the file, as written. */
export type TokenPolicySection = Static<typeof TokenPolicySchema>;

/** Every key of a token policy in the file. */
export const TOKEN_POLICY_KEYS = Object.keys(TokenPolicySchema.properties) as ReadonlyArray<keyof TokenPolicySection>;

/** The options code gives as written by the schema, a `URL` object allowed where a URL is. */
type WithUrlObjects<T> = { [K in keyof T]: K extends (typeof URL_OPTIONS)[number] ? T[K] | URL : T[K] };

type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The same keys: an optional key in one only would pass {@link SameShape}. */
type SameKeys<A, B> = SameShape<keyof A, keyof B>;
type SectionOf<T> = Exclude<T, false | undefined>;

/** Every key of the file is an option, a flattened one, or the secret's variable. */
type UnmappedFileKey = Exclude<keyof TokenPolicySection, keyof TokenPolicyOptions | keyof typeof FLATTENED_FILE_KEYS | 'clientSecretEnv'>;

/**
 * `TokenPolicyOptions`, written out for the API reference (`policy-options.ts`), is this schema's
 * shape, and the file maps every key it has: the build fails otherwise.  @internal
 */
export const TOKEN_POLICY_TYPES_AGREE: [
  SameShape<TokenPolicyOptions, WithUrlObjects<Static<typeof TokenPolicyOptionsSchema>>>,
  SameKeys<TokenPolicyOptions, Static<typeof TokenPolicyOptionsSchema>>,
  SameKeys<SectionOf<TokenPolicyOptions['bearer']>, Static<typeof BearerOptionsSchema>>,
  SameKeys<SectionOf<TokenPolicyOptions['cache']>, Static<typeof CacheOptionsSchema>>,
  SameKeys<SectionOf<TokenPolicyOptions['negativeCache']>, Static<typeof NegativeCacheOptionsSchema>>,
  SameKeys<SectionOf<TokenPolicyOptions['invalidTokenThrottle']>, Static<typeof InvalidTokenThrottleSchema>>,
  SameKeys<Exclude<TokenPolicyOptions['signedIntrospection'], boolean | undefined>, Static<typeof SignedIntrospectionSchema>>,
  SameShape<UnmappedFileKey, never>,
] = [true, true, true, true, true, true, true, true];
