/**
 * The JSON Schema of the configuration file, for editors and other tools: the schemas the gateway
 * checks a file against, as JSON (they are JSON Schema already; nothing is converted). The build
 * writes it to `dist/config.schema.json` (the package's `express-access-gateway/config.schema.json`);
 * `config.schema.json` at the repository's root is the same file, kept equal by a test, for the
 * example's `$schema`.  @internal
 *
 * @module
 */
import { writeFileSync } from 'node:fs';
import { GatewayConfigSchema } from './schema.js';

/** The configuration file's JSON Schema (draft-07), as a plain object. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    ...(JSON.parse(JSON.stringify(GatewayConfigSchema)) as Record<string, unknown>),
  };
}

/** The text of `config.schema.json`. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

/** Writes `config.schema.json` to `file` (the build's step). */
export function writeConfigJsonSchema(file: string): void {
  writeFileSync(file, configJsonSchemaText());
}
