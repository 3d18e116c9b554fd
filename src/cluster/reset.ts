/**
 * The messages of a cluster-wide reset: the broadcast `{ resetId, generation, origin }` on
 * `<prefix>reset`, and each node's report pushed to the list `<prefix>reset:ack:<resetId>`
 * (a list, not a channel: a report pushed before the origin looks is not lost), which the
 * origin reads until every live node has answered or its wait is over. The broadcast is also kept
 * at `<prefix>reset:last` for a day: a node that missed it (its pub/sub connection was down) finds
 * the new generation at its next heartbeat and answers it from there.
 *
 * Every message, report and kept broadcast is sealed with the cluster secret (`seal.ts`): one
 * that does not verify is ignored, so no other Redis client can reset the instances or fake a
 * node's report.
 *
 * @module
 */
import type { NodeDescription } from './registry.js';
import type { RedisConnection } from './redis.js';
import type { ClusterSeal } from './seal.js';

/** The reset broadcast. */
export interface ResetMessage {
  /** Id of this reset (names the list of reports). */
  resetId: string;
  /** The cluster generation it starts. */
  generation: number;
  /** Id of the node that asked for it. */
  origin: string;
}

/** What one node says of a reset. */
export interface NodeResetReport {
  /** The node's id. */
  nodeId: string;
  /** Whether its reset succeeded (`onReset` resolved). */
  applied: boolean;
  /** Why it did not (the message of `onReset`'s rejection). */
  error?: string;
  /** What `onReset` resolved with (for a gateway, its reset result), when JSON. */
  result?: unknown;
  /** The node's description after the reset. */
  config: NodeDescription;
}

/** The answer of `GatewayCluster.resetAll`. */
export interface ClusterResetResult {
  /** Id of the reset. */
  resetId: string;
  /** The generation it started; absent when Redis could not be reached. */
  generation?: number;
  /**
   * `sent`: the other nodes were told (and those that missed the message apply it at their next
   * heartbeat). `deferred`: Redis could not be reached; this node was reset, and the others will
   * be when Redis is back (this node announces it then; meanwhile it shares no token result).
   */
  broadcast: 'sent' | 'deferred';
  /** The reports received: this node's first, then the others' in the order they came. */
  nodes: NodeResetReport[];
  /** Live nodes (per the registry, when the reset started) that did not report in time. */
  missing: string[];
  /**
   * Set when the registry could not be read: the other nodes were told, and `nodes` holds the
   * reports that came within the wait, but which nodes are live (and so `missing`) is unknown.
   */
  nodesUnknown?: true;
}

const POLL_MS = 25;

/** The channel of reset broadcasts. */
export function resetChannel(redis: RedisConnection): string {
  return `${redis.keyPrefix}reset`;
}

/** The last broadcast, kept a little while for the nodes that missed it. */
export function lastResetKey(redis: RedisConnection): string {
  return `${redis.keyPrefix}reset:last`;
}

/** The list of one reset's reports. */
export function reportList(redis: RedisConnection, resetId: string): string {
  return `${redis.keyPrefix}reset:ack:${resetId}`;
}

/** A broadcast read at `place` (the channel, or the kept one's key), or `undefined` when it is not one that verifies. */
export function openResetMessage(seal: ClusterSeal, place: string, text: unknown): ResetMessage | undefined {
  const opened = seal.open('reset', place, text);
  if (opened === undefined) return undefined;
  try {
    const message: unknown = JSON.parse(opened.payload);
    if (message === null || typeof message !== 'object') return undefined;
    const { resetId, generation, origin } = message as Partial<ResetMessage>;
    if (typeof resetId !== 'string' || typeof origin !== 'string' || typeof generation !== 'number' || !Number.isSafeInteger(generation))
      return undefined;
    return { resetId, generation, origin };
  } catch {
    return undefined;
  }
}

/** Pushes a node's report; the list expires on its own. */
export function pushReport(redis: RedisConnection, seal: ClusterSeal, resetId: string, report: NodeResetReport, keepMs: number): void {
  const list = reportList(redis, resetId);
  void redis.command(['RPUSH', list, seal.seal('reset_report', list, JSON.stringify(report), keepMs)]);
  void redis.command(['PEXPIRE', list, String(Math.ceil(keepMs))]);
}

function openReport(seal: ClusterSeal, list: string, text: unknown): NodeResetReport | undefined {
  const opened = seal.open('reset_report', list, text);
  if (opened === undefined) return undefined;
  try {
    const report: unknown = JSON.parse(opened.payload);
    if (report === null || typeof report !== 'object') return undefined;
    const { nodeId, applied } = report as Partial<NodeResetReport>;
    return typeof nodeId === 'string' && typeof applied === 'boolean' ? (report as NodeResetReport) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads the reports of a reset until every expected node has answered or `deadline` (epoch ms)
 * passes; with `expected` undefined (the registry could not be read), every report that comes
 * until `deadline`. Reports of nodes not expected (started since) are kept too; one per node.
 */
export async function collectReports(
  redis: RedisConnection,
  seal: ClusterSeal,
  resetId: string,
  expected: readonly string[] | undefined,
  deadline: number,
): Promise<{ reports: NodeResetReport[]; missing: string[] }> {
  const reports = new Map<string, NodeResetReport>();
  const list = reportList(redis, resetId);
  let read = 0;
  for (;;) {
    const items = await redis.command(['LRANGE', list, String(read), '-1']);
    if (Array.isArray(items)) {
      read += items.length;
      for (const item of items) {
        const report = openReport(seal, list, item);
        if (report !== undefined && !reports.has(report.nodeId)) reports.set(report.nodeId, report);
      }
    }
    const missing = expected === undefined ? [] : expected.filter((id) => !reports.has(id));
    if ((expected !== undefined && missing.length === 0) || Date.now() >= deadline) return { reports: [...reports.values()], missing };
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(1, deadline - Date.now()))));
  }
}
