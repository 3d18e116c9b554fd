/** Shared helpers of the record tests. */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { OutcomeCode, TransactionRecord } from '../../src/index.js';
import { outcomeLabels } from '../../src/errors.js';

let counter = 0;

/** A plausible record; `overrides` replace fields. */
export function makeRecord(overrides: Partial<TransactionRecord> & { code?: OutcomeCode } = {}): TransactionRecord {
  counter++;
  const { code = 'OK', ...rest } = overrides;
  const startedAt = rest.startedAt ?? 1_700_000_000_000 + counter * 1000;
  return {
    id: `tx-${counter}`,
    messageId: `msg-${counter}`,
    startedAt,
    endedAt: startedAt + 12,
    durationMs: 12,
    method: 'GET',
    url: '/gateway/Ente/PetStore/v1/pet/1',
    status: 200,
    outcome: { code, label: outcomeLabels[code].it, en: outcomeLabels[code].en },
    aborted: false,
    sender: {},
    diagnostics: [],
    ...rest,
  };
}

/** Listens on an ephemeral loopback port; returns the base URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes a server (and its idle keep-alive connections). */
export async function close(server: Server | undefined): Promise<void> {
  if (server === undefined || !server.listening) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Polls `probe` until it returns a value (records are saved just after the response ends). */
export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what = 'condition'): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Parses RFC 4180 CSV (quoted cells, doubled quotes, CRLF) into rows of cells. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else {
      cell += c;
    }
  }
  if (cell !== '' || row.length > 0) rows.push([...row, cell]);
  return rows;
}
