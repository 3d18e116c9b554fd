/**
 * Finding 8 (records): a record is bounded in bytes, whatever the client or the authorization server
 * sends, and the default store has a byte budget besides its record count. Played over real HTTP:
 * clients sending 15 KB URLs through `recordTransaction`, with a chain that puts long and deep
 * claims, a long outgoing header value and a long diagnostic on the request, as `introspect`,
 * `forwardTokenHeaders` and a careless middleware would.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express, { type NextFunction, type Request, type Response } from 'express';
import { addDiagnostic, createTokenContext, gatewayContext, type DiagnosticCode } from '../../src/context.js';
import { MemoryTransactionStore, recordTransaction, type TransactionRecord } from '../../src/index.js';
import { close, listen, makeRecord } from '../record/helpers.js';

const MARKER = /…\[truncated \d+ characters\]$/;

/** A claim nested `depth` levels deep. */
function deep(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { bottom: true };
  for (let i = 0; i < depth; i++) value = { next: value };
  return value;
}

/** Plays a chain whose token claims, outgoing headers and diagnostics are huge. */
function hugeChain(req: Request, _res: Response, next: NextFunction): void {
  const context = gatewayContext(req);
  const token = createTokenContext('tok-bounds-0123456789', 'header', 'demo-idp');
  token.introspection = {
    active: true,
    sub: 'client1',
    exp: 1e20,
    note: 'n'.repeat(50_000),
    nested: deep(200),
    groups: Array.from({ length: 5_000 }, (_, i) => `group-${i}`),
  };
  context.token = token;
  context.outgoing.headers['X-Long'] = 'h'.repeat(20_000);
  addDiagnostic(req, 'info', 'CHATTY' as DiagnosticCode, 'd'.repeat(30_000));
  for (let i = 0; i < 500; i++) addDiagnostic(req, 'debug', 'MANY' as DiagnosticCode, `line ${i}`);
  next();
}

describe('security: records are bounded in bytes', function () {
  this.timeout(60_000);
  let server: Server | undefined;
  after(() => close(server));

  it('validates the store budget at construction', () => {
    expect(() => new MemoryTransactionStore({ maxBytes: 0 })).to.throw(TypeError, /maxBytes/);
    expect(() => new MemoryTransactionStore({ maxBytes: 1.5 })).to.throw(TypeError, /maxBytes/);
    expect(new MemoryTransactionStore().maxBytes).to.equal(32 * 1024 * 1024);
  });

  it('keeps 15 KB URLs, long claims, headers and diagnostics truncated with a marker, and the store under its budget', async () => {
    const store = new MemoryTransactionStore({ maxBytes: 1024 * 1024 });
    const record = recordTransaction({ store, recordOutgoingHeaders: true });
    const app = express();
    app.use(record);
    app.use(hugeChain);
    app.use((_req, res) => void res.send('ok'));
    server = createServer(app);
    const base = await listen(server);
    const url = (i: number) => `${base}/api/${i}?q=${'u'.repeat(15 * 1024)}`;
    const total = 400;
    let sent = 0;
    // Four clients at a time, keep-alive: a few hundred requests in a second or two.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (sent < total) {
          const res = await fetch(url(sent++));
          expect(res.status).to.equal(200);
          await res.arrayBuffer();
        }
      }),
    );
    for (let i = 0; i < 200 && record.stats.recorded < total; i++) await new Promise((r) => setTimeout(r, 10));
    expect(record.stats).to.deep.include({ recorded: total, failed: 0 });
    expect(store.bytes).to.be.a('number').and.to.be.above(0).and.at.most(store.maxBytes);
    expect(store.size, 'older records were evicted for the byte budget').to.be.below(total);

    const saved = store.query({ limit: 1 }).items[0]!;
    expect(saved.url.length).to.be.below(4096);
    expect(saved.url).to.match(MARKER);
    expect(saved.url.startsWith('/api/')).to.equal(true);
    const claims = saved.tokenInfo!.introspection!;
    expect(claims['exp']).to.equal(1e20);
    expect(String(claims['note'])).to.match(MARKER);
    expect(JSON.stringify(claims['nested'])).to.include('…[truncated: nested deeper than');
    const groups = claims['groups'] as string[];
    expect(groups.length).to.be.below(200);
    expect(groups[groups.length - 1]).to.match(/…\[truncated \d+ more items\]/);
    expect(saved.outgoing!.headers['X-Long']).to.match(MARKER);
    const chatty = saved.diagnostics.find((d) => d.code === ('CHATTY' as DiagnosticCode))!;
    expect(chatty.message).to.match(MARKER);
    expect(saved.diagnostics.length).to.be.below(200);
    expect(saved.diagnostics[saved.diagnostics.length - 1]!.message).to.match(/truncated \d+ diagnostics/);
    expect(JSON.stringify(saved).length, 'one record stays small').to.be.below(64 * 1024);
  });

  it('evicts the oldest records to stay under the budget, and refuses one larger than the whole budget', () => {
    const store = new MemoryTransactionStore({ maxBytes: 64 * 1024 });
    const records: TransactionRecord[] = [];
    for (let i = 0; i < 50; i++) {
      const r = makeRecord({ url: `/r/${i}/${'x'.repeat(4000)}` });
      records.push(r);
      store.save(r);
      expect(store.bytes).to.be.at.most(store.maxBytes);
    }
    expect(store.get(records[0]!.id)).to.equal(undefined);
    expect(store.get(records[49]!.id)).to.equal(records[49]);
    expect(() => store.save(makeRecord({ url: 'y'.repeat(200_000) }))).to.throw(RangeError, /budget/);
    expect(store.bytes).to.be.at.most(store.maxBytes);
    store.clear();
    expect(store.bytes).to.equal(0);
  });
});
