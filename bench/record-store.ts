/**
 * Record store benchmark (standalone: `npx tsx bench/record-store.ts`, after `npm run build`).
 *
 * The sustained rate at which `PostgresTransactionStore` takes records into the database: records
 * shaped as the example gateway saves them (token claims, decision, diagnostics, outgoing headers; ~2 KB) are saved at a
 * steady pace for BENCH_STORE_SECONDS (default 10) in slices of one event-loop turn, holding back
 * while 20,000 wait in the queue, and the rate is what `counters.saved` reached, per second, once
 * the store was flushed; nothing may be dropped or spilled. The same saves into
 * `MemoryTransactionStore` in the same run give the caller's cost alone. PostgreSQL from
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), in a schema dropped
 * afterwards.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  MemoryTransactionStore,
  outcomeLabels,
  PostgresTransactionStore,
  type TransactionRecord,
  type TransactionStore,
} from 'express-access-gateway';

const SECONDS = Number(process.env.BENCH_STORE_SECONDS ?? 10);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `gateway_bench_store_${process.pid}`;

/** A record as the example gateway writes for GET /pet/10 (its forwarding and recording settings): about 2 KB of JSON. */
function record(): TransactionRecord {
  const now = Date.now();
  const id = randomUUID();
  const iat = Math.floor(now / 1000);
  return {
    id,
    messageId: randomUUID(),
    startedAt: now - 3,
    endedAt: now,
    durationMs: 3,
    method: 'GET',
    url: '/gateway/Ente/PetStore/v1/pet/10',
    status: 200,
    outcome: { code: 'OK', label: outcomeLabels.OK.it, en: outcomeLabels.OK.en },
    aborted: false,
    sender: { subject: 'client1', clientId: 'client1', issuer: 'http://127.0.0.1:9000' },
    diagnostics: [
      { time: now - 3, level: 'info', code: 'TOKEN_RECEIVED', message: 'bearer token received (header)' },
      { time: now - 2, level: 'info', code: 'TOKEN_VALID', message: 'token validated by policy DemoIdP (cached)' },
      { time: now - 1, level: 'info', code: 'XACML_DECISION', message: 'result-1 PERMIT code:urn:oasis:names:tc:xacml:1.0:status:ok' },
    ],
    clientAddress: '::ffff:127.0.0.1',
    nodeId: 'gw-1',
    api: { provider: 'Ente', name: 'PetStore', version: 1 },
    operation: 'getPetById',
    tokenInfo: {
      method: 'header',
      policy: 'DemoIdP',
      introspection: {
        active: true,
        azp: 'client1',
        sub: 'client1',
        client_id: 'client1',
        exp: iat + 3600,
        iat,
        iss: 'http://127.0.0.1:9000',
        aud: 'petstore-api',
        token_type: 'Bearer',
      },
    },
    authorization: {
      decision: 'Permit',
      statusCode: 'urn:oasis:names:tc:xacml:1.0:status:ok',
      text: 'result-1 PERMIT code:urn:oasis:names:tc:xacml:1.0:status:ok',
    },
    outgoing: {
      headers: {
        host: '127.0.0.1:9001',
        accept: '*/*',
        'accept-language': '*',
        'user-agent': 'node',
        'accept-encoding': 'gzip, deflate',
        'Gateway-Token-Subject': 'client1',
        'Gateway-Token-Issuer': 'http://127.0.0.1:9000',
        'Gateway-Token-ClientId': 'client1',
        'Gateway-Token-Audience': 'petstore-api',
        'Gateway-Token-Expire': new Date((iat + 3600) * 1000).toISOString(),
        'Gateway-Token-IssuedAt': new Date(iat * 1000).toISOString(),
        'Gateway-Token-ProcessTime': '0.184',
        'Gateway-Transaction-ID': id,
        'x-forwarded-for': '::ffff:127.0.0.1',
        'x-forwarded-host': '127.0.0.1:8080',
        'x-forwarded-proto': 'http',
        forwarded: 'for="[::ffff:127.0.0.1]";host="127.0.0.1:8080";proto=http',
      },
    },
  };
}

/**
 * Saves for SECONDS, a slice per event-loop turn; with `backlog`, waits while more than that many
 * records are queued (the database's pace, not memory, is measured). Returns the records saved.
 */
async function saveFor(store: TransactionStore, perTurn: number, backlog?: () => number): Promise<{ count: number; ms: number }> {
  const started = performance.now();
  const end = started + SECONDS * 1000;
  let count = 0;
  while (performance.now() < end) {
    if (backlog !== undefined && backlog() > 20_000) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      continue;
    }
    for (let i = 0; i < perTurn; i++) store.save(record());
    count += perTurn;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { count, ms: performance.now() - started };
}

async function main(): Promise<void> {
  console.log(`Record store benchmark: ${SECONDS} s of saves per store, then a flush.`);
  const memory = new MemoryTransactionStore();
  const inMemory = await saveFor(memory, 50);
  console.log(
    `  MemoryTransactionStore    ${Math.round((inMemory.count / inMemory.ms) * 1000).toLocaleString('en')} records/s taken by save() (the caller's cost alone)`,
  );

  // A queue large enough that nothing goes to the spill file: the rate measured is the database's.
  const store = new PostgresTransactionStore({ connectionString: databaseUrl, schema, retentionDays: 0, maxQueue: 10_000_000 });
  try {
    await store.ready();
    const started = performance.now();
    // 20 records per turn: about what a busy gateway process hands over.
    const run = await saveFor(store, 20, () => store.counters.queued);
    await store.flush();
    const seconds = (performance.now() - started) / 1000;
    const { saved, spilled, dropped } = store.counters;
    console.log(
      `  PostgresTransactionStore  ${Math.round(saved / seconds).toLocaleString('en')} records/s committed, sustained (${saved.toLocaleString('en')} of ${run.count.toLocaleString('en')} saved in ${seconds.toFixed(1)} s including the final flush; spilled ${spilled}, dropped ${JSON.stringify(dropped)})`,
    );
  } finally {
    await store.close();
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
