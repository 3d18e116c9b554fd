/**
 * The id of a gateway instance: on every record it writes, in its Redis keys and in the node list.
 * One rule for every place that takes one (`createGateway`, `createGatewayCluster`, `GATEWAY_NODE_ID`).
 *
 * @module
 */
import { hostname } from 'node:os';

/** What a node id may be: 1 to 200 letters, digits and `._:@-`. */
export const NODE_ID = /^[A-Za-z0-9._:@-]{1,200}$/;

/** The rule in words, for error messages. */
export const NODE_ID_RULE = 'up to 200 letters, digits and ._:@-';

/**
 * `<host name>-<pid><suffix>`, in the characters a node id may have: tells apart instances and
 * `--workers` processes (a worker's is its primary's pid and its slot, `suffix` `-w<n>`).
 */
export function defaultNodeId(pid: number = process.pid, suffix = ''): string {
  const tail = `-${pid}${suffix}`;
  return `${hostname()
    .replace(/[^A-Za-z0-9._:@-]/g, '_')
    .slice(0, 200 - tail.length)}${tail}`;
}
