/**
 * A structured logger (pino's shape: `error`/`warn`/`info`/`debug(fields, msg)` and `child`) that
 * keeps what it is given, for tests that read the gateway's log records.
 */
import type { GatewayLogger } from '../../src/index.js';

/** One record as given. */
export interface LoggedLine {
  level: string;
  fields: Record<string, unknown>;
  msg?: string | undefined;
}

/** A logger and the lines it was given, in order. */
export function memoryLog(): { lines: LoggedLine[]; log: GatewayLogger } {
  const lines: LoggedLine[] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, msg?: string): void =>
      void lines.push({ level, fields, msg });
  const log = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), child: () => log };
  return { lines, log: log as unknown as GatewayLogger };
}
