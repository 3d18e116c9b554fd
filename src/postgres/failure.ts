/**
 * What a failed statement means: the database is unusable for now (a timeout, a lost connection, a
 * missing table), or the values it carried were refused (retrying them would fail forever).
 *
 * @module
 */

/** A statement that took longer than a store's `queryTimeoutMs` (the server hangs). */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError';
  /** Stable code. */
  readonly code = 'ERR_PG_QUERY_TIMEOUT';
}

/** Rejects with {@link QueryTimeoutError} when `promise` has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new QueryTimeoutError(`${what}: no answer within ${ms} ms`)), ms);
  });
  // The statement may still settle later: its outcome is of no interest any more.
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Whether the records of the statement were refused (a value PostgreSQL cannot take, a missing
 * field): SQLSTATE classes 22 (data exception), 23 (integrity constraint) and 54 (program limit,
 * a value too large). Anything else (connection refused or lost, timeout, server shutting down,
 * table missing) is the database's state, not the records'.
 */
export function isRecordRefused(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && (state.startsWith('22') || state.startsWith('23') || state.startsWith('54'));
}

/** Whether the table (or its schema) is missing or not as expected: it must be migrated again. */
export function isSchemaMissing(error: unknown): boolean {
  const state = sqlState(error);
  return state === '42P01' || state === '3F000' || state === '42703';
}

/** A short description for logs (never a record's content). */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const state = sqlState(error);
    return state === undefined ? error.message : `${error.message} (SQLSTATE ${state})`;
  }
  return String(error);
}
