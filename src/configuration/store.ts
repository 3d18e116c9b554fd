/**
 * Where the configuration the console edits lives, with its versions: every save is a version
 * (author, time, comment, the whole document and its policy texts), and any version can be read
 * back, compared and restored. {@link FileConfigStore} keeps the JSON file the gateway reads, and
 * its versions beside it.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../config/errors.js';
import { parseJsonText } from '../config/json-syntax.js';
import type { GatewayConfig } from '../config/types.js';
import { resolveConfig, type ResolveConfigOptions } from '../config/validate.js';
import { logger } from '../log.js';
import { configDigest } from './digest.js';
import { editJson } from './json-edit.js';

const log = logger('configuration');

/** What a version is: who saved it, when, why. */
export interface ConfigVersion {
  /** Its number, from 1. */
  version: number;
  /** Who saved it (a user name; `(outside the console)` for a change found in the file). */
  author: string;
  /** When, ISO 8601 UTC. */
  time: string;
  /** The comment given at the save. */
  comment: string;
  /**
   * The digest of the configuration as a gateway resolves it (`''` when it did not resolve here):
   * a node runs this version when its digest is the same.
   */
  digest: string;
  /** The SHA-256 of the document and policy texts as saved (tells a change made outside the console). */
  content: string;
}

/** A version with its content. */
export interface ConfigSnapshot {
  /** Who, when, why. */
  meta: ConfigVersion;
  /** The configuration document, secrets included (never served as is: see `withoutSecrets`). */
  document: GatewayConfig;
  /** The texts of the policy files it names, by their path in the document. */
  policies: Record<string, string>;
}

/** What a save writes: the whole document, and the policy texts that change. */
export interface ConfigProposal {
  /** The new document. */
  document: GatewayConfig;
  /** New texts of policy files, by their path in the document (the others stay as they are). */
  policies?: Record<string, string>;
}

/** Thrown by a save whose expected version is no longer the latest (someone saved meanwhile). */
export class VersionConflictError extends Error {
  /** Always `ERR_CONFIG_VERSION_CONFLICT`. */
  readonly code = 'ERR_CONFIG_VERSION_CONFLICT' as const;
  constructor(
    /** The version the save expected to replace. */
    readonly expected: number,
    /** The latest version. */
    readonly latest: number,
  ) {
    super(`version ${expected} is no longer the latest (${latest} is): reload and apply the change again`);
  }
}

/**
 * A configuration source with versions, as the configuration console uses it. Given as
 * `createGateway({ config })`, the gateway also loads from it (see `ConfigDocumentSource`).
 */
export interface ConfigStore {
  /** Folder that relative policy paths resolve from (where files are read: a database keeps its own). */
  readonly baseDir: string;
  /** Names the source in messages (a file path, a table). */
  readonly label: string;
  /** The configuration saved now (a change made outside the console is first recorded as a version). */
  current(): Promise<ConfigSnapshot>;
  /** Every version, newest first. */
  list(): Promise<ConfigVersion[]>;
  /** One version, or `undefined`. */
  get(version: number): Promise<ConfigSnapshot | undefined>;
  /**
   * Saves a new version (the proposal must already be validated). With `expected`, throws
   * {@link VersionConflictError} when the latest version is another one.
   */
  save(proposal: ConfigProposal, meta: { author: string; comment: string }, expected?: number): Promise<ConfigVersion>;
}

/** Whether `value` is a {@link ConfigStore} (current, list, get and save). */
export function isConfigStore(value: unknown): value is ConfigStore {
  const v = value as Record<string, unknown> | null;
  return v !== null && typeof v === 'object' && ['current', 'list', 'get', 'save'].every((name) => typeof v[name] === 'function');
}

/**
 * A policy path the console reads and writes: relative, inside the configuration's folder, letters,
 * digits and `._-` per segment, ending in `.xml`. Others (absolute, `..`) are read by the gateway
 * but neither shown nor written by the console.
 */
export const POLICY_PATH = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*\.xml$/;

/** The policy paths a document names (policies and references of its XACML APIs). */
export function policyPaths(document: GatewayConfig): string[] {
  const out = new Set<string>();
  for (const api of Array.isArray(document?.apis) ? document.apis : []) {
    const az = api?.authorization;
    if (az?.mode !== 'xacml-Policy') continue;
    if (typeof az.policy === 'string') out.add(az.policy);
    for (const ref of Array.isArray(az.references) ? az.references : []) if (typeof ref === 'string') out.add(ref);
  }
  return [...out];
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The content hash of a document and its policies. */
export function contentHash(document: GatewayConfig, policies: Record<string, string>): string {
  const sorted = Object.fromEntries(
    Object.keys(policies)
      .sort()
      .map((k) => [k, policies[k]]),
  );
  return sha256(JSON.stringify({ document, policies: sorted }));
}

/** Writes a file whole or not at all: a temporary file, synced, renamed over it. */
export async function writeAtomic(file: string, text: string, mode = 0o644): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temporary, 'wx', mode);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, file);
  } catch (err) {
    await unlink(temporary).catch(() => undefined);
    throw err;
  }
}

/**
 * The digest a gateway would compute for this document, read as the store's gateway reads it
 * (policies from `baseDir`, or from the store's own texts), or `''` when it does not resolve here.
 */
export async function digestOf(document: GatewayConfig, options: ResolveConfigOptions): Promise<string> {
  try {
    return configDigest(await resolveConfig(structuredClone(document), options));
  } catch {
    return '';
  }
}

const VERSION_FILE = /^v(\d{6,})\.json$/;

/**
 * The configuration in its JSON file (the one `createGateway` reads), its versions in the folder
 * `<file>.versions/` beside it, one JSON file each (mode 0600: they hold the file's secrets).
 * Saves write the policy files, then the configuration, each atomically; the gateway reads them
 * at its next ResetAllCaches or expiry.
 */
export class FileConfigStore implements ConfigStore {
  /** The configuration file (absolute). */
  readonly file: string;
  /** Its folder: relative policy paths resolve from it. */
  readonly baseDir: string;
  /** The file's path, in messages. */
  readonly label: string;
  readonly #versions: string;
  #queue: Promise<unknown> = Promise.resolve();

  /** @param file - the configuration file the gateway reads (`createGateway({ config })`). */
  constructor(file: string) {
    this.file = path.resolve(file);
    this.baseDir = path.dirname(this.file);
    this.label = this.file;
    this.#versions = `${this.file}.versions`;
  }

  /** One operation at a time, in order (saves and the recording of outside changes). */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #readDisk(): Promise<{ document: GatewayConfig; policies: Record<string, string> }> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      throw new ConfigError(
        [{ path: '', message: `cannot read the file (${(err as { code?: string }).code ?? String(err)})` }],
        this.label,
        { cause: err },
      );
    }
    let document: GatewayConfig;
    try {
      document = parseJsonText(text) as GatewayConfig;
    } catch (err) {
      throw new ConfigError([{ path: '', message: `not valid JSON ${(err as Error).message}` }], this.label, { cause: err });
    }
    const policies: Record<string, string> = {};
    for (const file of policyPaths(document)) {
      if (!POLICY_PATH.test(file)) continue;
      try {
        policies[file] = await readFile(path.join(this.baseDir, file), 'utf8');
      } catch {
        // A missing policy is the validation's to report.
      }
    }
    return { document, policies };
  }

  async #numbers(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.#versions);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
    return names
      .map((name) => VERSION_FILE.exec(name)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  #versionFile(n: number): string {
    return path.join(this.#versions, `v${String(n).padStart(6, '0')}.json`);
  }

  async get(version: number): Promise<ConfigSnapshot | undefined> {
    if (!Number.isSafeInteger(version) || version < 1) return undefined;
    try {
      return JSON.parse(await readFile(this.#versionFile(version), 'utf8')) as ConfigSnapshot;
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async #write(snapshot: ConfigSnapshot): Promise<void> {
    await mkdir(this.#versions, { recursive: true, mode: 0o700 });
    // 'wx': a version is never overwritten, whoever else writes the folder.
    const handle = await open(this.#versionFile(snapshot.meta.version), 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(snapshot, null, 1)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** The latest version, after recording the file as a new one when it changed outside the console. */
  async #latest(): Promise<ConfigSnapshot> {
    const disk = await this.#readDisk();
    const content = contentHash(disk.document, disk.policies);
    const numbers = await this.#numbers();
    const last = numbers.length === 0 ? undefined : await this.get(numbers[numbers.length - 1]!);
    if (last !== undefined && last.meta.content === content) return last;
    const snapshot: ConfigSnapshot = {
      meta: {
        version: (last?.meta.version ?? 0) + 1,
        author: '(outside the console)',
        time: new Date().toISOString(),
        comment: last === undefined ? 'the configuration file as found' : 'changed outside the console',
        digest: await digestOf(disk.document, { baseDir: this.baseDir }),
        content,
      },
      ...disk,
    };
    await this.#write(snapshot);
    log('recorded %s as version %d', this.label, snapshot.meta.version);
    return snapshot;
  }

  current(): Promise<ConfigSnapshot> {
    return this.#serial(() => this.#latest());
  }

  async list(): Promise<ConfigVersion[]> {
    await this.current();
    const numbers = await this.#numbers();
    const out: ConfigVersion[] = [];
    for (const n of numbers.reverse()) {
      const snapshot = await this.get(n);
      if (snapshot !== undefined) out.push(snapshot.meta);
    }
    return out;
  }

  save(proposal: ConfigProposal, meta: { author: string; comment: string }, expected?: number): Promise<ConfigVersion> {
    return this.#serial(async () => {
      const latest = await this.#latest();
      if (expected !== undefined && expected !== latest.meta.version) throw new VersionConflictError(expected, latest.meta.version);
      const onDisk = await readFile(this.file, 'utf8');
      // The file keeps its own formatting: only the values that changed are rewritten (json-edit.ts).
      const written = editJson(onDisk, JSON.parse(onDisk), proposal.document);
      // The version holds the document as the file now reads (its key order), as the next read hashes it.
      const document = JSON.parse(written) as GatewayConfig;
      const policies: Record<string, string> = {};
      for (const file of policyPaths(document)) {
        const text = proposal.policies?.[file] ?? latest.policies[file];
        if (text !== undefined) policies[file] = text;
      }
      // Policies first: a gateway that reloads in between reads the old document, which names none of the new files.
      for (const [file, text] of Object.entries(proposal.policies ?? {})) {
        if (!POLICY_PATH.test(file)) throw new TypeError(`${file}: not a policy path the console writes`);
        if (latest.policies[file] !== text) await writeAtomic(path.join(this.baseDir, file), text);
      }
      await writeAtomic(this.file, written, 0o600);
      const snapshot: ConfigSnapshot = {
        meta: {
          version: latest.meta.version + 1,
          author: meta.author,
          time: new Date().toISOString(),
          comment: meta.comment,
          digest: await digestOf(document, { baseDir: this.baseDir }),
          content: contentHash(document, policies),
        },
        document,
        policies,
      };
      await this.#write(snapshot);
      log('saved version %d of %s by %s', snapshot.meta.version, this.label, meta.author);
      return snapshot.meta;
    });
  }
}
