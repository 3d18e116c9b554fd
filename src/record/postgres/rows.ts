/**
 * A record as a row of the table: the searchable columns and the whole record as JSON, in a form
 * PostgreSQL takes whatever the record holds.
 *
 * @module
 */
import type { TransactionRecord } from '../types.js';

/**
 * The columns of a row, in table order, each with its SQL expression over `r`, the record as
 * `jsonb`: the searchable columns are read out of the record by PostgreSQL, so that the gateway's
 * process only writes the records' JSON. A record lacking a field its row needs (a column `NOT
 * NULL`) or holding a value of the wrong type is refused by the database, alone (see the writer).
 */
export const ROW_COLUMNS = {
  id: `r->>'id'`,
  message_id: `r->>'messageId'`,
  started_at: `to_timestamp((r->>'startedAt')::float8 / 1000)`,
  ended_at: `to_timestamp((r->>'endedAt')::float8 / 1000)`,
  // As Math.round: halves up.
  duration_ms: `floor((r->>'durationMs')::float8 + 0.5)::integer`,
  node_id: `r->>'nodeId'`,
  // apiKey(): provider/name/vN
  api: `CASE WHEN jsonb_typeof(r->'api') = 'object' THEN (r->'api'->>'provider') || '/' || (r->'api'->>'name') || '/v' || (r->'api'->>'version') END`,
  operation: `r->>'operation'`,
  method: `r->>'method'`,
  status: `(r->>'status')::smallint`,
  outcome: `r->'outcome'->>'code'`,
  gateway_status: `r->>'gatewayStatus'`,
  subject: `r->'sender'->>'subject'`,
  client_id: `r->'sender'->>'clientId'`,
  username: `r->'sender'->>'username'`,
  issuer: `r->'sender'->>'issuer'`,
  client_address: `r->>'clientAddress'`,
  record: `r`,
} as const;

// PostgreSQL text and jsonb refuse NUL characters and unpaired surrogates, which JSON.stringify
// writes as the escapes `\u0000` and `\ud800`-`\udfff` (a paired surrogate is written as it is): a
// claim or header holding one must not make its batch fail. The escapes are replaced in the JSON
// text, which costs one search when there are none (a replacer function would cost a call per value).
// An escape is one when an even number of backslashes (escaped backslashes) comes before it.
const UNSAFE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g;

/**
 * The journal entry of a record written to the record journal: its JSON line (the same text as
 * {@link safeJson}'s, reused by the insert) and the journal file holding it until it is stored
 * (the journal's). Records are frozen: the entry is kept beside them.
 */
export interface Journaled {
  readonly json: string;
  segment: object | undefined;
}

/** The journal entries of records (see {@link Journaled}). */
export const journaled = new WeakMap<object, Journaled>();

/** The JSON text of values, with the strings PostgreSQL would refuse made safe (U+FFFD in their place). */
export function safeJson(value: unknown): string {
  const json = JSON.stringify(value);
  if (!json.includes('\\u0000') && !/\\u[dD][89a-fA-F]/.test(json)) return json;
  return json.replace(UNSAFE_ESCAPE, '$1\\ufffd');
}

/** A record that cannot be written as JSON: it cannot be stored. */
export class InvalidRecordError extends TypeError {
  override readonly name = 'InvalidRecordError';
}

/**
 * The JSON array of `records` (the one parameter of a batch insert).
 *
 * @throws InvalidRecordError when a record cannot be written as JSON.
 */
export function recordsJson(records: readonly TransactionRecord[]): string {
  // Records written to the journal carry their JSON: the batch is those lines joined.
  if (records.length > 0 && journaled.has(records[0]!)) {
    try {
      return `[${records.map((record) => journaled.get(record)?.json ?? safeJson(record)).join(',')}]`;
    } catch (error) {
      throw new InvalidRecordError(`A record cannot be stored: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  try {
    return safeJson(records);
  } catch (error) {
    throw new InvalidRecordError(`A record cannot be stored: ${error instanceof Error ? error.message : String(error)}`);
  }
}
