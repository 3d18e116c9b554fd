import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { MemoryAuditLog, type AuditEntry } from '../../src/operators/audit.js';

const anonymous = (i: number) => ({
  actor: null,
  address: '10.0.0.1',
  action: 'sign-in',
  result: 'refused' as const,
  detail: `guess ${i}`,
});
const operator = (i: number) => ({
  actor: 'otto',
  role: 'operator' as const,
  address: '10.0.0.2',
  action: 'reset-caches',
  result: 'ok' as const,
  detail: `change ${i}`,
});

describe('MemoryAuditLog', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'audit-log-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps the operators' entries apart from nobody's: no number of anonymous entries evicts one", async () => {
    const log = new MemoryAuditLog({ maxEntries: 5, maxAnonymousEntries: 3 });
    await log.append(operator(1));
    for (let i = 0; i < 100; i++) await log.append(anonymous(i));
    await log.append(operator(2));
    const items = await log.list({ limit: 100 });
    expect(items.map((e) => e.detail)).to.deep.equal(['change 2', 'guess 99', 'guess 98', 'guess 97', 'change 1']);
    expect((await log.list({ limit: 2, before: items[1]!.id })).map((e) => e.detail)).to.deep.equal(['guess 98', 'guess 97']);
  });

  it('bounds the queue of the file: anonymous entries past it are dropped and counted, operators have room of their own', async () => {
    const file = path.join(dir, 'sub', 'audit.jsonl');
    const log = new MemoryAuditLog({ file, maxQueueBytes: 2000 });
    // Appended in one go (no await): they queue while the first batch is written.
    const writes = [...Array.from({ length: 200 }, (_, i) => log.append(anonymous(i))), log.append(operator(1))];
    await Promise.all(writes);
    await log.close();
    const lines = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditEntry);
    expect(log.dropped.queue_full).to.be.above(150);
    expect(lines.length + log.dropped.queue_full).to.equal(201);
    expect(lines.at(-1)).to.include({ actor: 'otto', detail: 'change 1' });
    // Read back at start, both kinds.
    const again = new MemoryAuditLog({ file });
    expect((await again.list({ limit: 1 }))[0]).to.include({ actor: 'otto' });
  });
});
