/**
 * Transaction recording: the middleware, the record model, the stores (memory, PostgreSQL).
 *
 * @module
 */
export { recordTransaction } from './record-transaction.js';
export type { RecordTransactionMiddleware, RecordTransactionOptions, RecordTransactionStats } from './record-transaction.js';
export { MemoryTransactionStore } from './memory-store.js';
export type { MemoryTransactionStoreOptions } from './memory-store.js';
export { PostgresTransactionStore } from './postgres/index.js';
export type {
  PgClientLike,
  PgPoolLike,
  PgResultLike,
  JournalCounters,
  PostgresStoreCounters,
  PostgresStoreDropCounts,
  PostgresTransactionStoreOptions,
  RecordJournalOptions,
  JournalUnavailableMode,
} from './postgres/index.js';
export { apiKey } from './types.js';
export { toXacmlRequest, xacmlRequestOf } from './xacml-request.js';
export { outcomeGroups } from './outcome-groups.js';
export type { OutcomeGroup } from './outcome-groups.js';
export type {
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
  OutcomeCounts,
  TransactionStore,
  StoreAvailabilityListener,
  StoreDependency,
  TransactionTokenInfo,
  TransactionTraffic,
  TransactionTrafficPolicy,
} from './types.js';
export { DEFAULT_REDACTED_HEADERS } from './redact.js';
