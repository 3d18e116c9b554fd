/**
 * express-access-gateway: composable Express middleware for an access-control gateway, and the
 * gateway as a server of its own. Every export is named here, as the public surface; internal
 * helpers are reachable only from their modules and are left out of the published declarations.
 *
 * @packageDocumentation
 */

// Errors and option checks
export {
  GatewayError,
  errorCatalogue,
  isGatewayError,
  messageSets,
  messagesEn,
  messagesIt,
  outcomeLabels,
  renderMessage,
} from './errors.js';
export type {
  BearerErrorCode,
  DpopChallenge,
  ErrorDefinition,
  GatewayErrorCode,
  GatewayErrorOptions,
  Message,
  MessageParams,
  MessageSet,
  OutcomeCode,
} from './errors.js';
export { InvalidOptionError } from './options.js';
export type { InvalidOptionIssue } from './options.js';

// The per-request state
export { addDiagnostic, diagnosticCodes, gatewayContext } from './context.js';
export type {
  ApiContext,
  AuthorizationContext,
  BindingRefusalReason,
  CertificateRefusalReason,
  Diagnostic,
  DiagnosticCode,
  DiagnosticEvent,
  DiagnosticLevel,
  DpopRefusalReason,
  GatewayContext,
  Middleware,
  RecordingContext,
  TokenBinding,
  TokenContext,
  TokenInfo,
  TokenMethod,
  UserInfo,
} from './context.js';

// Token: extraction, validation, forwarding
export { requireToken } from './token/require-token.js';
export type { RequireTokenOptions } from './token/extract.js';
export type { TokenMiddleware } from './token/middleware.js';
export { introspect } from './token/introspect.js';
export type { IntrospectOptions } from './token/introspect.js';
export { certificateThumbprint } from './token/binding/certificate.js';
export type { CertificateBoundTokens, ClientCertificate, ClientCertificateSource } from './token/binding/certificate.js';
export { TokenPolicy, createTokenPolicy } from './token/policy.js';
export type { TokenPolicyCheck, TokenValidation } from './token/policy.js';
export type {
  AuthorizationServerMetadata,
  InvalidTokenThrottleOptions,
  SignedIntrospectionOptions,
  TokenPolicyOptions,
} from './token/policy-options.js';
export { MemoryReplayStore } from './token/binding/replay.js';
export type { DpopReplayStore, ProofMemory, ProofOwner } from './token/binding/replay.js';
export type { ClientAuthMethod, ClientPrivateKey } from './token/client-auth.js';
export { defaultForwardedHeaderNames, forwardTokenHeaders } from './token/forward/index.js';
export type {
  ForwardDateFormat,
  ForwardInfoMode,
  ForwardJwsOptions,
  ForwardTokenHeadersOptions,
  ForwardedItem,
  OriginalTokenMode,
} from './token/forward/index.js';

// Authorization: scope rules, applications, XACML
export {
  ApplicationRegistry,
  InsufficientScopeError,
  InsufficientUserAuthenticationError,
  XacmlAttributes,
  XacmlPolicySource,
  buildXacmlRequest,
  decisionText,
  identifyApplication,
  requireScopes,
  requireUserAuthentication,
  toRequestXml,
  xacmlAuthorize,
} from './authorize/index.js';
export type {
  BuildXacmlRequestOptions,
  ClientApplication,
  ClientApplications,
  DecisionResult,
  IdentifyApplicationOptions,
  OperationScopeRules,
  OperationStepUpRules,
  RequireScopesOptions,
  RequireUserAuthenticationOptions,
  RequiredClaims,
  ScopeRules,
  StepUpRules,
  XacmlAuthorizeMiddleware,
  XacmlAuthorizeOptions,
  XacmlDecision,
  XacmlElementKind,
  XacmlEvaluatorOptions,
  XacmlExplanation,
  XacmlExplanationFailure,
  XacmlExplanationStep,
  XacmlInvocation,
  XacmlObligationHandler,
  XacmlPolicyDocuments,
  XacmlPolicyLoader,
  XacmlPolicySourceOptions,
  XacmlPolicyState,
  XacmlSubjectInfo,
} from './authorize/index.js';

// Problem+json
export { problemJsonErrorHandler } from './problem/handler.js';
export type { ErrorHandler, ProblemJsonErrorHandlerOptions } from './problem/handler.js';
export { bearerChallenge, renderProblem, sendProblem } from './problem/render.js';
export type { ProblemBody, ProblemOptions, RenderedProblem } from './problem/render.js';

// Records
export {
  DEFAULT_REDACTED_HEADERS,
  MemoryTransactionStore,
  PostgresTransactionStore,
  apiKey,
  outcomeGroups,
  recordTransaction,
  toXacmlRequest,
  xacmlRequestOf,
} from './record/index.js';
export type {
  MemoryTransactionStoreOptions,
  OutcomeCounts,
  OutcomeGroup,
  PgClientLike,
  PgPoolLike,
  PgResultLike,
  JournalCounters,
  PostgresStoreCounters,
  PostgresStoreDropCounts,
  PostgresTransactionStoreOptions,
  RecordJournalOptions,
  JournalUnavailableMode,
  RecordTransactionMiddleware,
  RecordTransactionOptions,
  RecordTransactionStats,
  RecordedBody,
  RecordedXacmlAttribute,
  RecordedXacmlRequest,
  TransactionApi,
  TransactionAuthorization,
  TransactionFilter,
  TransactionOutcome,
  TransactionPage,
  TransactionQuery,
  TransactionRecord,
  TransactionBinding,
  TransactionSender,
  TransactionStats,
  TransactionStatsBucket,
  TransactionStatsEntry,
  TransactionStatsQuery,
  TransactionStatsTop,
  TransactionStatsTotals,
  TransactionStore,
  StoreAvailabilityListener,
  StoreDependency,
  TransactionTokenInfo,
  TransactionTraffic,
  TransactionTrafficPolicy,
} from './record/index.js';

// The monitoring console, and the credentials of every operators' router
export { monitoringConsole } from './monitoring/index.js';
export type { MonitoringConsoleOptions } from './monitoring/index.js';
export { CONSOLE_REQUEST_HEADER } from './admin/index.js';
export type { BasicCredentials, ConsoleAuthenticate, LoginThrottleOptions } from './admin/index.js';

// Several instances as one: Redis
export {
  GatewayCluster,
  RedisConnection,
  RedisPackageMissingError,
  SharedTokenResults,
  connectRedis,
  createGatewayCluster,
} from './cluster/index.js';
export type {
  ClusterMessageKind,
  ClusterResetResult,
  ClusterStatus,
  GatewayClusterOptions,
  NodeDescription,
  NodeInfo,
  NodeResetReport,
  RedisClientLike,
  RedisConnectionOptions,
  RedisConnectionStats,
  RedisScript,
  SharedTokenResultsOptions,
  SharedTokenResultsStats,
} from './cluster/index.js';

// Traffic control: rate limits and quotas
export { TrafficControlError, TrafficStoreError, trafficControl } from './traffic/index.js';
export type {
  GroupUsage,
  PolicyStanding,
  TrafficControlIssue,
  TrafficControlMiddleware,
  TrafficControlOptions,
  TrafficControlSettings,
  TrafficDecision,
  TrafficFacts,
  TrafficFactsOverride,
  TrafficGroupBounds,
  TrafficHeaderSet,
  TrafficPolicyDefinition,
  TrafficPolicyResult,
} from './traffic/index.js';

// The gateway: configuration, relay, admin
export { ConfigError, adminRouter, createGateway, createRelay, loadConfig, resolveConfig } from './gateway/index.js';
export type {
  AdminAuthOptions,
  AdminForgetSelector,
  AdminTarget,
  DependencyName,
  DependencyState,
  ApiConfig,
  AuthorizationConfig,
  BackendConfig,
  ConfigIssue,
  ConfigDocumentSource,
  ConfigLoader,
  ConfigSource,
  CreateGatewayOptions,
  GatewayLogger,
  LogEvent,
  LogFields,
  ResetOptions,
  Gateway,
  GatewayCheck,
  GatewayConfig,
  GatewayConfigState,
  GatewayHealth,
  HttpMethod,
  LoadConfigOptions,
  OperationConfig,
  PathTemplate,
  RecordingConfig,
  Relay,
  RelayOptions,
  ResetResult,
  ResolveConfigOptions,
  ResolvedApi,
  ResolvedConfig,
  ResolvedListener,
  ResolvedOperation,
  ResolvedTokenPolicy,
  FileForwardInfoMode,
  ResolvedTrafficControl,
  ResolvedTrafficPolicy,
  ApiTrafficControlConfig,
  TrafficControlConfig,
  TokenForwardConfig,
  TokenForwardSection,
  TokenManagementConfig,
  TokenPolicyCheckResult,
  TokenPolicyConfig,
  TrustProxy,
} from './gateway/index.js';

// Metrics and traces
export type { GatewayMetrics, GatewayMetricsOptions } from './observability/metrics.js';

// The gateway as a server
export { serveGateway } from './server/index.js';
export type { AdminAdmissionOptions, GatewayServer, ServeOptions, ServeTlsOptions, ServerTimeouts } from './server/index.js';

// Operators of the admin listener (users, roles, sessions, audit log) and the configuration console
export { FileConfigStore, PostgresConfigSource, VersionConflictError } from './configuration/index.js';
export type {
  ConfigProposal,
  ConfigSnapshot,
  ConfigStore,
  ConfigVersion,
  DiffLine,
  PostgresConfigSourceOptions,
  ProposalIssue,
  SecretState,
} from './configuration/index.js';
export type { WhatIfChange, WhatIfDecision, WhatIfReport, WhatIfSkipped, WhatIfSkipReason } from './configuration/index.js';
export type { OperatorWorkOptions } from './configuration/work/pool.js';
export { MemoryAuditLog, hashPassword } from './operators/index.js';
export type {
  AuditEntry,
  AuditInput,
  AuditLog,
  AuditResult,
  MemoryAuditLogOptions,
  OperatorRole,
  OperatorUser,
  OperatorsOptions,
  SessionOptions,
  SessionRevocations,
  UsersDocument,
} from './operators/index.js';
