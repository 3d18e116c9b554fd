/**
 * The gateway configuration: the JSON shape of `gateway.config.json` (what users write) and the
 * validated, normalized form the gateway runs on.
 *
 * @module
 */

import type { ClientApplication } from '../authorize/applications.js';
import type { InvalidTokenThrottleOptions, SignedIntrospectionOptions } from '../token/policy-options.js';
import type { PathTemplate } from '../url/template.js';
import type { ForwardInfoMode, OriginalTokenMode } from '../token/forward/options.js';
import type { AuthorizationSection } from '../authorize/schema.js';
import type { RecordingSection } from '../record/schema.js';
import type { TokenPolicySection } from '../token/policy-schema.js';
import type { TokenForwardSection as TokenForwardFileSection } from '../token/forward/schema.js';
import type { TrafficControlSettings, TrafficPolicyDefinition } from '../traffic/types.js';
import type { GatewayConfigDocument } from './schema.js';
import type { ApiTrafficControlSection } from '../traffic/schema.js';

/** HTTP methods an operation can declare. */
export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/**
 * A token policy (docs/token-policies.md): the authorization server whose introspection endpoint
 * validates tokens. Its name, the key in {@link GatewayConfig.tokenPolicies}, is the realm of
 * token errors.
 */
export interface TokenPolicyConfig {
  /** Issuer URL; its metadata (`/.well-known/openid-configuration`) gives the endpoints. */
  issuer: string;
  /** Client id the gateway authenticates with at the introspection endpoint. */
  clientId: string;
  /** Its secret. Give this or {@link TokenPolicyConfig.clientSecretEnv}, not both. */
  clientSecret?: string;
  /**
   * Name of an environment variable that holds the secret, read when the configuration is loaded,
   * so that the file need not contain it. Give this or `clientSecret`, not both.
   */
  clientSecretEnv?: string;
  /**
   * How the gateway authenticates to the introspection endpoint. Default `client_secret_basic`
   * (id and secret form-urlencoded before Base64: with a server that does not decode them, use
   * `client_secret_post`); `bearer`: with a token the gateway obtains by client_credentials (see `bearer`).
   */
  clientAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'bearer';
  /** With `clientAuthMethod: "bearer"`: the scope asked for, and how the gateway authenticates at the token endpoint. */
  bearer?: {
    /** Scope of the gateway's token, such as `introspection`. Default: none. */
    scope?: string;
    /** Authentication at the token endpoint. Default `client_secret_basic`. */
    clientAuthMethod?: 'client_secret_basic' | 'client_secret_post';
  };
  /** Allow `http://` endpoints. Default: only for a loopback issuer (development and tests). */
  allowInsecureRequests?: boolean;
  /**
   * Introspection endpoint, merged over the discovered metadata (OpenID Connect discovery, then
   * RFC 8414): for a server whose metadata lacks it or that serves it where discovery does not
   * look. Used alone when discovery fails and the explicit endpoints cover what is needed.
   */
  introspectionEndpoint?: string;
  /** UserInfo endpoint (see `introspectionEndpoint`). */
  userinfoEndpoint?: string;
  /** JWKS URI for JWT validation (see `introspectionEndpoint`). */
  jwksUri?: string;
  /** Token endpoint, for `clientAuthMethod: "bearer"` (see `introspectionEndpoint`). */
  tokenEndpoint?: string;
  /**
   * Audience a JWT must carry when JWT validation is on (required then, unless `anyAudience` is
   * `true`); with introspection, `aud` of the answer is checked against it too.
   */
  audience?: string | string[];
  /**
   * `true` to validate JWTs without an `audience`, accepting any `aud` of the issuer's JWTs (see
   * the token policy option of the same name). Cannot be given with `audience`. Default `false`.
   */
  anyAudience?: boolean;
  /** JWT `typ` header values JWT validation accepts, such as `["at+jwt"]`. Default: not checked. */
  jwtTypes?: string[];
  /** Largest discovery, introspection or UserInfo answer read, in bytes. Default `262144` (256 KiB). */
  maxResponseSize?: number;
  /** How long a validated token result is cached, in seconds (never past the token's `exp`). Default `300`. */
  cacheTtlSeconds?: number;
  /** Timeout of each call to the authorization server, in milliseconds. Default `5000`. */
  timeoutMs?: number;
  /** Most valid token results cached (least recently used evicted). Default `10000`. */
  cacheMaxEntries?: number;
  /** Most estimated bytes of cached token results (least recently used evicted). Default `33554432` (32 MiB). */
  cacheMaxBytes?: number;
  /** How long a refused token is answered again without a call, in seconds; `0` turns it off. Default `30`. */
  negativeCacheTtlSeconds?: number;
  /** Most refused tokens remembered. Default `10000`. */
  negativeCacheMaxEntries?: number;
  /** Most calls in flight to the authorization server at once; past it, wait up to `timeoutMs`, then 503. Default `64`. */
  maxConcurrentCalls?: number;
  /**
   * Throttle of invalid tokens per client address (default 20 refusals in 10 s, 10000 addresses):
   * past it, that address's unknown tokens are answered 429 without a call. `false` turns it off.
   */
  invalidTokenThrottle?: false | InvalidTokenThrottleOptions;
  /** Seconds a token valid at its last check may still be served while the server is down; `0` (default) is off. */
  staleIfErrorSeconds?: number;
  /**
   * Certificate-bound tokens (RFC 8705): `enforce` (the default) accepts a token whose `cnf` holds
   * `x5t#S256` only with that client certificate, and one whose `cnf` holds `jkt` only with a DPoP
   * proof of that key; `ignore` accepts either as a bearer token.
   */
  certificateBoundTokens?: 'enforce' | 'ignore';
  /**
   * Least time between two fetches of the JWKS for JWTs signed with a key it does not hold, in
   * seconds (key rotation); such a JWT is refused meanwhile. Default `30`.
   */
  jwksCooldownSeconds?: number;
  /**
   * Signed introspection answers (RFC 9701): `true`, or `{ algorithms?, maxAgeSeconds? }`. The
   * gateway asks for a JWT answer and accepts only one signed by a key of the issuer's JWKS, for
   * this policy's `clientId`; any other answer is 503. See docs/signed-introspection.md. Default `false`.
   */
  signedIntrospection?: boolean | SignedIntrospectionOptions;
  /**
   * DPoP (RFC 9449): `off` (default), `allowed` (DPoP-bound tokens with their proof beside Bearer
   * ones), `required` (DPoP only). Needs the top-level `publicBaseUrl`. See docs/sender-constrained-tokens.md.
   */
  dpop?: 'off' | 'allowed' | 'required';
  /** JWS algorithms a DPoP proof may be signed with. Default `["ES256", "PS256", "EdDSA"]`. */
  dpopSigningAlgs?: string[];
  /** Oldest DPoP proof accepted, seconds since its `iat`. Default `300`. */
  dpopProofMaxAgeSeconds?: number;
  /** Most proofs of one key remembered within their lifetime (past it, 429 for that key). Default `20000`. */
  dpopMaxProofsPerKey?: number;
  /** `true`: the gateway issues DPoP nonces (`use_dpop_nonce`, `DPoP-Nonce`). Default `false`. */
  dpopNonce?: boolean;
}

/**
 * How the collected token information goes in a configuration file: one header per item
 * (`headers`), or base64 JSON (`json`). A signed JWS (`jws`) needs a signing key, which a JSON file
 * cannot hold: `forwardTokenHeaders` takes it in code.
 */
export type FileForwardInfoMode = Extract<ForwardInfoMode, 'headers' | 'json'>;

/** An API's token forwarding in the configuration file (docs/forwarding.md), as an object. */
export interface TokenForwardSection {
  /** Forward token information. Default `true` when the section is given. */
  enabled?: boolean;
  /** How the collected information goes. Default `headers`. */
  mode?: FileForwardInfoMode;
  /**
   * How the original token goes as well: `none` (default), as received, `Authorization: Bearer`, a
   * query parameter, or a custom header (`{ "header": name }`).
   */
  originalToken?: 'none' | OriginalTokenMode;
}

/** Token forwarding to the backend (docs/forwarding.md) as the gateway runs it, its defaults applied; see `forwardTokenHeaders`. */
export interface TokenForwardConfig {
  /** Forward token information. */
  enabled: boolean;
  /** How the collected information goes: one header per item, or base64 JSON. */
  mode?: FileForwardInfoMode;
  /** How the original token goes: not at all (`none`), as received, `Authorization: Bearer`, a query parameter, or a custom header. */
  originalToken?: 'none' | OriginalTokenMode;
}

/** Token management of an API (docs/gateway.md, "apis[]"). */
export interface TokenManagementConfig {
  /** "Stato": require and validate a token. */
  enabled: boolean;
  /** Name of a token policy in {@link GatewayConfig.tokenPolicies} (also the realm). */
  policy?: string;
  /** "Validazione JWT". Default `false`. */
  jwtValidation?: boolean;
  /** "Introspection". Default `true`. */
  introspection?: boolean;
  /** "User Info". Default `false`. */
  userInfo?: boolean;
  /** "Token Forward": `true` for the default headers mode, or the section. Default `false`. */
  tokenForward?: boolean | TokenForwardSection;
}

/** Authorization of an API (docs/xacml-attributes.md). */
export type AuthorizationConfig =
  | {
      /** No authorization: a validated token (when token management is on) is enough. */
      mode: 'none';
    }
  | {
      /** "xacml-Policy": the uploaded XACML policy decides; only Permit passes. */
      mode: 'xacml-Policy';
      /** Path of the XACML policy document, relative to the configuration file's folder (or the `baseDir` option). */
      policy: string;
      /** Paths of documents reachable only through references. */
      references?: string[];
    };

/**
 * Message recording of an API (docs/console.md, "Message recording per API"): what a transaction
 * record keeps besides its summary. Credential-bearing header values are recorded as `[redacted]`,
 * and the client's token never.
 */
export interface RecordingConfig {
  /** "Richiesta - Ingresso - headers": record the headers the client sent. Default `false`. */
  incomingHeaders?: boolean;
  /** "Richiesta - Uscita - headers": record every header the backend received. Default `false`. */
  outgoingHeaders?: boolean;
  /** Record the request body the backend received (its first `maxBodyBytes` bytes). Default `false`. */
  requestBody?: boolean;
  /** "Risposta": record the backend's response body (its first `maxBodyBytes` bytes). Default `false`. */
  responseBody?: boolean;
  /** Most bytes of each body kept (the rest is counted, not kept). Default `4096`, at most `1048576`. */
  maxBodyBytes?: number;
  /**
   * Which authorization decisions keep the XACML request's attributes, for the configuration
   * console's what-if: `denied` (default) those that are not a Permit, `all` every one (a draft
   * turning a Permit into a Deny shows too; every permitted call then copies its request).
   */
  xacmlRequests?: 'denied' | 'all';
}

/** The backend of an API. */
export interface BackendConfig {
  /** Base URL, `http(s)://host[:port][/path]`. The resource path is appended. */
  url: string;
  /** Read timeout in milliseconds (504 past it). Default `30000`. */
  timeoutMs?: number;
}

/** One operation of an API, when the API lists them (else every method and path is relayed). */
export interface OperationConfig {
  /** The operation name, XACML `action-id` and the recorded operation. */
  name: string;
  /** Its method. */
  method: HttpMethod;
  /** Path template below the API, `{name}` for one segment, for example `/pet/{petId}`. */
  path: string;
  /** Scopes the token must all hold for this operation, on top of the API's `requiredScopes`. */
  requiredScopes?: string[];
  /**
   * Ways to pass (OpenAPI `security`): the token must hold every scope of one alternative, on top
   * of the API's rules and this operation's `requiredScopes`; `[]` needs none.
   */
  scopeAlternatives?: string[][];
  /** Claim name → allowed values the token must hold for this operation, on top of the API's `requiredClaims`. */
  requiredClaims?: Record<string, string[]>;
  /**
   * Step-up authentication: the `acr` values accepted for this operation; they **replace** the
   * API's `requiredAcrValues` for its requests.
   */
  requiredAcrValues?: string[];
  /** Step-up authentication: the most seconds since the user authenticated, for this operation; the smaller of it and the API's applies. */
  maxAuthenticationAge?: number;
}

/**
 * Traffic control of every API (`trafficControl` at the top of the file, and the `createGateway`
 * option of the same name): the instance cap, where counts are kept, what a decision does while
 * Redis is down, which rate-limit headers answers carry, and policies (rate limits and quotas)
 * that apply to every API. See docs/traffic-control.md.
 */
export type TrafficControlConfig = TrafficControlSettings;

/** Traffic control of one API (`apis[i].trafficControl`): its own policies, checked with the top-level ones. */
export interface ApiTrafficControlConfig {
  /** The API's policies; a name is unique across them and the top-level ones. */
  policies: TrafficPolicyDefinition[];
}

/** A registered API ("erogazione"). */
export interface ApiConfig {
  /** Providing subject, the first path segment, for example `Ente`. */
  provider: string;
  /** API name, for example `PetStore`. */
  name: string;
  /** Version number, served as `v<version>`. */
  version: number;
  /** Where requests are relayed. */
  backend: BackendConfig;
  /** Operations; when absent, any method and resource path is relayed. */
  operations?: OperationConfig[];
  /** Token management; absent means disabled. */
  tokenManagement?: TokenManagementConfig;
  /** Authorization; absent means `none`. */
  authorization?: AuthorizationConfig;
  /** Message recording. */
  recording?: RecordingConfig;
  /** This API's traffic policies, checked with those of the top-level `trafficControl`. */
  trafficControl?: ApiTrafficControlConfig;
  /**
   * `true`: the gateway answers `GET /.well-known/oauth-protected-resource<basePath>/<provider>/<name>/v<version>`
   * with this API's protected resource metadata (RFC 9728), and its 401 challenges carry
   * `resource_metadata="<that URL>"`. Needs token management and `publicBaseUrl`. Default `false`.
   */
  protectedResourceMetadata?: boolean;
  /**
   * Scopes the token's `scope` must all hold (`requireScopes`): otherwise 403 `insufficient_scope`,
   * before XACML. Needs token management.
   */
  requiredScopes?: string[];
  /**
   * Ways to pass (OpenAPI `security`): the token must hold every scope of one alternative, besides
   * `requiredScopes`, for example `[["pets:read"], ["pets:admin"]]`; `[]` needs none. Needs token
   * management.
   */
  scopeAlternatives?: string[][];
  /**
   * Claim name → allowed values; the token's claim must hold one of them (`requireScopes`). A
   * dotted name reads nested members (`realm_access.roles`). Needs token management.
   */
  requiredClaims?: Record<string, string[]>;
  /**
   * Step-up authentication (RFC 9470, `requireUserAuthentication`): the token's `acr` must be one
   * of these, otherwise 401 `insufficient_user_authentication` with `acr_values`, before the scope
   * rules and XACML. Needs token management.
   */
  requiredAcrValues?: string[];
  /**
   * Step-up authentication (RFC 9470): the token's `auth_time` must be present and at most this
   * many seconds ago (the token policy's `clockSkew` tolerated), otherwise 401
   * `insufficient_user_authentication` with `max_age`. At most one year. Needs token management.
   */
  maxAuthenticationAge?: number;
}

/**
 * The gateway configuration, as written in `gateway.config.json`: the configuration proper (token
 * policies and registered APIs), cached and reset as a whole. Settings of the host (base path,
 * `Server` header, cache lifetime, admin credentials) are options of `createGateway`.
 */
export interface GatewayConfig {
  /** Token policies by name. */
  tokenPolicies?: Record<string, TokenPolicyConfig>;
  /** The registered APIs. */
  apis: ApiConfig[];
  /**
   * The registry of client applications: client id → `{ name, organization?, roles? }`, the values
   * of `org:gateway:subject:client`, `org:gateway:subject:organization` and
   * `org:gateway:subject:role` for that client's tokens.
   */
  applications?: Record<string, ClientApplication>;
  /** Traffic control: settings, and policies that apply to every API. */
  trafficControl?: TrafficControlConfig;
  /**
   * Whose `X-Forwarded-*`, `Forwarded` and client certificate headers are believed, with the values
   * of `createGateway`'s `trustProxy` (give it in one of the two only). Default: nobody's.
   */
  trustProxy?: boolean | number | string | string[];
  /**
   * The origin (and path prefix, if any) clients call the gateway at, such as
   * `https://api.example.org`: DPoP proofs' `htu` are checked against it, never against the
   * request's `Host`, and protected resource metadata is named from it.
   */
  publicBaseUrl?: string;
  /**
   * The header in which a TLS-terminating proxy sends the client certificate (URL-encoded PEM, as
   * nginx's `$ssl_client_escaped_cert`), such as `X-SSL-Client-Cert`: read only from peers
   * `trustProxy` trusts, for certificate-bound tokens, and never relayed to a backend.
   */
  clientCertificateHeader?: string;
}

/** An operation with its path template compiled. */
export interface ResolvedOperation extends OperationConfig {
  /** Matches a resource path, without backtracking (see docs/gateway.md, "How a path template matches"). */
  readonly pattern: PathTemplate;
}

/** An API after validation: defaults applied, paths resolved, policy text read. */
export interface ResolvedApi {
  /** Providing subject. */
  readonly provider: string;
  /** API name. */
  readonly name: string;
  /** Version number. */
  readonly version: number;
  /** Backend URL and read timeout (default applied). */
  readonly backend: {
    /** Backend base URL; the resource path is appended to it. */
    readonly url: string;
    /** Read timeout of the backend's answer, milliseconds. */
    readonly timeoutMs: number;
  };
  /** Declared operations, or `undefined` when any method and path is relayed. */
  readonly operations: readonly ResolvedOperation[] | undefined;
  /** Token management with its defaults applied. */
  readonly tokenManagement:
    | {
        /** Token management is on: a token is required and validated. */
        readonly enabled: true;
        /** Name of the token policy (the realm). */
        readonly policy: string;
        /** Validate JWT access tokens locally with the issuer's JWKS. */
        readonly jwtValidation: boolean;
        /** Validate the token by RFC 7662 introspection. */
        readonly introspection: boolean;
        /** Call UserInfo with the token. */
        readonly userInfo: boolean;
        /** Token forwarding to the backend (`enabled: false` when off). */
        readonly tokenForward: TokenForwardConfig;
      }
    | {
        /** Token management is off: requests are relayed without a token check. */
        readonly enabled: false;
      };
  /** Authorization, with the policy documents read. */
  readonly authorization:
    | {
        /** No authorization. */
        readonly mode: 'none';
      }
    | {
        /** The XACML policy decides. */
        readonly mode: 'xacml-Policy';
        /** Absolute path of the policy file (its path in the document when the source keeps the policies itself). */
        readonly policyFile: string;
        /** The policy text, read at load. */
        readonly policyXml: string;
        /** Texts of the referenced documents, read at load. */
        readonly referencesXml: readonly string[];
      };
  /** This API's own traffic policies (empty: none). */
  readonly trafficControl: {
    /** Its policies, in file order, defaults applied. */
    readonly policies: readonly ResolvedTrafficPolicy[];
  };
  /** Whether the gateway serves the API's protected resource metadata (RFC 9728) and names it in its 401 challenges. */
  readonly protectedResourceMetadata: boolean;
  /** Scopes every request's token must hold (empty: none). */
  readonly requiredScopes: readonly string[];
  /** Ways to pass of every request's token, one of which it must hold (absent: none). */
  readonly scopeAlternatives?: ReadonlyArray<readonly string[]>;
  /** Claims every request's token must hold, name → allowed values (empty: none). */
  readonly requiredClaims: Readonly<Record<string, readonly string[]>>;
  /** The `acr` values one of which every request's token must carry (`undefined`: none required). */
  readonly requiredAcrValues: readonly string[] | undefined;
  /** The most seconds since the user authenticated (`undefined`: no limit). */
  readonly maxAuthenticationAge: number | undefined;
  /** Message recording. */
  readonly recording: {
    /** Record the headers the client sent. */
    readonly incomingHeaders: boolean;
    /** Record the headers the backend received (the console's "outgoing contents"). */
    readonly outgoingHeaders: boolean;
    /** Record the request body the backend received. */
    readonly requestBody: boolean;
    /** Record the backend's response body. */
    readonly responseBody: boolean;
    /** Most bytes of each body kept. */
    readonly maxBodyBytes: number;
    /** Which decisions keep the XACML request's attributes. */
    readonly xacmlRequests: 'denied' | 'all';
  };
}

/** The configuration after validation. */
export interface ResolvedConfig {
  /** Token policies by name. */
  readonly tokenPolicies: Readonly<Record<string, ResolvedTokenPolicy>>;
  /** The registered APIs, in file order. */
  readonly apis: readonly ResolvedApi[];
  /** The registry of client applications by client id (empty when the file has none). */
  readonly applications: Readonly<Record<string, ClientApplication>>;
  /** Traffic control of every API (its policies empty when the file has none). */
  readonly trafficControl: ResolvedTrafficControl;
  /** The listener's settings the file gives (`undefined`: not given). */
  readonly listener: ResolvedListener;
}

/** The top-level `trustProxy`, `publicBaseUrl` and `clientCertificateHeader`, as the file gives them. */
export interface ResolvedListener {
  /** Whose forwarded headers are believed; `undefined`: as `createGateway`'s `trustProxy` says. */
  readonly trustProxy: boolean | number | string | readonly string[] | undefined;
  /** The origin clients use, without a trailing slash. */
  readonly publicBaseUrl: string | undefined;
  /** The proxy's client certificate header. */
  readonly clientCertificateHeader: string | undefined;
}

/** A traffic policy after validation: `mode` and `groupBy` given (defaults `enforce` and none), `window` for a `requests` policy (default `sliding`). */
export type ResolvedTrafficPolicy = Readonly<TrafficPolicyDefinition & Required<Pick<TrafficPolicyDefinition, 'mode' | 'groupBy'>>>;

/**
 * The top-level traffic control after validation. Settings the file does not give stay
 * `undefined`: `createGateway`'s `trafficControl` option may give them (not both), and the
 * gateway applies the defaults (see docs/traffic-control.md).
 */
export interface ResolvedTrafficControl {
  /** Requests in flight on one instance; `undefined`: no cap from the file. */
  readonly maxConcurrentRequests: number | undefined;
  /** Where counts are kept, as written. */
  readonly store: TrafficControlSettings['store'];
  /** What a decision does while Redis cannot be reached, as written. */
  readonly onStoreUnavailable: TrafficControlSettings['onStoreUnavailable'];
  /** Which rate-limit headers answers carry, as written. */
  readonly headers: TrafficControlSettings['headers'];
  /** The bound on the groups an instance keeps, as written. */
  readonly groups: TrafficControlSettings['groups'];
  /** Policies of every API, in file order, defaults applied. */
  readonly policies: readonly ResolvedTrafficPolicy[];
}

/** A token policy after validation, defaults applied. */
export interface ResolvedTokenPolicy extends TokenPolicyConfig {
  /** Its name (the realm). */
  readonly name: string;
  /** The client secret, from the file or from the environment variable it names. */
  readonly clientSecret: string;
  /** Token-result cache lifetime, seconds. */
  readonly cacheTtlSeconds: number;
  /** Timeout of calls to the authorization server, milliseconds. */
  readonly timeoutMs: number;
}

/**
 * Whether `A` and `B` accept the same values. The interfaces above are written out, with a comment
 * on each field for the API reference; the schemas (`config/schema.ts` and the features') are what
 * a file is checked against. This keeps them the same shape: a field added to one and not the
 * other fails the build.
 */
type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** @internal */
export const SCHEMA_AND_TYPES_AGREE: [
  SameShape<TokenPolicyConfig, TokenPolicySection>,
  // An optional key in one only would pass the line above.
  SameShape<keyof TokenPolicyConfig, keyof TokenPolicySection>,
  SameShape<RecordingConfig, RecordingSection>,
  SameShape<AuthorizationConfig, AuthorizationSection>,
  SameShape<boolean | TokenForwardSection, TokenForwardFileSection>,
  SameShape<keyof TokenForwardSection, keyof Exclude<TokenForwardFileSection, boolean>>,
  SameShape<ApiTrafficControlConfig, ApiTrafficControlSection>,
  SameShape<Omit<GatewayConfig, 'applications'> & { $schema?: string }, Omit<GatewayConfigDocument, 'applications'>>,
] = [true, true, true, true, true, true, true, true];
