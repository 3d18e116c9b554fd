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
import { readTls } from './tls.js';

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

/** With `--tls-*`: whether the certificate, key and client CA can be read and used together. */
async function tlsCheck(settings: ServeSettings): Promise<{ ok: boolean; lines: string[] }> {
  if (settings.tls === undefined) return { ok: true, lines: [] };
  try {
    await readTls({ cert: settings.tls.cert, key: settings.tls.key, clientCa: settings.tls.clientCa, clientAuth: settings.tls.clientAuth });
    return { ok: true, lines: ['  tls: ok'] };
  } catch (err) {
    return { ok: false, lines: [`  tls: ${(err as Error).message.replace(/^serveGateway: /, '')}`] };
  }
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
      const tls = await tlsCheck(settings);
      write(`${[...lines, ...tls.lines].join('\n')}\n`);
      return ok && tls.ok ? 0 : 2;
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
