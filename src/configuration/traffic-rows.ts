/**
 * The transactions a traffic what-if hands to its worker, in a compact form: a structured clone
 * of 20,000 objects holding claims and headers costs the event loop a few hundred milliseconds,
 * while numbers in typed arrays and a few long strings are copied at memory speed. Each page of
 * transactions read becomes a row of numbers per transaction and the JSON text of the strings
 * first seen in that page (a value that repeats, as an API, an issuer or a tenant's claims do, is
 * written once); the worker reads them back ({@link readTransactionRows}) into the transactions
 * as they were given.
 *
 * @module
 */
import type { SimulatedTransaction } from '../traffic/simulate.js';

/** Numbers a transaction: `startedAt`, `durationMs` (`NaN`: absent), then its strings' numbers. */
const COLUMNS = 10;

/** A page of transactions, as {@link TransactionRowsWriter} wrote it. */
export interface TransactionRowsPage {
  /** The JSON array of the strings first seen in this page, numbered on from those of the pages before. */
  readonly strings: string;
  /**
   * {@link COLUMNS} numbers a transaction: `startedAt`, `durationMs` (`NaN`: absent), then the
   * numbers of its `api`, `operation`, `clientId`, `subject`, `issuer`, `clientAddress`, claims
   * (JSON text) and headers (JSON text); `-1` for an absent one.
   */
  readonly rows: Float64Array;
}

/** Transactions in their compact form, in order. */
export interface TransactionRows {
  readonly pages: TransactionRowsPage[];
}

/**
 * Writes transactions in their compact form, one page at a time: {@link add} each transaction of
 * a page, then {@link endPage}.
 */
export class TransactionRowsWriter {
  readonly #numbers = new Map<string, number>();
  #fresh: string[] = [];
  #row: number[] = [];
  /** The pages ended so far. */
  readonly rows: TransactionRows = { pages: [] };

  #number(value: string | undefined): number {
    if (value === undefined) return -1;
    let n = this.#numbers.get(value);
    if (n === undefined) {
      n = this.#numbers.size;
      this.#numbers.set(value, n);
      this.#fresh.push(value);
    }
    return n;
  }

  /**
   * Adds a transaction to the page. Its claims and headers are written as JSON; a claim that JSON
   * cannot write (a cycle or a BigInt, which no token's JSON holds) is written as `"?"`, the group
   * value the policy gives it.
   */
  add(t: SimulatedTransaction): void {
    this.#row.push(
      t.startedAt,
      t.durationMs ?? Number.NaN,
      this.#number(t.api),
      this.#number(t.operation),
      this.#number(t.clientId),
      this.#number(t.subject),
      this.#number(t.issuer),
      this.#number(t.clientAddress),
      this.#number(t.claims === undefined ? undefined : claimsJson(t.claims)),
      this.#number(t.headers === undefined ? undefined : JSON.stringify(t.headers)),
    );
  }

  /** Ends the page: its transactions and its new strings become one {@link TransactionRowsPage}. */
  endPage(): void {
    if (this.#row.length === 0) return;
    this.rows.pages.push({ strings: JSON.stringify(this.#fresh), rows: Float64Array.from(this.#row) });
    this.#fresh = [];
    this.#row = [];
  }
}

function claimsJson(claims: Readonly<Record<string, unknown>>): string {
  try {
    return JSON.stringify(claims);
  } catch {
    const writable = (value: unknown): unknown => {
      try {
        JSON.stringify(value);
        return value;
      } catch {
        return '?';
      }
    };
    return JSON.stringify(Object.fromEntries(Object.entries(claims).map(([name, value]) => [name, writable(value)])));
  }
}

/** The transactions of `rows`, as they were added (claims and headers read once per distinct value). */
export function readTransactionRows(rows: TransactionRows): SimulatedTransaction[] {
  const strings: string[] = [];
  const parsed = new Map<number, unknown>();
  const string = (n: number): string | undefined => (n < 0 ? undefined : strings[n]);
  const json = <T>(n: number): T | undefined => {
    if (n < 0) return undefined;
    if (!parsed.has(n)) parsed.set(n, JSON.parse(strings[n]!));
    return parsed.get(n) as T;
  };
  const out: SimulatedTransaction[] = [];
  for (const page of rows.pages) {
    for (const s of JSON.parse(page.strings) as string[]) strings.push(s);
    const r = page.rows;
    for (let i = 0; i + COLUMNS <= r.length; i += COLUMNS) {
      const claims = json<Record<string, unknown>>(r[i + 8]!);
      const headers = json<Record<string, string>>(r[i + 9]!);
      out.push({
        startedAt: r[i]!,
        durationMs: Number.isNaN(r[i + 1]!) ? undefined : r[i + 1]!,
        api: string(r[i + 2]!)!,
        operation: string(r[i + 3]!),
        clientId: string(r[i + 4]!),
        subject: string(r[i + 5]!),
        issuer: string(r[i + 6]!),
        clientAddress: string(r[i + 7]!),
        ...(claims === undefined ? {} : { claims }),
        ...(headers === undefined ? {} : { headers }),
      });
    }
  }
  return out;
}
