/**
 * A record as a row of the table: the searchable columns and the whole record as JSON, in a form
 * PostgreSQL takes whatever the record holds.
 *
 * @module
 */
import { apiKey, type TransactionRecord } from '../types.js';

/** One row, keyed by column; `record` is the whole record. JSON-safe (see {@link rowsJson}). */
export interface Row {
  id: string;
  message_id: string;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  node_id: string | null;
  api: string | null;
  operation: string | null;
  method: string;
  status: number | null;
  outcome: string;
  gateway_status: string | null;
  subject: string | null;
  client_id: string | null;
  username: string | null;
  issuer: string | null;
  client_address: string | null;
  record: TransactionRecord;
}

/** The columns of a row, in table order, as the insert lists them. */
export const ROW_COLUMNS = [
  'id',
  'message_id',
  'started_at',
  'ended_at',
  'duration_ms',
  'node_id',
  'api',
  'operation',
  'method',
  'status',
  'outcome',
  'gateway_status',
  'subject',
  'client_id',
  'username',
  'issuer',
  'client_address',
  'record',
] as const satisfies ReadonlyArray<keyof Row>;

/** SQL types of the columns, for reading rows out of a JSON parameter. */
export const ROW_TYPES: Readonly<Record<(typeof ROW_COLUMNS)[number], string>> = {
  id: 'text',
  message_id: 'text',
  started_at: 'timestamptz',
  ended_at: 'timestamptz',
  duration_ms: 'integer',
  node_id: 'text',
  api: 'text',
  operation: 'text',
  method: 'text',
  status: 'smallint',
  outcome: 'text',
  gateway_status: 'text',
  subject: 'text',
  client_id: 'text',
  username: 'text',
  issuer: 'text',
  client_address: 'text',
  record: 'jsonb',
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The row of a record. */
export function toRow(record: TransactionRecord): Row {
  return {
    id: record.id,
    message_id: record.messageId,
    started_at: iso(record.startedAt),
    ended_at: iso(record.endedAt),
    duration_ms: Math.round(record.durationMs),
    node_id: record.nodeId ?? null,
    api: record.api === undefined ? null : apiKey(record.api),
    operation: record.operation ?? null,
    method: record.method,
    status: record.status,
    outcome: record.outcome.code,
    gateway_status: record.gatewayStatus ?? null,
    subject: record.sender.subject ?? null,
    client_id: record.sender.clientId ?? null,
    username: record.sender.username ?? null,
    issuer: record.sender.issuer ?? null,
    client_address: record.clientAddress ?? null,
    record,
  };
}

// PostgreSQL text and jsonb refuse NUL characters and unpaired surrogates, which JSON.stringify
// writes as the escapes `\u0000` and `\ud800`-`\udfff` (a paired surrogate is written as it is): a
// claim or header holding one must not make its batch fail. The escapes are replaced in the JSON
// text, which costs one search when there are none (a replacer function would cost a call per value).
// An escape is one when an even number of backslashes (escaped backslashes) comes before it.
const UNSAFE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g;

/** The JSON text of values, with the strings PostgreSQL would refuse made safe (U+FFFD in their place). */
export function safeJson(value: unknown): string {
  const json = JSON.stringify(value);
  if (!json.includes('\\u0000') && !/\\u[dD][89a-fA-F]/.test(json)) return json;
  return json.replace(UNSAFE_ESCAPE, '$1\\ufffd');
}

/** A record that is not a {@link TransactionRecord} (a field missing): it cannot be stored. */
export class InvalidRecordError extends TypeError {
  override readonly name = 'InvalidRecordError';
}

/**
 * The JSON array of rows of `records` (the one parameter of a batch insert).
 *
 * @throws InvalidRecordError when a record lacks a field its row needs.
 */
export function rowsJson(records: readonly TransactionRecord[]): string {
  try {
    return safeJson(records.map(toRow));
  } catch (error) {
    throw new InvalidRecordError(`A record cannot be stored: ${error instanceof Error ? error.message : String(error)}`);
  }
}
