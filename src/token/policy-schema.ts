/**
 * The schema of a token policy in the configuration file (`tokenPolicies.<name>`): its keys, their
 * types and bounds. What a schema cannot say (URLs and their schemes, a loopback issuer over http,
 * `bearer` only with `clientAuthMethod: "bearer"`, `anyAudience` not with `audience`) is checked
 * after it by the token policy's own rules (`tokenPolicySettings`, through
 * `config/token-policy.ts`), and the secret's source by the configuration's loader.
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';
import { NonEmptyString, OneOf, PositiveInteger, PositiveNumber } from '../schema.js';

/** The client authentications a file can configure (private_key_jwt needs a key object: code only). */
export const FILE_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'bearer'] as const;

/** The prefix of every variable `clientSecretEnv` may name (see `config/validate.ts`). */
export const CLIENT_SECRET_ENV_PREFIX = 'GATEWAY_SECRET_';

const Seconds = (description: string) =>
  Type.Number({ minimum: 0, description, errorMessage: 'must be a number of seconds, 0 (off) or more' });

/** `invalidTokenThrottle` when given as an object. */
export const InvalidTokenThrottleSchema = Type.Object(
  {
    maxRefusals: Type.Optional(PositiveInteger({ description: 'Refused tokens within the window that start the throttle. Default 20.' })),
    windowSeconds: Type.Optional(PositiveNumber({ description: "The window, seconds, from the address's first refusal. Default 10." })),
    maxAddresses: Type.Optional(PositiveInteger({ description: 'Most addresses remembered. Default 10000.' })),
  },
  { additionalProperties: false },
);

/** `tokenPolicies.<name>`. */
export const TokenPolicySchema = Type.Object(
  {
    issuer: NonEmptyString({ description: 'Issuer URL; its metadata (`/.well-known/openid-configuration`) gives the endpoints.' }),
    clientId: NonEmptyString({ description: 'Client id the gateway authenticates with at the introspection endpoint.' }),
    clientSecret: Type.Optional(NonEmptyString({ description: 'Its secret. Give this or `clientSecretEnv`, not both.' })),
    clientSecretEnv: Type.Optional(
      Type.String({
        pattern: `^${CLIENT_SECRET_ENV_PREFIX}[A-Za-z0-9_]+$`,
        description: `Name of an environment variable (starting with \`${CLIENT_SECRET_ENV_PREFIX}\`) that holds the secret, read at load.`,
        errorMessage: `must name an environment variable starting with ${CLIENT_SECRET_ENV_PREFIX} (for example ${CLIENT_SECRET_ENV_PREFIX}IDP)`,
      }),
    ),
    clientAuthMethod: Type.Optional(
      OneOf(FILE_AUTH_METHODS, {
        description: 'How the gateway authenticates to the introspection endpoint. Default `client_secret_basic`.',
      }),
    ),
    bearer: Type.Optional(
      Type.Object(
        {
          scope: Type.Optional(NonEmptyString({ description: "Scope of the gateway's token, such as `introspection`." })),
          clientAuthMethod: Type.Optional(
            OneOf(['client_secret_basic', 'client_secret_post'] as const, {
              description: 'Authentication at the token endpoint. Default `client_secret_basic`.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'With `clientAuthMethod: "bearer"`: the scope asked for, and how the gateway authenticates at the token endpoint.',
        },
      ),
    ),
    allowInsecureRequests: Type.Optional(Type.Boolean({ description: 'Allow `http://` endpoints. Default: only for a loopback issuer.' })),
    introspectionEndpoint: Type.Optional(NonEmptyString({ description: 'Introspection endpoint, merged over the discovered metadata.' })),
    userinfoEndpoint: Type.Optional(NonEmptyString({ description: 'UserInfo endpoint, merged over the discovered metadata.' })),
    jwksUri: Type.Optional(NonEmptyString({ description: 'JWKS URI for JWT validation, merged over the discovered metadata.' })),
    tokenEndpoint: Type.Optional(NonEmptyString({ description: 'Token endpoint, for `clientAuthMethod: "bearer"`.' })),
    audience: Type.Optional(
      Type.Union([NonEmptyString(), Type.Array(NonEmptyString())], {
        description: 'Audience a JWT must carry when JWT validation is on; with introspection, `aud` is checked against it too.',
        errorMessage: 'must be a string or an array of strings',
      }),
    ),
    anyAudience: Type.Optional(
      Type.Boolean({ description: 'Validate JWTs without an `audience`. Cannot be given with `audience`. Default `false`.' }),
    ),
    jwtTypes: Type.Optional(
      Type.Array(NonEmptyString(), {
        minItems: 1,
        description: 'JWT `typ` values JWT validation accepts, such as `["at+jwt"]`.',
        errorMessage: 'must be a non-empty array of JWT typ values, such as ["at+jwt"]',
      }),
    ),
    maxResponseSize: Type.Optional(
      PositiveInteger({ description: 'Largest discovery, introspection or UserInfo answer read, in bytes. Default `262144`.' }),
    ),
    cacheTtlSeconds: Type.Optional(
      PositiveNumber({ description: 'How long a validated token result is cached, in seconds. Default `300`.' }),
    ),
    timeoutMs: Type.Optional(
      PositiveNumber({ description: 'Timeout of each call to the authorization server, in milliseconds. Default `5000`.' }),
    ),
    cacheMaxEntries: Type.Optional(PositiveInteger({ description: 'Most valid token results cached. Default `10000`.' })),
    cacheMaxBytes: Type.Optional(PositiveInteger({ description: 'Most estimated bytes of cached token results. Default `33554432`.' })),
    negativeCacheTtlSeconds: Type.Optional(
      Seconds('How long a refused token is answered again without a call, in seconds; `0` turns it off. Default `30`.'),
    ),
    negativeCacheMaxEntries: Type.Optional(PositiveInteger({ description: 'Most refused tokens remembered. Default `10000`.' })),
    maxConcurrentCalls: Type.Optional(
      PositiveInteger({ description: 'Most calls in flight to the authorization server at once. Default `64`.' }),
    ),
    invalidTokenThrottle: Type.Optional(
      Type.Union([Type.Literal(false), InvalidTokenThrottleSchema], {
        description: 'Throttle of invalid tokens per client address; `false` turns it off.',
        errorMessage: 'must be false or an object { maxRefusals?, windowSeconds?, maxAddresses? }',
      }),
    ),
    staleIfErrorSeconds: Type.Optional(
      Seconds('Seconds a token valid at its last check may still be served while the server is down; `0` (default) is off.'),
    ),
  },
  {
    additionalProperties: false,
    description: 'A token policy (spec 2.1): the authorization server that validates tokens. Its name is the realm.',
  },
);

/** A token policy of the file, as written. */
export type TokenPolicySection = Static<typeof TokenPolicySchema>;

/** Every key of a token policy in the file. */
export const TOKEN_POLICY_KEYS = Object.keys(TokenPolicySchema.properties) as ReadonlyArray<keyof TokenPolicySection>;
