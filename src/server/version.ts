/**
 * The package's version, for `--version`, the start record and the spans' `service.version`.
 *
 * @module
 */
import { readFileSync } from 'node:fs';

/** The `version` of the package.json two folders up (from src/server/ and from dist/server/ alike). */
export function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  const version = (JSON.parse(text) as { version?: unknown }).version;
  return typeof version === 'string' ? version : 'unknown';
}
