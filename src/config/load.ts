/**
 * Where a configuration comes from: a JSON or YAML file, an object, an async loader, or a source that keeps
 * the document with its policy texts (a database).
 *
 * @module
 */
import { InvalidOptionError, optionKeys, refuseUnknownKeys } from '../options.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.js';
import { parseJsonText } from './json-syntax.js';
import type { GatewayConfig, ResolvedConfig } from './types.js';
import { resolveConfig } from './validate.js';

/** Loads the configuration document, for hosts that keep it elsewhere (a database, a secret store). */
export type ConfigLoader = () => GatewayConfig | Promise<GatewayConfig>;

/**
 * A source that keeps the configuration document together with the texts of the XACML policies it
 * names (a `ConfigStore` such as `PostgresConfigSource`): the gateway reads both from it, no file.
 */
export interface ConfigDocumentSource {
  /** Names the source in errors (never a credential). */
  readonly label: string;
  /** The configuration saved now: the document and its policy texts by their path in the document. */
  current(): Promise<{
    /** The configuration document. */
    document: GatewayConfig;
    /** The texts of the XACML policies it names, by their path in it. */
    policies: Record<string, string>;
  }>;
}

/**
 * A configuration source: the path of a JSON file, or of a YAML one (its name ends in `.yaml` or
 * `.yml`; relative paths inside it resolve from its folder), the document itself, a {@link ConfigLoader}, or a {@link ConfigDocumentSource}. A file,
 * loader or document source is read again at each reload (ResetAllCaches or expiry); an object is
 * the same document each time.
 */
export type ConfigSource = string | URL | GatewayConfig | ConfigLoader | ConfigDocumentSource;

/** Whether `source` is a {@link ConfigDocumentSource} (a document is plain JSON: it has no functions). */
export function isDocumentSource(source: unknown): source is ConfigDocumentSource {
  return source !== null && typeof source === 'object' && typeof (source as { current?: unknown }).current === 'function';
}

/** Whether a configuration file is YAML: its name ends in `.yaml` or `.yml` (any other is JSON). */
export function isYamlFile(file: string | URL): boolean {
  return /\.ya?ml$/i.test(file instanceof URL ? file.pathname : file);
}

/** Most aliases (`*name`) a YAML configuration may hold: a handful is plenty; millions are an attack. */
const MAX_YAML_ALIASES = 100;

function parseJson(text: string, label: string): unknown {
  try {
    return parseJsonText(text);
  } catch (err) {
    throw new ConfigError([{ path: '', message: `not valid JSON ${(err as Error).message}` }], label, { cause: err });
  }
}

/**
 * A YAML document with js-yaml's core schema: plain data only (no custom or language tags such as
 * `!!js/function`: they are errors), one document, a bounded number of aliases.
 */
async function parseYaml(text: string, label: string): Promise<unknown> {
  const yaml = await import('js-yaml');
  try {
    return yaml.load(text, { schema: yaml.CORE_SCHEMA, maxAliases: MAX_YAML_ALIASES, filename: label });
  } catch (err) {
    // js-yaml's message ends with an excerpt of the text around the problem: keep its first line.
    const message = String((err as Error)?.message ?? err).split('\n')[0]!;
    throw new ConfigError([{ path: '', message: `not valid YAML: ${message}` }], label, { cause: err });
  }
}

/**
 * How errors name a configuration source (`ConfigError.source`): its file's absolute path, the
 * document source's label, `loader` or `object`.  @internal
 */
export function configSourceLabel(source: ConfigSource): string {
  if (typeof source === 'string' || source instanceof URL) return path.resolve(source instanceof URL ? fileURLToPath(source) : source);
  if (typeof source === 'function') return 'loader';
  if (isDocumentSource(source)) return typeof source.label === 'string' && source.label !== '' ? source.label : 'configuration source';
  return 'object';
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /**
   * Folder that relative file paths (policies) resolve from, for an object or loader source.
   * Default: the working directory. A file source always uses the file's folder.
   */
  baseDir?: string;
}

const LOAD_CONFIG_KEYS = optionKeys<LoadConfigOptions>({ baseDir: true });

/**
 * Reads and validates a configuration: JSON or YAML syntax errors and bad fields throw a
 * {@link ConfigError} naming the file and the field.
 *
 * @example
 * ```ts
 * import { loadConfig } from 'express-access-gateway';
 *
 * const config = await loadConfig('examples/petstore/gateway.config.json');
 * console.log(config.apis.map((api) => `${api.provider}/${api.name}/v${api.version}`));
 * ```
 */
export async function loadConfig(source: ConfigSource, options: LoadConfigOptions = {}): Promise<ResolvedConfig> {
  refuseUnknownKeys('loadConfig: options', options, LOAD_CONFIG_KEYS);
  if (typeof source === 'string' || source instanceof URL) {
    const file = configSourceLabel(source);
    const label = file;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new ConfigError([{ path: '', message: `cannot read the file (${(err as { code?: string }).code ?? String(err)})` }], label, {
        cause: err,
      });
    }
    const document = isYamlFile(file) ? await parseYaml(text, label) : parseJson(text, label);
    return resolveConfig(document, { baseDir: path.dirname(file), source: label });
  }
  if (typeof source === 'function') {
    let document: unknown;
    try {
      document = await source();
    } catch (err) {
      throw new ConfigError([{ path: '', message: `the loader failed: ${(err as Error)?.message ?? String(err)}` }], 'loader', {
        cause: err,
      });
    }
    return resolveConfig(document, { ...options, source: 'loader' });
  }
  if (isDocumentSource(source)) {
    const label = configSourceLabel(source);
    let saved: { document: GatewayConfig; policies: Record<string, string> };
    try {
      saved = await source.current();
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError([{ path: '', message: `cannot read the configuration: ${(err as Error)?.message ?? String(err)}` }], label, {
        cause: err,
      });
    }
    const policies = saved?.policies !== null && typeof saved?.policies === 'object' ? saved.policies : {};
    return resolveConfig(structuredClone(saved?.document), { ...options, source: label, policies });
  }
  if (source !== null && typeof source === 'object') {
    // A copy, so that later edits of the caller's object take effect only at reload, like a file's.
    return resolveConfig(structuredClone(source), { ...options, source: 'object' });
  }
  throw new InvalidOptionError('loadConfig: source', 'must be a file path, a configuration object or a loader function');
}
