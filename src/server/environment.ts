/**
 * The settings `express-access-gateway serve` (and the example) take from the environment to run
 * as one of several instances: `GATEWAY_NODE_ID`, `REDIS_URL` (with `GATEWAY_CLUSTER_SECRET`,
 * `REDIS_KEY_PREFIX` and `REDIS_COMMAND_TIMEOUT_MS`) and `DATABASE_URL` (with `DATABASE_SCHEMA`), which also holds the
 * configuration with `--config-source postgres`. Without them the gateway needs no service at all.
 *
 * @module
 */
import type { CreateGatewayOptions } from '../gateway/create-gateway.js';
import { defaultNodeId } from '../cluster/node-id.js';
import { MIN_CLUSTER_SECRET_LENGTH } from '../cluster/seal.js';
import { accessSync, constants, statSync } from 'node:fs';
import { PostgresConfigSource } from '../configuration/postgres-source.js';
import { PostgresTransactionStore } from '../record/postgres/store.js';
import { journalDirectoryProblem } from '../record/postgres/trust.js';

/** What the environment adds to `createGateway`'s options, and the store to close at the end. */
export interface InstanceSettings {
  readonly options: Pick<CreateGatewayOptions, 'nodeId' | 'redis' | 'clusterSecret' | 'redisKeyPrefix' | 'redisCommandTimeoutMs' | 'store'>;
  /** The PostgreSQL store, when `DATABASE_URL` is set: flushed and closed after the gateway. */
  readonly store: PostgresTransactionStore | undefined;
  /** One line saying what is shared, for the start-up banner (no credentials in it). */
  readonly summary: string;
}

/** A variable of the environment that cannot be used: bad usage (the command exits 2). */
export class EnvironmentError extends Error {
  override readonly name = 'EnvironmentError';
}

/** A whole number of milliseconds from 1 to 60000, or `undefined` when the variable is unset. */
function milliseconds(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = set(env, name);
  if (value === undefined) return undefined;
  const ms = /^[0-9]{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(ms >= 1 && ms <= 60_000))
    throw new EnvironmentError(`${name} must be a whole number of milliseconds from 1 to 60000, got ${JSON.stringify(value.slice(0, 40))}`);
  return ms;
}

/**
 * `GATEWAY_CLUSTER_SECRET`: one secret, or several separated by commas during a rotation (the
 * first signs). Required with `REDIS_URL`: fail closed. No message repeats a secret.
 */
function clusterSecret(env: NodeJS.ProcessEnv): string[] {
  const value = set(env, 'GATEWAY_CLUSTER_SECRET');
  const how = `a secret of at least ${MIN_CLUSTER_SECRET_LENGTH} characters given to every instance (for example: openssl rand -base64 32), or several separated by commas during a rotation`;
  if (value === undefined) throw new EnvironmentError(`REDIS_URL needs GATEWAY_CLUSTER_SECRET: ${how}`);
  const secrets = value.split(',').map((secret) => secret.trim());
  if (secrets.length > 4 || secrets.some((secret) => secret.length < MIN_CLUSTER_SECRET_LENGTH))
    throw new EnvironmentError(`GATEWAY_CLUSTER_SECRET must be ${how} (at most 4)`);
  return secrets;
}

/**
 * The record journal of the PostgreSQL store: `RECORD_JOURNAL` `on` (default), `fsync` (each write
 * synced to the disk) or `off`; in `RECORD_JOURNAL_DIR` (default: a directory of the user's own in
 * the temporary directory), which must be the process's own and writable by nobody else; while it
 * cannot be written, `RECORD_JOURNAL_ON_UNAVAILABLE` `answer` (default) or `refuse`.
 */
function recordJournal(env: NodeJS.ProcessEnv): false | { directory?: string; fsync: boolean; onUnavailable: 'answer' | 'refuse' } {
  const mode = set(env, 'RECORD_JOURNAL') ?? 'on';
  if (mode !== 'on' && mode !== 'off' && mode !== 'fsync')
    throw new EnvironmentError(`RECORD_JOURNAL must be on, fsync or off, got ${JSON.stringify(mode.slice(0, 40))}`);
  if (mode === 'off') return false;
  const onUnavailable = set(env, 'RECORD_JOURNAL_ON_UNAVAILABLE') ?? 'answer';
  if (onUnavailable !== 'answer' && onUnavailable !== 'refuse')
    throw new EnvironmentError(`RECORD_JOURNAL_ON_UNAVAILABLE must be answer or refuse, got ${JSON.stringify(onUnavailable.slice(0, 40))}`);
  const directory = set(env, 'RECORD_JOURNAL_DIR');
  if (directory !== undefined) {
    // Checked now: a journal that cannot be written would let answers go unjournaled.
    try {
      if (!statSync(directory).isDirectory()) throw new Error('not a directory');
      accessSync(directory, constants.W_OK);
    } catch (error) {
      throw new EnvironmentError(
        `RECORD_JOURNAL_DIR must be a directory this process can write to: ${JSON.stringify(directory.slice(0, 200))} (${error instanceof Error ? error.message : String(error)})`,
      );
    }
    // A directory others may write to could hold planted records, or links at the journal's names.
    const problem = journalDirectoryProblem(directory, true);
    if (problem !== undefined)
      throw new EnvironmentError(
        `RECORD_JOURNAL_DIR must be a directory of this process's own, writable by it alone (mode 0700): ${JSON.stringify(directory.slice(0, 200))} ${problem}`,
      );
  }
  return { ...(directory === undefined ? {} : { directory }), fsync: mode === 'fsync', onUnavailable };
}

function set(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** A URL for the banner: scheme, host and port only. */
function where(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Reads the environment (`worker`: the slot of a `--workers` process, 1 to n). With `DATABASE_URL` the
 * PostgreSQL store is created and its table migrated now, so that an unreachable database or a
 * refused login stops the start.
 *
 * @throws EnvironmentError when a variable holds a value that cannot be used.
 */
export async function instanceSettings(env: NodeJS.ProcessEnv = process.env, worker?: number): Promise<InstanceSettings> {
  const given = set(env, 'GATEWAY_NODE_ID');
  // The workers of one instance are instances of their own: each slot gets its own id, which the
  // worker that replaces a dead one keeps (its records and its place in the node list go on).
  const nodeId =
    worker === undefined
      ? (given ?? defaultNodeId())
      : given === undefined
        ? defaultNodeId(process.ppid, `-w${worker}`)
        : `${given}-w${worker}`;
  const redis = set(env, 'REDIS_URL');
  const secrets = redis === undefined ? undefined : clusterSecret(env);
  const redisKeyPrefix = set(env, 'REDIS_KEY_PREFIX');
  const redisCommandTimeoutMs = milliseconds(env, 'REDIS_COMMAND_TIMEOUT_MS');
  const databaseUrl = set(env, 'DATABASE_URL');
  const schema = set(env, 'DATABASE_SCHEMA');
  const journal = databaseUrl === undefined ? false : recordJournal(env);
  const store =
    databaseUrl === undefined
      ? undefined
      : await PostgresTransactionStore.create({
          connectionString: databaseUrl,
          nodeId,
          journal,
          ...(schema === undefined ? {} : { schema }),
        });
  const parts = [`node ${nodeId}`];
  parts.push(redis === undefined ? 'token cache local' : `token results shared in Redis at ${where(redis)}`);
  parts.push(
    store === undefined
      ? 'records in memory'
      : `records in PostgreSQL at ${where(databaseUrl!)}${journal === false ? '' : journal.fsync ? ', journaled (synced)' : ', journaled'}`,
  );
  return {
    options: {
      nodeId,
      ...(redis === undefined ? {} : { redis, clusterSecret: secrets! }),
      ...(redisKeyPrefix === undefined ? {} : { redisKeyPrefix }),
      ...(redisCommandTimeoutMs === undefined ? {} : { redisCommandTimeoutMs }),
      ...(store === undefined ? {} : { store }),
    },
    store,
    summary: parts.join('; '),
  };
}

/**
 * The configuration in PostgreSQL (`--config-source postgres`): the table `gateway_configuration`
 * in `DATABASE_URL`'s `DATABASE_SCHEMA`, created now, with `initialFile` imported when it holds no
 * configuration yet. An unreachable database stops the start; an invalid file is a `ConfigError`.
 */
export async function postgresConfigSource(env: NodeJS.ProcessEnv, initialFile: string | undefined): Promise<PostgresConfigSource> {
  const connectionString = set(env, 'DATABASE_URL');
  if (connectionString === undefined) throw new Error('the configuration in PostgreSQL needs DATABASE_URL');
  const schema = set(env, 'DATABASE_SCHEMA');
  return PostgresConfigSource.create({
    connectionString,
    ...(schema === undefined ? {} : { schema }),
    ...(initialFile === undefined ? {} : { initialFile }),
  });
}
