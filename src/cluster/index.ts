/**
 * Gateway instances behaving as one through Redis: token results shared as a second cache level
 * (with single-flight across instances), a registry of live nodes, and ResetAllCaches for all,
 * every entry and message signed with the cluster secret.
 * The `redis` package is an optional peer dependency, loaded only when a URL is given.
 *
 * @module
 */
export { GatewayCluster, createGatewayCluster } from './cluster.js';
export type { ClusterStatus, GatewayClusterOptions } from './cluster.js';
export { RedisConnection, RedisPackageMissingError, connectRedis } from './redis.js';
export type { RedisClientLike, RedisConnectionOptions, RedisConnectionStats, RedisScript } from './redis.js';
export type { NodeDescription, NodeInfo } from './registry.js';
export type { ClusterResetResult, NodeResetReport } from './reset.js';
export type { ClusterMessageKind } from './seal.js';
export { SharedTokenResults } from './shared-token-results.js';
export type { SharedTokenResultsOptions, SharedTokenResultsStats } from './shared-token-results.js';
