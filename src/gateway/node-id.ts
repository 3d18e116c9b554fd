/**
 * The id of a gateway instance when none is given: the host name and the process id, which tell
 * apart the instances of one host and the processes of `--workers`.
 *
 * @module
 */
import { hostname } from 'node:os';

/** `<host name>-<pid>`. */
export function defaultNodeId(): string {
  return `${hostname()}-${process.pid}`;
}
