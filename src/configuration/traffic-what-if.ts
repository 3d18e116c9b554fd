/**
 * What-if of a draft traffic policy: how many of the transactions recorded over a past window it
 * would have refused, and in which groups. The transactions are read from the store on the
 * gateway's event loop, one page at a time with a turn of the loop between pages, newest first, at
 * most a bounded number of them ({@link readTrafficWhatIfRecords}), keeping only the facts the
 * policy reads, in a compact form that is cheap to hand over (`traffic-rows.ts`); the draft is
 * checked with the configuration and simulated ({@link simulateTrafficPolicy}) in an operators'
 * worker thread ({@link trafficWhatIf}). Nothing is saved, nothing is counted in the live store.
 *
 * @module
 */
import { ConfigError } from '../config/errors.js';
import type { GatewayConfig } from '../config/types.js';
import { checkConfig } from '../config/validate.js';
import type { OutcomeCode } from '../errors.js';
import { apiKey, MAX_PAGE_SIZE, type TransactionRecord, type TransactionStore } from '../record/types.js';
import type { TrafficPolicy } from '../traffic/schema.js';
import { simulateTrafficPolicy, type SimulatedTransaction, type TrafficSimulation } from '../traffic/simulate.js';
import type { ProposalIssue } from './proposal.js';
import { readTransactionRows, TransactionRowsWriter, type TransactionRows } from './traffic-rows.js';

/** Minutes of the window when the request names none. */
export const TRAFFIC_WHAT_IF_MINUTES = 60;
/** Longest window, in minutes: 7 days. */
export const TRAFFIC_WHAT_IF_MAX_MINUTES = 7 * 24 * 60;
/** Transactions read when the request names no `limit`. */
export const TRAFFIC_WHAT_IF_DEFAULT = 5000;
/** Most transactions one what-if reads (a larger `limit` is capped to it). */
export const TRAFFIC_WHAT_IF_MAX = 20_000;
/** Most groups in an answer. */
export const TRAFFIC_WHAT_IF_GROUPS = 20;

/**
 * Outcomes of requests that never reached traffic control: refused at the token (policies run after
 * token validation, so that they can group by its facts), or for an unknown API or operation.
 */
const BEFORE_TRAFFIC: ReadonlySet<OutcomeCode> = new Set<OutcomeCode>(['TOKEN_FAILED', 'AUTHORIZATION_SERVER_ERROR', 'NOT_FOUND']);

/** The transactions a traffic what-if simulates, as {@link readTrafficWhatIfRecords} found them. */
export interface TrafficWhatIfRecords {
  /** The transactions, newest first, with only the facts the policy reads, in their compact form (see `traffic-rows.ts`). */
  rows: TransactionRows;
  /** Records of the window read (those left out included). */
  read: number;
  /** Of those, records of requests that never reached traffic control (refused at the token, the instance cap, or unknown). */
  beforeTrafficControl: number;
  /** Set when the window holds more records than `limit`: only the newest were read. */
  truncated: boolean;
  /** `startedAt` of the oldest and the newest of the transactions, when there are some. */
  oldest?: number;
  newest?: number;
}

/** What a draft policy reads of a record besides the fixed facts. */
export interface FactsNeeded {
  /** The token's claims it reads (`claim:<name>` in `groupBy`): each name, and the first member of a dotted one. */
  claims: ReadonlySet<string>;
  /** The recorded request headers it reads (`header:<name>` in `groupBy`), in lower case. */
  headers: ReadonlySet<string>;
}

/** What `policy` reads of a record besides the fixed facts. */
export function factsNeeded(policy: { groupBy?: unknown }): FactsNeeded {
  const groupBy = Array.isArray(policy.groupBy) ? policy.groupBy.filter((g): g is string => typeof g === 'string') : [];
  const claims = new Set<string>();
  const headers = new Set<string>();
  for (const by of groupBy) {
    if (by.startsWith('claim:')) {
      const name = by.slice('claim:'.length);
      claims.add(name).add(name.split('.')[0]!);
    } else if (by.startsWith('header:')) headers.add(by.slice('header:'.length).toLowerCase());
  }
  return { claims, headers };
}

/** Sets `name` on `out` as an own member (a claim or a header may be named `__proto__`). */
function put(out: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}

/** Whether `values` has `name` as merging it (`{ ...values }`) would copy it. */
function owns(values: unknown, name: string): values is Record<string, unknown> {
  return (
    typeof values === 'object' && values !== null && Object.hasOwn(values, name) && Object.prototype.propertyIsEnumerable.call(values, name)
  );
}

/**
 * The claims the policy reads, as the gateway's facts merge them (introspection's over the JWT's
 * over UserInfo's); only those go to the worker.
 */
function claimsOf(token: TransactionRecord['tokenInfo'], names: ReadonlySet<string>): Record<string, unknown> | undefined {
  if (names.size === 0 || token === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const name of names) {
    if (owns(token.introspection, name)) put(out, name, token.introspection[name]);
    else if (owns(token.jwt, name)) put(out, name, token.jwt[name]);
    else if (owns(token.userInfo, name)) put(out, name, token.userInfo[name]);
  }
  return out;
}

/** The recorded headers the policy reads (any case), in their order. */
function headersOf(recorded: Record<string, string> | undefined, names: ReadonlySet<string>): Record<string, string> | undefined {
  if (names.size === 0 || recorded === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const name in recorded) if (Object.hasOwn(recorded, name) && names.has(name.toLowerCase())) put(out, name, recorded[name]);
  return out;
}

function simulated(record: TransactionRecord & { api: NonNullable<TransactionRecord['api']> }, needed: FactsNeeded): SimulatedTransaction {
  return {
    startedAt: record.startedAt,
    durationMs: record.durationMs,
    api: apiKey(record.api),
    operation: record.operation,
    clientId: record.sender.clientId,
    subject: record.sender.subject,
    issuer: record.sender.issuer,
    clientAddress: record.clientAddress,
    claims: claimsOf(record.tokenInfo, needed.claims),
    headers: headersOf(record.incoming?.headers, needed.headers),
  };
}

/** Records read in one turn of the event loop. */
const TURN_RECORDS = 100;

/** A turn of the event loop (a memory store answers at once: its pages would follow each other in one turn). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Reads the transactions that started in `[from, to]` (of `api` only, when given), newest first, at
 * most `limit`, one page at a time, the event loop getting a turn every {@link TURN_RECORDS}
 * records; keeps only what the simulation reads, in the compact form handed to another thread.
 */
export async function readTrafficWhatIfRecords(
  store: TransactionStore,
  window: { from: number; to: number },
  limit: number,
  api: string | undefined,
  needed: FactsNeeded,
): Promise<TrafficWhatIfRecords> {
  const out: TrafficWhatIfRecords = { rows: { pages: [] }, read: 0, beforeTrafficControl: 0, truncated: false };
  const rows = new TransactionRowsWriter();
  let cursor: string | undefined;
  do {
    const page = await store.query({
      from: window.from,
      to: window.to,
      ...(api === undefined ? {} : { api }),
      // One more than is left: a record past the bound says the window holds more.
      limit: Math.min(MAX_PAGE_SIZE, limit - out.read + 1),
      ...(cursor === undefined ? {} : { cursor }),
    });
    for (let i = 0; i < page.items.length; i++) {
      if (i > 0 && i % TURN_RECORDS === 0) await turn();
      const record = page.items[i]!;
      // The store's `api` filter matches by prefix (`v1` also finds `v10`): another API's records are not read.
      if (record.api === undefined || (api !== undefined && apiKey(record.api) !== api)) continue;
      if (out.read >= limit) {
        out.truncated = true;
        break;
      }
      out.read++;
      if (BEFORE_TRAFFIC.has(record.outcome.code) || record.errorCode === 'ERR_INSTANCE_BUSY') out.beforeTrafficControl++;
      else {
        rows.add(simulated(record as TransactionRecord & { api: NonNullable<TransactionRecord['api']> }, needed));
        out.oldest = Math.min(out.oldest ?? record.startedAt, record.startedAt);
        out.newest = Math.max(out.newest ?? record.startedAt, record.startedAt);
      }
    }
    rows.endPage();
    cursor = page.next;
    await turn();
  } while (cursor !== undefined && !out.truncated);
  out.rows = rows.rows;
  return out;
}

/** A draft in its place in the configuration: the document with the draft put in its list. */
export interface TrafficDraft {
  /** The latest saved document, with the draft put in place of the policy of its name (or added). */
  document: GatewayConfig;
  /** The draft's path in the document (`trafficControl.policies[1]`, `apis[0].trafficControl.policies[0]`). */
  at: string;
  /** The draft as given. */
  policy: TrafficPolicy;
  /** Its API's key, for an API's own policy; `undefined` for a top-level one (every API). */
  api: string | undefined;
}

/**
 * The worker's part: the draft checked with the configuration (the issues at its path), then
 * simulated over the transactions.
 */
export function trafficWhatIf(draft: TrafficDraft, rows: TransactionRows): { simulation: TrafficSimulation } | { issues: ProposalIssue[] } {
  try {
    checkConfig(draft.document);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // Only the draft's own issues: the rest of the saved configuration is not what is asked.
    const own = err.issues.filter((i) => i.path === draft.at || i.path.startsWith(`${draft.at}.`));
    if (own.length > 0) return { issues: own };
  }
  return {
    simulation: simulateTrafficPolicy(draft.policy, readTransactionRows(rows), {
      ...(draft.api === undefined ? {} : { api: draft.api }),
      topGroups: TRAFFIC_WHAT_IF_GROUPS,
    }),
  };
}
