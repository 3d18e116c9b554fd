/** Shared helpers of the PostgreSQL tests (the stores, the configuration source, src/postgres/): the test database, a schema per test file. */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Host and port of the test server. */
export const PG_HOST = '127.0.0.1';
export const PG_PORT = 5432;
const PG_USER = process.env['PGUSER'] ?? 'postgres';

/** Connection string of the test database through `port` (the server's, or a proxy's). */
export function databaseUrl(port = PG_PORT): string {
  return `postgres://${PG_USER}@${PG_HOST}:${port}/test`;
}

/** A fresh schema name for one test file. */
export function testSchema(): string {
  return `gw_test_${randomBytes(6).toString('hex')}`;
}

/** A spill file path of one test. */
export function spillPath(): string {
  return join(tmpdir(), `gw-test-spill-${randomBytes(6).toString('hex')}.jsonl`);
}

/** Removes a file if it is there. */
export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true });
}

/** A pool straight to the test server, for the tests' own checks. */
export function adminPool(): pg.Pool {
  return new pg.Pool({ connectionString: databaseUrl(), max: 3 });
}

/** Drops a test schema and everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** Polls `probe` until it returns true. */
export async function until(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
