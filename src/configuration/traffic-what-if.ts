/**
 * What-if of a draft traffic policy: how many of the transactions recorded over a past window it
 * would have refused, and in which groups. The transactions are read from the store on the
 * gateway's event loop, one page at a time, newest first, at most a bounded number of them
 * ({@link readTrafficWhatIfRecords}), keeping only the facts a policy reads; the draft is checked
 * with the configuration and simulated ({@link simulateTrafficPolicy}) in an operators' worker
 * thread ({@link trafficWhatIf}). Nothing is saved, nothing is counted in the live store.
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
  /** The transactions, newest first, with only the facts a policy reads. */
  transactions: SimulatedTransaction[];
  /** Records of the window read (those left out included). */
  read: number;
  /** Of those, records of requests that never reached traffic control (refused at the token, the instance cap, or unknown). */
  beforeTrafficControl: number;
  /** Set when the window holds more records than `limit`: only the newest were read. */
  truncated: boolean;
}

/** What a draft policy reads of a record besides the fixed facts. */
export interface FactsNeeded {
  /** The token's claims (`claim:<name>` in `groupBy`). */
  claims: boolean;
  /** The recorded request headers (`header:<name>` in `groupBy`). */
  headers: boolean;
}

/** What `policy` reads of a record besides the fixed facts. */
export function factsNeeded(policy: { groupBy?: unknown }): FactsNeeded {
  const groupBy = Array.isArray(policy.groupBy) ? policy.groupBy.filter((g): g is string => typeof g === 'string') : [];
  return { claims: groupBy.some((g) => g.startsWith('claim:')), headers: groupBy.some((g) => g.startsWith('header:')) };
}

function simulated(record: TransactionRecord & { api: NonNullable<TransactionRecord['api']> }, needed: FactsNeeded): SimulatedTransaction {
  const token = record.tokenInfo;
  // The claims as the gateway's facts read them: introspection's over the JWT's over UserInfo's.
  const claims = needed.claims && token !== undefined ? { ...token.userInfo, ...token.jwt, ...token.introspection } : undefined;
  const headers = needed.headers ? record.incoming?.headers : undefined;
  return {
    startedAt: record.startedAt,
    durationMs: record.durationMs,
    api: apiKey(record.api),
    operation: record.operation,
    clientId: record.sender.clientId,
    subject: record.sender.subject,
    issuer: record.sender.issuer,
    clientAddress: record.clientAddress,
    ...(claims === undefined ? {} : { claims }),
    ...(headers === undefined ? {} : { headers }),
  };
}

/**
 * Reads the transactions that started in `[from, to]` (of `api` only, when given), newest first, at
 * most `limit`, one page at a time (the event loop gets a turn between pages), keeping only what
 * the simulation reads: they are handed to another thread.
 */
export async function readTrafficWhatIfRecords(
  store: TransactionStore,
  window: { from: number; to: number },
  limit: number,
  api: string | undefined,
  needed: FactsNeeded,
): Promise<TrafficWhatIfRecords> {
  const out: TrafficWhatIfRecords = { transactions: [], read: 0, beforeTrafficControl: 0, truncated: false };
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
    for (const record of page.items) {
      // The store's `api` filter matches by prefix (`v1` also finds `v10`): another API's records are not read.
      if (record.api === undefined || (api !== undefined && apiKey(record.api) !== api)) continue;
      if (out.read >= limit) {
        out.truncated = true;
        break;
      }
      out.read++;
      if (BEFORE_TRAFFIC.has(record.outcome.code) || record.errorCode === 'ERR_INSTANCE_BUSY') out.beforeTrafficControl++;
      else out.transactions.push(simulated(record as TransactionRecord & { api: NonNullable<TransactionRecord['api']> }, needed));
    }
    cursor = page.next;
  } while (cursor !== undefined && !out.truncated);
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
export function trafficWhatIf(
  draft: TrafficDraft,
  transactions: readonly SimulatedTransaction[],
): { simulation: TrafficSimulation } | { issues: ProposalIssue[] } {
  try {
    checkConfig(draft.document);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // Only the draft's own issues: the rest of the saved configuration is not what is asked.
    const own = err.issues.filter((i) => i.path === draft.at || i.path.startsWith(`${draft.at}.`));
    if (own.length > 0) return { issues: own };
  }
  return {
    simulation: simulateTrafficPolicy(draft.policy, transactions, {
      ...(draft.api === undefined ? {} : { api: draft.api }),
      topGroups: TRAFFIC_WHAT_IF_GROUPS,
    }),
  };
}
