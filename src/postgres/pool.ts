/**
 * The few parts of node-postgres the gateway's PostgreSQL stores use, as structural types (a
 * `pg.Pool` fits them; the published declarations need no `@types/pg`), and the pool a store makes
 * from a connection string.
 *
 * @module
 */

/** The result of a query, as node-postgres returns it. */
export interface PgResultLike {
  /** Rows, as objects keyed by column name. */
  rows: Array<Record<string, unknown>>;
  /** Rows inserted, updated or deleted (or returned). */
  rowCount: number | null;
}

/** A client checked out of a pool (`pg.PoolClient`). */
export interface PgClientLike {
  /** Runs one statement with `$1`-style parameters. */
  query(text: string, values?: unknown[]): Promise<PgResultLike>;
  /** Gives the client back; with an error (or `true`) the pool discards it. */
  release(error?: Error | boolean): void;
}

/** A connection pool (`pg.Pool`): what a host passes to share its own pool with the store. */
export interface PgPoolLike {
  /** Runs one statement on any client of the pool. */
  query(text: string, values?: unknown[]): Promise<PgResultLike>;
  /** Checks a client out (for a transaction or a session lock). */
  connect(): Promise<PgClientLike>;
  /** Closes every client. */
  end(): Promise<void>;
}

/** Settings of the pool made from a connection string. */
export interface OwnPoolSettings {
  /** The store that asks (named when `pg` is missing). */
  owner: string;
  connectionString: string;
  /** Most connections. */
  max: number;
  /** Connect and query timeout (ms): a server that hangs fails the query instead of holding it. */
  timeoutMs: number;
  /** Called with errors of idle clients (a pool without a listener would crash the process). */
  onError: (error: Error) => void;
}

/**
 * A `pg.Pool` for `connectionString`, loading `pg` only now: hosts that never ask for PostgreSQL
 * need not install it.
 */
export async function createOwnPool(settings: OwnPoolSettings): Promise<PgPoolLike> {
  let pg: typeof import('pg');
  try {
    pg = await import('pg');
  } catch (error) {
    throw new Error(`${settings.owner}: the "pg" package is needed for connectionString (npm install pg)`, { cause: error });
  }
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    max: settings.max,
    connectionTimeoutMillis: settings.timeoutMs,
    // The store gives up at timeoutMs with its own message; the pool frees the connection soon after.
    query_timeout: settings.timeoutMs + 1000,
    application_name: 'express-access-gateway',
    // Idle connections do not keep the process alive (a host that forgets close() still exits).
    allowExitOnIdle: true,
  });
  pool.on('error', settings.onError);
  return pool as unknown as PgPoolLike;
}
