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

/** Where a record's JSON line is in bytes written to the record journal (see `RecordJournal`). */
export interface JournalLine {
  readonly bytes: Buffer;
  readonly start: number;
  readonly end: number;
}

/** The JSON text of values, with the strings PostgreSQL would refuse made safe (U+FFFD in their place). */
export function safeJson(value: unknown): string {
  return safeJsonText(JSON.stringify(value));
}

/** JSON text (one value, or lines of values) with the escapes PostgreSQL would refuse made safe. */
export function safeJsonText(json: string): string {
  if (!json.includes('\\u0000') && !/\\u[dD][89a-fA-F]/.test(json)) return json;
  return json.replace(UNSAFE_ESCAPE, '$1\\ufffd');
}

/** A record that cannot be written as JSON: it cannot be stored. */
export class InvalidRecordError extends TypeError {
  override readonly name = 'InvalidRecordError';
}

/**
 * The one parameter of a batch insert: the JSON array of `records`. Records written to the journal
 * (`lineOf` finds their lines) are copied from the bytes written, once, into a `jsonb` value in
 * PostgreSQL's binary form (a version byte, then the text); other batches are JSON text.
 *
 * @throws InvalidRecordError when a record cannot be written as JSON.
 */
export function recordsParameter(
  records: readonly TransactionRecord[],
  lineOf?: (record: TransactionRecord) => JournalLine | undefined,
): string | Buffer {
  try {
    if (lineOf !== undefined && records.length > 0 && lineOf(records[0]!) !== undefined) return journaledArray(records, lineOf);
    return safeJson(records);
  } catch (error) {
    throw new InvalidRecordError(`A record cannot be stored: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Version 1 of `jsonb`'s binary form: this byte, then the JSON text. */
const JSONB_VERSION = 1;
const COMMA = 0x2c;

/** The binary `jsonb` array of records, their journal lines copied once (a record not journaled made now). */
function journaledArray(records: readonly TransactionRecord[], lineOf: (record: TransactionRecord) => JournalLine | undefined): Buffer {
  const lines = records.map((record): JournalLine => {
    const line = lineOf(record);
    if (line !== undefined) return line;
    const bytes = Buffer.from(safeJson(record));
    return { bytes, start: 0, end: bytes.length };
  });
  // The version byte, the brackets and a comma between lines.
  let size = 2 + records.length;
  for (const line of lines) size += line.end - line.start;
  const array = Buffer.allocUnsafe(size);
  array[0] = JSONB_VERSION;
  array[1] = 0x5b; // [
  let at = 2;
  for (let i = 0; i < lines.length; i++) {
    if (i > 0) array[at++] = COMMA;
    const line = lines[i]!;
    at += line.bytes.copy(array, at, line.start, line.end);
  }
  array[at] = 0x5d; // ]
  return array;
}
