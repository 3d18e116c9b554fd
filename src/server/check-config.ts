/**
 * `serve --check-config`: the configuration checked as a start would check it, without serving:
 * loaded and compiled (every problem with its path), each token policy's authorization server
 * reached (`TokenPolicy.check`), the TLS files read (with `--tls-*`), the warnings listed. Prints to
 * stdout once everything is checked, so that "configuration ok" is never followed by a problem;
 * exit 0 or 2 (docs/deployment.md, "Checking a configuration: `--check-config`").
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

/** One line of the report below its first, and whether it is a problem. */
interface Finding {
  readonly line: string;
  readonly problem: boolean;
}

/** What a gateway check found: each token policy's result, then the warnings. */
export function checkFindings(result: GatewayCheck): Finding[] {
  return [
    ...result.tokenPolicies.map((check) =>
      check.ok
        ? { line: `token policy ${check.policy}: ok`, problem: false }
        : { line: `token policy ${check.policy}: ${check.cause ?? 'failed'}`, problem: true },
    ),
    ...result.warnings.map(({ path: at, message }) => ({ line: `warning: ${at}: ${message}`, problem: false })),
  ];
}

/**
 * With `--tls-*`: whether the certificate, key and client CA can be read and used together. The
 * error already names the part (`tls.key: ...`, `tls: ...`): it is the line, without the
 * library's `serveGateway: `.
 */
async function tlsFindings(settings: ServeSettings): Promise<Finding[]> {
  if (settings.tls === undefined) return [];
  try {
    await readTls({ cert: settings.tls.cert, key: settings.tls.key, clientCa: settings.tls.clientCa, clientAuth: settings.tls.clientAuth });
    return [{ line: 'tls: ok', problem: false }];
  } catch (err) {
    return [{ line: (err as Error).message.replace(/^serveGateway: /, ''), problem: true }];
  }
}

/** The configuration's findings, and its name (the file, or the database's label). */
async function configFindings(settings: ServeSettings): Promise<{ where: string | undefined; findings: Finding[] }> {
  let source: PostgresConfigSource | undefined;
  let where = settings.configFile;
  try {
    source = settings.configSource === 'postgres' ? await postgresConfigSource(process.env, settings.configFile) : undefined;
    where = source === undefined ? settings.configFile! : source.label;
    const gateway = createGateway({
      ...(source === undefined ? { config: settings.configFile!, baseDir: path.dirname(settings.configFile!) } : { config: source }),
      metrics: false,
    });
    try {
      return { where, findings: checkFindings(await gateway.check()) };
    } finally {
      await gateway.close();
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) return { where, findings: [{ line: (err as Error)?.message ?? String(err), problem: true }] };
    return {
      where: err.source ?? where,
      findings: err.issues.map((issue) => ({ line: `${issue.path === '' ? '(document)' : issue.path}: ${issue.message}`, problem: true })),
    };
  } finally {
    await source?.close().catch(() => undefined);
  }
}

/** Checks the configuration of `settings`; resolves with the exit code (0 usable, 2 not). */
export async function checkConfigMain(settings: ServeSettings, write: (text: string) => void): Promise<number> {
  const { where, findings } = await configFindings(settings);
  const all = [...findings, ...(await tlsFindings(settings))];
  const problems = all.filter((finding) => finding.problem).length;
  const named = where === undefined ? '' : `: ${where}`;
  const head = problems === 0 ? `configuration ok${named}` : `configuration not usable${named}: ${problems} problem(s)`;
  write(`${[head, ...all.map(({ line }) => `  ${line}`)].join('\n')}\n`);
  return problems === 0 ? 0 : 2;
}
