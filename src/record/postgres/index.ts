/**
 * The PostgreSQL transaction store.
 *
 * @module
 */
export { PostgresTransactionStore } from './store.js';
export type { PostgresStoreCounters, PostgresStoreDropCounts, PostgresTransactionStoreOptions } from './store.js';
export type { PgClientLike, PgPoolLike, PgResultLike } from '../../postgres/pool.js';
