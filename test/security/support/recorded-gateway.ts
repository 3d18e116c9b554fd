/**
 * The example's gateway in a process of its own, its memory store holding `RECORDS` recorded
 * transactions of the last 30 minutes ({@link trafficRecords}): `CONFIG=<file>` is its
 * configuration, `USERS=<file>` its operators (`{ users }`), `ADMIN_PASSWORD` the admin's. Prints
 * `{"url":...,"adminUrl":...}` on one line when it serves.
 */
import { readFileSync } from 'node:fs';
import { createGateway, MemoryTransactionStore, serveGateway } from '../../../src/index.js';
import { trafficRecords } from './traffic-records.js';

const count = Number(process.env.RECORDS);
const store = new MemoryTransactionStore({ maxRecords: count + 10_000, maxBytes: 1024 * 1024 * 1024 });
for (const record of trafficRecords(count, Date.now())) store.save(record);
const { users } = JSON.parse(readFileSync(process.env.USERS!, 'utf8')) as { users: never };
const gateway = createGateway({
  config: process.env.CONFIG!,
  store,
  admin: { basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD! } },
  operators: { users },
});
await gateway.ready();
const server = await serveGateway(gateway, { port: 0, adminPort: 0 });
process.stdout.write(`${JSON.stringify({ url: server.url, adminUrl: server.adminUrl })}\n`);
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
