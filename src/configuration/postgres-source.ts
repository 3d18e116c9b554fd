/**
 * `PostgresConfigSource`: the configuration and its versions in a PostgreSQL table, one
 * configuration shared by every gateway instance that reads it.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type ConfigIssue } from '../config/errors.js';
import { JsonSyntaxError, parseJsonText } from '../config/json-syntax.js';
import type { GatewayConfig } from '../config/types.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import { proposalIssues } from './proposal.js';
import { postgresConnection } from '../postgres/connection.js';
import { isSchemaMissing, withTimeout } from '../postgres/failure.js';
import { createOwnPool, type PgClientLike, type PgPoolLike } from '../postgres/pool.js';
import { creationSql, lockKey, runMigrations, tableNames, type Migration, type TableNames } from '../postgres/schema.js';
import {
  POLICY_PATH,
  VersionConflictError,
  contentHash,
  digestOf,
  policyPaths,
  type ConfigProposal,
  type ConfigSnapshot,
  type ConfigStore,
  type ConfigVersion,
} from './store.js';

const log = logger('configuration');

/** Options of {@link PostgresConfigSource}. Give `connectionString` or `pool`. */
export interface PostgresConfigSourceOptions {
  /** `postgres://user:password@host:5432/database`: the source makes (and closes) its own pool. Needs the `pg` package. */
  connectionString?: string;
  /** A pool of your own (`new pg.Pool(...)`), used as it is and left open by `close()`. */
  pool?: PgPoolLike;
  /** Schema of the table (created when missing). Default `public`. */
  schema?: string;
  /** Table name (at most 40 characters: letters, digits, `_`). Default `gateway_configuration`. */
  table?: string;
  /** Longest wait (ms) for a connection or a statement: past it the read or save fails. Default 10,000. */
  queryTimeoutMs?: number;
  /**
   * A configuration file imported, with the policy files it names, as version 1 when the table
   * holds no configuration yet (one import, whatever the number of instances starting together).
   * Afterwards the table is the configuration and the file is not read again.
   */
  initialFile?: string;
}

/** Save and import: one at a time per table, whichever instance does it. */
const SAVE_LOCK = lockKey('express-access-gateway:configuration-save');
/** Connections of the pool made from a connection string: reads and a save. */
const OWN_POOL_SIZE = 2;
/** Longest author and comment kept. */
const MAX_META = 500;

/** The versions of the table, oldest first. Add new versions at the end; never edit a released one. */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // `json`, not `jsonb`: the document is kept as saved (key order, so its diffs read as written).
    statements: (n) => [
      `CREATE TABLE IF NOT EXISTS ${n.table} (
  version integer PRIMARY KEY CHECK (version > 0),
  author text NOT NULL,
  saved_at timestamptz NOT NULL DEFAULT now(),
  comment text NOT NULL,
  digest text NOT NULL,
  content text NOT NULL,
  document json NOT NULL,
  policies json NOT NULL
)`,
    ],
  },
];

/** The SQL that creates the configuration table by hand, as the source would (docs/deployment.md).  @internal */
export function configurationTableSql(names: TableNames): string {
  return creationSql(names, MIGRATIONS);
}

const META_COLUMNS = 'version, author, saved_at, comment, digest, content';

function metaOf(row: Record<string, unknown>): ConfigVersion {
  const time = row['saved_at'];
  return {
    version: Number(row['version']),
    author: String(row['author']),
    time: time instanceof Date ? time.toISOString() : new Date(String(time)).toISOString(),
    comment: String(row['comment']),
    digest: String(row['digest']),
    content: String(row['content']),
  };
}

function snapshotOf(row: Record<string, unknown>): ConfigSnapshot {
  const policies = row['policies'];
  return {
    meta: metaOf(row),
    document: row['document'] as GatewayConfig,
    policies: policies !== null && typeof policies === 'object' ? (policies as Record<string, string>) : {},
  };
}

function checkedMeta(meta: { author: string; comment: string }): { author: string; comment: string } {
  if (
    meta === null ||
    typeof meta !== 'object' ||
    typeof meta.author !== 'string' ||
    meta.author === '' ||
    typeof meta.comment !== 'string'
  ) {
    throw new TypeError('PostgresConfigSource.save: meta must be { author, comment } strings (author not empty)');
  }
  return { author: meta.author.slice(0, MAX_META), comment: meta.comment.slice(0, MAX_META) };
}

const POSTGRES_SOURCE_KEYS = optionKeys<PostgresConfigSourceOptions>({
  connectionString: true,
  pool: true,
  schema: true,
  table: true,
  queryTimeoutMs: true,
  initialFile: true,
});

/**
 * A {@link ConfigStore} in a PostgreSQL table: one configuration shared by every gateway instance
 * that reads it, each save a version (author, time, comment, the whole document and its policy
 * texts) with diff and rollback in the configuration console. The gateway loads from it when it is
 * the `config` of `createGateway` (and the console saves to it); a save is in force on each
 * instance at its next ResetAllCaches (with Redis, one reset reaches them all) or expiry.
 *
 * It creates and migrates its table itself, under an advisory lock (instances starting together
 * apply each version once); saves take a second advisory lock, so that two instances never write
 * the same version. Every statement is parameterized and given up after `queryTimeoutMs`.
 * The table holds the document as saved, token policies' client secrets included: grant it as you
 * would the configuration file, or give the secrets with `clientSecretEnv`.
 *
 * @example
 * ```ts
 * import { PostgresConfigSource, createGateway } from 'express-access-gateway';
 *
 * const source = await PostgresConfigSource.create({
 *   connectionString: process.env.DATABASE_URL,
 *   initialFile: 'gateway.config.json', // imported once, when the table is empty
 * });
 * const gateway = createGateway({ config: source, admin: { basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD! } } });
 * await gateway.ready();
 * // on shutdown
 * await gateway.close();
 * await source.close();
 * ```
 */
export class PostgresConfigSource implements ConfigStore {
  /** Schema of the table. */
  readonly schema: string;
  /** Table name. */
  readonly table: string;
  /** `PostgreSQL <schema>.<table>`, in messages (never the connection string). */
  readonly label: string;
  /** Where a relative `initialFile` resolved from; policies live in the table. */
  readonly baseDir: string;
  /** The file imported when the table is empty, if any (absolute). */
  readonly initialFile: string | undefined;
  readonly #names: TableNames;
  readonly #hostPool: PgPoolLike | undefined;
  readonly #connectionString: string | undefined;
  readonly #timeoutMs: number;
  #ownPool: Promise<PgPoolLike> | undefined;
  #migrated: Promise<void> | undefined;
  #closed = false;

  /**
   * Makes the source; nothing is connected yet. `await source.ready()` (or use
   * {@link PostgresConfigSource.create}) to create the table and import `initialFile` now.
   *
   * @throws InvalidOptionError (a `TypeError`, code `ERR_INVALID_OPTION`) on a malformed option.
   */
  constructor(options: PostgresConfigSourceOptions) {
    const check = optionChecks('PostgresConfigSource');
    check.object(options, '');
    check.known(options, '', POSTGRES_SOURCE_KEYS);
    const { connectionString, pool, schema, table } = postgresConnection(check, options, 'gateway_configuration');
    this.schema = schema;
    this.table = table;
    this.#timeoutMs = check.positive(options.queryTimeoutMs, 'queryTimeoutMs', 10_000, true);
    this.initialFile = options.initialFile === undefined ? undefined : path.resolve(check.string(options.initialFile, 'initialFile'));
    this.baseDir = this.initialFile === undefined ? process.cwd() : path.dirname(this.initialFile);
    this.label = `PostgreSQL ${this.schema}.${this.table}`;
    this.#names = tableNames(this.schema, this.table);
    this.#hostPool = pool;
    this.#connectionString = connectionString;
  }

  /** Makes the source and waits until its table is usable (and `initialFile` imported when it was empty). */
  static async create(options: PostgresConfigSourceOptions): Promise<PostgresConfigSource> {
    const source = new PostgresConfigSource(options);
    try {
      await source.ready();
    } catch (error) {
      await source.close().catch(() => undefined);
      throw error;
    }
    return source;
  }

  /**
   * Creates or migrates the table and, when it holds no configuration and `initialFile` is given,
   * imports the file. Rejects when the database cannot be reached or refuses, or with a
   * {@link ConfigError} when the file is invalid (nothing is imported then).
   */
  async ready(): Promise<void> {
    await this.#schemaReady();
    if (this.initialFile !== undefined && (await this.#latestVersion()) === 0) await this.#import(this.initialFile);
  }

  /** Closes the pool made from `connectionString` (a host's pool stays open). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const own = this.#ownPool;
    this.#ownPool = undefined;
    if (own !== undefined) await (await own.catch(() => undefined))?.end();
  }

  async current(): Promise<ConfigSnapshot> {
    const latest = await this.#latest();
    if (latest !== undefined) return latest;
    if (this.initialFile !== undefined) {
      await this.#import(this.initialFile);
      const imported = await this.#latest();
      if (imported !== undefined) return imported;
    }
    throw new ConfigError(
      [{ path: '', message: 'holds no configuration yet: import one (initialFile, serve --config) or save one' }],
      this.label,
    );
  }

  async list(): Promise<ConfigVersion[]> {
    const { rows } = await this.#query(`SELECT ${META_COLUMNS} FROM ${this.#names.table} ORDER BY version DESC`, [], 'list of versions');
    return rows.map(metaOf);
  }

  async get(version: number): Promise<ConfigSnapshot | undefined> {
    if (!Number.isSafeInteger(version) || version < 1 || version > 2_147_483_647) return undefined;
    const { rows } = await this.#query(
      `SELECT ${META_COLUMNS}, document, policies FROM ${this.#names.table} WHERE version = $1`,
      [version],
      'read of a version',
    );
    return rows[0] === undefined ? undefined : snapshotOf(rows[0]);
  }

  async save(proposal: ConfigProposal, meta: { author: string; comment: string }, expected?: number): Promise<ConfigVersion> {
    const { author, comment } = checkedMeta(meta);
    for (const file of Object.keys(proposal.policies ?? {})) {
      if (!POLICY_PATH.test(file)) throw new TypeError(`${file}: not a policy path the console writes`);
    }
    const document = structuredClone(proposal.document);
    const version = await this.#transaction('save', async (client) => {
      const latest = await this.#latestIn(client);
      const number = latest?.meta.version ?? 0;
      if (expected !== undefined && expected !== number) throw new VersionConflictError(expected, number);
      const policies: Record<string, string> = {};
      for (const file of policyPaths(document)) {
        const text = proposal.policies?.[file] ?? latest?.policies[file];
        if (text !== undefined) policies[file] = text;
      }
      return this.#insert(client, number + 1, { author, comment }, document, policies);
    });
    log('saved version %d of %s by %s', version.version, this.label, author);
    return version;
  }

  // ---- the table ------------------------------------------------------------------------------

  #pool(): Promise<PgPoolLike> {
    if (this.#closed) return Promise.reject(new Error('PostgresConfigSource: closed'));
    if (this.#hostPool !== undefined) return Promise.resolve(this.#hostPool);
    this.#ownPool ??= createOwnPool({
      owner: 'PostgresConfigSource',
      max: OWN_POOL_SIZE,
      connectionString: this.#connectionString!,
      timeoutMs: this.#timeoutMs,
      onError: (error) => log('idle connection failed: %s', error.message),
    });
    return this.#ownPool;
  }

  /** The table, created or migrated once per process (again after it was found missing). */
  #schemaReady(): Promise<void> {
    this.#migrated ??= withTimeout(this.#migrate(), this.#timeoutMs, `${this.label}: creating the table`).catch((error: unknown) => {
      this.#migrated = undefined;
      throw error;
    });
    return this.#migrated;
  }

  async #migrate(): Promise<void> {
    for (const version of await runMigrations(await this.#pool(), this.#names, MIGRATIONS))
      log('%s: schema version %d applied', this.label, version);
  }

  /** One statement on the pool, after the table is ready, given up after the timeout. */
  async #query(text: string, values: unknown[], what: string): Promise<{ rows: Array<Record<string, unknown>> }> {
    await this.#schemaReady();
    const pool = await this.#pool();
    try {
      return await withTimeout(pool.query(text, values), this.#timeoutMs, `${this.label}: ${what}`);
    } catch (error) {
      if (isSchemaMissing(error)) this.#migrated = undefined;
      throw error;
    }
  }

  /**
   * `task` in a transaction holding the table's save lock, with the server's statement timeout set
   * too; the whole given up after the timeout.
   */
  async #transaction<T>(what: string, task: (client: PgClientLike) => Promise<T>): Promise<T> {
    await this.#schemaReady();
    const pool = await this.#pool();
    const run = async (): Promise<T> => {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        try {
          await client.query("SELECT set_config('statement_timeout', $1, true)", [String(this.#timeoutMs)]);
          await client.query('SELECT pg_advisory_xact_lock($1, $2)', [SAVE_LOCK, this.#names.key]);
          const result = await task(client);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch((rollback: unknown) => {
            broken = rollback instanceof Error ? rollback : new Error(String(rollback));
          });
          throw error;
        }
      } catch (error) {
        if (isSchemaMissing(error)) this.#migrated = undefined;
        throw error;
      } finally {
        client.release(broken);
      }
    };
    return withTimeout(run(), this.#timeoutMs, `${this.label}: ${what}`);
  }

  async #latestVersion(): Promise<number> {
    const { rows } = await this.#query(`SELECT coalesce(max(version), 0) AS v FROM ${this.#names.table}`, [], 'latest version');
    return Number(rows[0]?.['v'] ?? 0);
  }

  async #latest(): Promise<ConfigSnapshot | undefined> {
    const { rows } = await this.#query(
      `SELECT ${META_COLUMNS}, document, policies FROM ${this.#names.table} ORDER BY version DESC LIMIT 1`,
      [],
      'read of the configuration',
    );
    return rows[0] === undefined ? undefined : snapshotOf(rows[0]);
  }

  async #latestIn(client: PgClientLike): Promise<ConfigSnapshot | undefined> {
    const { rows } = await client.query(
      `SELECT ${META_COLUMNS}, document, policies FROM ${this.#names.table} ORDER BY version DESC LIMIT 1`,
    );
    return rows[0] === undefined ? undefined : snapshotOf(rows[0]);
  }

  async #insert(
    client: PgClientLike,
    version: number,
    meta: { author: string; comment: string },
    document: GatewayConfig,
    policies: Record<string, string>,
  ): Promise<ConfigVersion> {
    const digest = await digestOf(document, { baseDir: this.baseDir, source: this.label, policies });
    const content = contentHash(document, policies);
    const { rows } = await client.query(
      `INSERT INTO ${this.#names.table} (version, author, comment, digest, content, document, policies)
VALUES ($1, $2, $3, $4, $5, $6::json, $7::json) RETURNING ${META_COLUMNS}`,
      [version, meta.author, meta.comment, digest, content, JSON.stringify(document), JSON.stringify(policies)],
    );
    return metaOf(rows[0]!);
  }

  /**
   * Imports a configuration file and the policy files it names as the first version, unless a
   * version exists by the time the save lock is held. The file must be valid as the gateway reads
   * it: else a {@link ConfigError} naming the file and the field, and nothing is imported.
   */
  async #import(file: string): Promise<void> {
    const { document, policies } = await readInitialFile(file);
    await this.#transaction('import', async (client) => {
      if ((await this.#latestIn(client)) !== undefined) return;
      await this.#insert(client, 1, { author: '(imported)', comment: `imported from ${path.basename(file)}` }, document, policies);
      log('%s: imported %s as version 1', this.label, file);
    });
  }
}

/** A configuration file and the texts of its policies, validated as the gateway reads them. */
async function readInitialFile(file: string): Promise<{ document: GatewayConfig; policies: Record<string, string> }> {
  let document: GatewayConfig;
  try {
    document = parseJsonText(await readFile(file, 'utf8')) as GatewayConfig;
  } catch (err) {
    const reason =
      err instanceof JsonSyntaxError
        ? `not valid JSON ${err.message}`
        : `cannot read the file (${(err as { code?: string }).code ?? String(err)})`;
    throw new ConfigError([{ path: '', message: reason }], file, { cause: err });
  }
  const issues: ConfigIssue[] = [];
  const policies: Record<string, string> = {};
  const apis = Array.isArray(document?.apis) ? document.apis : [];
  for (const [i, api] of apis.entries()) {
    const az = api?.authorization;
    if (az?.mode !== 'xacml-Policy') continue;
    const files: Array<[unknown, string]> = [
      [az.policy, `apis[${i}].authorization.policy`],
      ...(Array.isArray(az.references) ? az.references : []).map((ref, j): [unknown, string] => [
        ref,
        `apis[${i}].authorization.references[${j}]`,
      ]),
    ];
    for (const [name, at] of files) {
      if (typeof name !== 'string' || Object.hasOwn(policies, name)) continue;
      if (!POLICY_PATH.test(name)) {
        issues.push({
          path: at,
          message:
            'a policy kept in PostgreSQL needs a relative path inside the configuration folder (letters, digits and ._- ending in .xml)',
        });
        continue;
      }
      try {
        policies[name] = await readFile(path.join(path.dirname(file), name), 'utf8');
      } catch (err) {
        issues.push({ path: at, message: `cannot read ${name} (${(err as { code?: string }).code ?? String(err)})` });
      }
    }
  }
  if (issues.length > 0) throw new ConfigError(issues, file);
  // The console's checks of a save: every field as the file's, every policy compiled.
  const problems = proposalIssues({ document, policies }, { policies: {} } as unknown as ConfigSnapshot);
  if (problems.length > 0) throw new ConfigError(problems, file);
  return { document, policies };
}
