/**
 * The logs of `express-access-gateway serve`: pino, one JSON object a line on stdout (`level` by
 * name, `time` in ISO 8601, `event`, `msg`), or, with `--log-format pretty`, the same records as
 * readable lines for a terminal.
 *
 * @module
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { GatewayLogger } from '../log.js';
import type { LogLevel } from './settings.js';

/** Fields every record has: not repeated as `key=value` by the pretty format. */
const OWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'event', 'err', 'issues']);

/** A value of the pretty format: bare when it is one word, else quoted as JSON. */
function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/**
 * One JSON record as a readable line: `12:00:00.000 INFO  <msg>  event=<event> key=value...`, an
 * error's stack on the lines below.
 */
export function prettyLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof record['time'] === 'string' ? record['time'].slice(11, 23) : new Date().toISOString().slice(11, 23);
  const level = String(record['level'] ?? '').toUpperCase();
  const fields = Object.entries(record)
    .filter(([key]) => !OWN.has(key))
    .map(([key, value]) => `${key}=${shown(value)}`);
  if (record['event'] !== undefined) fields.unshift(`event=${shown(record['event'])}`);
  const stack = (record['err'] as { stack?: unknown } | undefined)?.stack;
  const below = typeof stack === 'string' ? `\n    ${stack.split('\n').join('\n    ')}` : '';
  return `${time} ${level.padEnd(5)} ${String(record['msg'] ?? '')}${fields.length === 0 ? '' : `  ${fields.join(' ')}`}${below}\n`;
}

/** Writes each record as a pretty line on stdout. */
function prettyStdout(): DestinationStream {
  return { write: (line: string) => void process.stdout.write(prettyLine(line)) };
}

/**
 * The logger of a `serve` process. Synchronous writes: the last records before an exit are not lost.
 * The access log (`access`) has a logger of its own at `info`, whatever `level` says.
 */
export function serveLoggers(level: LogLevel, format: 'json' | 'pretty'): { log: Logger & GatewayLogger; access: GatewayLogger } {
  const destination = format === 'pretty' ? prettyStdout() : pino.destination({ fd: 1, sync: true });
  const options = {
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  const log = pino({ ...options, level }, destination);
  const access = pino({ ...options, level: 'info' }, destination);
  return { log, access };
}
