/**
 * The gateway: `createGateway`, its configuration (schema, loading, validation, cache), the relay
 * and the admin router.
 *
 * @module
 */
export { createGateway } from './create-gateway.js';
export type { CreateGatewayOptions, Gateway, GatewayCheck, GatewayHealth, ResetOptions, TokenPolicyCheckResult } from './create-gateway.js';
export type { GatewayLogger, LogEvent, LogFields } from '../log.js';
export { adminRouter } from './admin.js';
export type { AdminAuthOptions, AdminForgetSelector, AdminTarget, GatewayConfigState, ResetResult } from './admin.js';
export type { DependencyName, DependencyState } from '../observability/dependencies.js';
export { createRelay } from './relay.js';
export type { Relay, RelayOptions } from './relay.js';
export type { TrustProxy } from '../trust-proxy.js';
export { ConfigError } from '../config/errors.js';
export type { ConfigIssue } from '../config/errors.js';
export { loadConfig } from '../config/load.js';
export type { ConfigDocumentSource, ConfigLoader, ConfigSource, LoadConfigOptions } from '../config/load.js';
export { resolveConfig } from '../config/validate.js';
export type { ResolveConfigOptions } from '../config/validate.js';
export { ConfigCache } from '../config/cache.js';
export type { CacheEntry, ConfigCacheOptions, ConfigCacheState } from '../config/cache.js';
export type {
  ApiConfig,
  AuthorizationConfig,
  BackendConfig,
  GatewayConfig,
  HttpMethod,
  OperationConfig,
  RecordingConfig,
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
  TokenPolicyConfig,
} from '../config/types.js';
export type { PathTemplate } from '../url/template.js';
