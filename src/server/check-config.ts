/**
 * `serve --check-config`: the configuration checked as a start would check it, without serving:
 * loaded and compiled (every problem with its path), each token policy's authorization server
 * reached (`TokenPolicy.check`), the warnings listed. Prints to stdout; exit 0 or 2.
 *
 * @module
 */
import path from 'node:path';
import { ConfigError } from '../config/errors.js';
import type { PostgresConfigSource } from '../configuration/postgres-source.js';
import { createGateway } from '../gateway/create-gateway.js';
import type { GatewayCheck } from '../gateway/readiness.js';
import { postgresConfigSource } from './environment.js';
import type { ServeSettings } from './settings.js';

/** The lines of a check's result, and whether it passed. */
export function checkReport(where: string, result: GatewayCheck): { ok: boolean; lines: string[] } {
  const failing = result.tokenPolicies.filter((check) => !check.ok);
  const lines = [
    result.ok ? `configuration ok: ${where}` : `configuration not usable: ${where}: ${failing.length} problem(s)`,
    ...result.tokenPolicies.map((check) =>
      check.ok ? `  token policy ${check.policy}: ok` : `  token policy ${check.policy}: ${check.cause ?? 'failed'}`,
    ),
    ...result.warnings.map(({ path: at, message }) => `  warning: ${at}: ${message}`),
  ];
  return { ok: result.ok, lines };
}

/** Checks the configuration of `settings`; resolves with the exit code (0 usable, 2 not). */
export async function checkConfigMain(settings: ServeSettings, write: (text: string) => void): Promise<number> {
  let source: PostgresConfigSource | undefined;
  try {
    source = settings.configSource === 'postgres' ? await postgresConfigSource(process.env, settings.configFile) : undefined;
    const where = source === undefined ? settings.configFile! : source.label;
    const gateway = createGateway({
      ...(source === undefined ? { config: settings.configFile!, baseDir: path.dirname(settings.configFile!) } : { config: source }),
      metrics: false,
    });
    try {
      const { ok, lines } = checkReport(where, await gateway.check());
      write(`${lines.join('\n')}\n`);
      return ok ? 0 : 2;
    } finally {
      await gateway.close();
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) {
      write(`configuration not usable: ${(err as Error)?.message ?? String(err)}\n`);
      return 2;
    }
    const issues = err.issues.map((issue) => `  ${issue.path === '' ? '(document)' : issue.path}: ${issue.message}`);
    write(
      `configuration not usable${err.source === undefined ? '' : `: ${err.source}`}: ${err.issues.length} problem(s)\n${issues.join('\n')}\n`,
    );
    return 2;
  } finally {
    await source?.close().catch(() => undefined);
  }
}
