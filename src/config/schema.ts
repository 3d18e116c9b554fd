/**
 * The schema of the configuration file (`gateway.config.json`), put together from the features'
 * schemas: token policies (`token/policy-schema.ts`), token forwarding (`token/forward/schema.ts`),
 * authorization and client applications (`authorize/schema.ts`), recording (`record/schema.ts`),
 * traffic control (`traffic/schema.ts`); the API's own shape (backend, operations, token management) is here. `config.schema.json` is
 * generated from {@link GatewayConfigSchema} (see `json-schema.ts`).
 *
 * @module
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  ApplicationsSchema,
  AuthorizationSchema,
  maxAuthenticationAgeSchema,
  requiredAcrValuesSchema,
  requiredClaimsSchema,
  requiredScopesSchema,
  scopeAlternativesSchema,
} from '../authorize/schema.js';
import { RecordingSchema } from '../record/schema.js';
import { NonEmptyString, OneOf, PositiveInteger, PositiveNumber } from '../schema.js';
import { TokenForwardSchema } from '../token/forward/schema.js';
import { TokenPolicySchema } from '../token/policy-schema.js';
import { ApiTrafficControlSchema, TrafficControlSchema } from '../traffic/schema.js';
import { ClientCertificateHeaderSchema, PublicBaseUrlSchema, TrustProxySchema } from './listener.js';

/** HTTP methods an operation can declare. */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** A path segment of the gateway URL: no slash, nothing that needs encoding. */
const Segment = (description: string) =>
  Type.String({
    pattern: '^[A-Za-z0-9._~-]+$',
    description,
    errorMessage: 'must be a non-empty string of letters, digits, ".", "_", "~" or "-"',
  });

/** `apis[i].backend`. */
export const BackendSchema = Type.Object(
  {
    url: NonEmptyString({ description: 'Base URL, `http(s)://host[:port][/path]`; the resource path is appended.' }),
    timeoutMs: Type.Optional(PositiveNumber({ description: 'Read timeout in milliseconds (504 past it). Default `30000`.' })),
  },
  { additionalProperties: false, description: 'Where requests are relayed.' },
);

/** `apis[i].operations[j]`. */
export const OperationSchema = Type.Object(
  {
    name: NonEmptyString({ description: 'The operation name, XACML `action-id` and the recorded operation.' }),
    method: OneOf(HTTP_METHODS, { description: 'Its method.' }),
    path: Type.String({
      pattern: '^/[^?#\\s]*$',
      description: 'Path template below the API, `{name}` for one segment, for example `/pet/{petId}`.',
      errorMessage: 'must be a path starting with "/" (no query), "{name}" for a segment',
    }),
    requiredScopes: Type.Optional(
      requiredScopesSchema("Scopes the token must all hold for this operation, on top of the API's `requiredScopes`."),
    ),
    scopeAlternatives: Type.Optional(
      scopeAlternativesSchema(
        "Ways to pass (OpenAPI `security`): the token must hold every scope of one alternative, on top of the API's rules and this operation's `requiredScopes`; `[]` needs none.",
      ),
    ),
    requiredClaims: Type.Optional(
      requiredClaimsSchema("Claim name → allowed values the token must hold for this operation, on top of the API's `requiredClaims`."),
    ),
    requiredAcrValues: Type.Optional(
      requiredAcrValuesSchema(
        "Step-up authentication: the `acr` values accepted for this operation, replacing the API's `requiredAcrValues` (otherwise 401 `insufficient_user_authentication`).",
      ),
    ),
    maxAuthenticationAge: Type.Optional(
      maxAuthenticationAgeSchema(
        "Step-up authentication: the most seconds since the user authenticated (`auth_time`) for this operation; the smaller of it and the API's applies.",
      ),
    ),
  },
  { additionalProperties: false },
);

/** `apis[i].tokenManagement` (docs/gateway.md, "apis[]"). */
export const TokenManagementSchema = Type.Object(
  {
    enabled: Type.Boolean({ description: '"Stato": require and validate a token.' }),
    policy: Type.Optional(
      NonEmptyString({ description: 'Name of a token policy in `tokenPolicies` (also the realm); required when enabled.' }),
    ),
    jwtValidation: Type.Optional(Type.Boolean({ description: '"Validazione JWT". Default `false`.' })),
    introspection: Type.Optional(Type.Boolean({ description: '"Introspection". Default `true`.' })),
    userInfo: Type.Optional(Type.Boolean({ description: '"User Info". Default `false`.' })),
    tokenForward: Type.Optional(TokenForwardSchema),
  },
  { additionalProperties: false, description: 'Token management; absent means disabled.' },
);

/** `apis[i]`: a registered API ("erogazione"). */
export const ApiSchema = Type.Object(
  {
    provider: Segment('Providing subject, the first path segment, for example `Ente`.'),
    name: Segment('API name, for example `PetStore`.'),
    version: PositiveInteger({ description: 'Version number, served as `v<version>`.' }),
    backend: BackendSchema,
    operations: Type.Optional(
      Type.Array(OperationSchema, { minItems: 1, description: 'Operations; when absent, any method and resource path is relayed.' }),
    ),
    tokenManagement: Type.Optional(TokenManagementSchema),
    authorization: Type.Optional(AuthorizationSchema),
    recording: Type.Optional(RecordingSchema),
    trafficControl: Type.Optional(ApiTrafficControlSchema),
    protectedResourceMetadata: Type.Optional(
      Type.Boolean({
        description:
          "Answer `GET /.well-known/oauth-protected-resource<basePath>/<provider>/<name>/v<version>` with this API's protected resource metadata (RFC 9728), and name it in the API's 401 challenges (`resource_metadata`). Needs token management and `publicBaseUrl`. Default `false`.",
      }),
    ),
    requiredScopes: Type.Optional(
      requiredScopesSchema(
        "Scopes the token's `scope` must all hold: otherwise 403 `insufficient_scope`, before XACML. Needs token management.",
      ),
    ),
    scopeAlternatives: Type.Optional(
      scopeAlternativesSchema(
        'Ways to pass (OpenAPI `security`): the token must hold every scope of one alternative, besides `requiredScopes`; `[]` needs none. Needs token management.',
      ),
    ),
    requiredClaims: Type.Optional(
      requiredClaimsSchema(
        "Claim name → allowed values; the token's claim must hold one of them. A dotted name reads nested members. Needs token management.",
      ),
    ),
    requiredAcrValues: Type.Optional(
      requiredAcrValuesSchema(
        "Step-up authentication (RFC 9470): the token's `acr` must be one of these, otherwise 401 `insufficient_user_authentication` naming them in `acr_values`, before the scope rules and XACML. Needs token management.",
      ),
    ),
    maxAuthenticationAge: Type.Optional(
      maxAuthenticationAgeSchema(
        "Step-up authentication (RFC 9470): the token's `auth_time` must be present and at most this many seconds ago (the token policy's `clockSkew` tolerated), otherwise 401 `insufficient_user_authentication` with `max_age`. Needs token management.",
      ),
    ),
  },
  { additionalProperties: false },
);

/** The whole configuration file. */
export const GatewayConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String({ description: 'The JSON Schema of this file, for editors: `config.schema.json` of the package.' })),
    tokenPolicies: Type.Optional(Type.Record(Type.String(), TokenPolicySchema, { description: 'Token policies by name.' })),
    apis: Type.Array(ApiSchema, { description: 'The registered APIs.' }),
    applications: Type.Optional(ApplicationsSchema),
    trafficControl: Type.Optional(TrafficControlSchema),
    trustProxy: Type.Optional(TrustProxySchema),
    publicBaseUrl: Type.Optional(PublicBaseUrlSchema),
    clientCertificateHeader: Type.Optional(ClientCertificateHeaderSchema),
  },
  {
    additionalProperties: false,
    title: 'express-access-gateway configuration',
    description: 'The gateway configuration (gateway.config.json): token policies, registered APIs, client applications, traffic control.',
  },
);

/** The configuration file, as written (the schema's type). */
export type GatewayConfigDocument = Static<typeof GatewayConfigSchema>;
