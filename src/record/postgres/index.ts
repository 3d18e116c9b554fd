/**
 * The PostgreSQL transaction store.
 *
 * @module
 */
export { PostgresTransactionStore } from './store.js';
export type {
  JournalCounters,
  PostgresStoreCounters,
  PostgresStoreDropCounts,
  PostgresTransactionStoreOptions,
  RecordJournalOptions,
} from './store.js';
export type { JournalUnavailableMode } from './journal.js';
export type { PgClientLike, PgPoolLike, PgResultLike } from '../../postgres/pool.js';
