/**
 * Finding 10 (records): a record does not change once saved. Whatever a middleware adds to the
 * request's context after the response finished (a late token validation, a late backend error)
 * stays out of the stored record. Played over real HTTP through `recordTransaction`.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { addDiagnostic, gatewayContext, type DiagnosticCode } from '../../src/context.js';
import { recordTransaction, type TransactionRecord } from '../../src/index.js';
import { close, eventually, listen } from '../record/helpers.js';

describe('security: a saved record is immutable', () => {
  let server: Server | undefined;
  after(() => close(server));

  it('does not take what is added to the context after the response, and cannot be changed through the store', async () => {
    const record = recordTransaction();
    let lateDone!: () => void;
    const late = new Promise<void>((resolve) => (lateDone = resolve));
    const app = express();
    app.use(record);
    app.get('/late', (req, res) => {
      addDiagnostic(req, 'info', 'EARLY' as DiagnosticCode, 'before the answer');
      res.on('close', () => {
        // After the record was built and saved: a late single-flight result, a late error.
        setTimeout(() => {
          const context = gatewayContext(req);
          addDiagnostic(req, 'info', 'TOKEN_VALID', 'token validated after the exchange');
          addDiagnostic(req, 'error', 'ERR_BACKEND_UNAVAILABLE', 'backend unavailable (false, after the exchange)');
          context.diagnostics[0]!.message = 'rewritten later';
          context.outgoing.headers['X-Late'] = 'late';
          lateDone();
        }, 5);
      });
      res.send('ok');
    });
    server = createServer(app);
    const base = await listen(server);
    const res = await fetch(`${base}/late`);
    expect(res.status).to.equal(200);
    const id = res.headers.get('gateway-transaction-id')!;
    await late;
    const saved = await eventually(() => record.store.get(id) as TransactionRecord | undefined, 'the record');
    expect(saved.diagnostics.map((d) => `${d.code}:${d.message}`)).to.deep.equal(['EARLY:before the answer']);
    expect(saved.outcome.code).to.equal('OK');
    expect(Object.isFrozen(saved), 'the record').to.equal(true);
    expect(Object.isFrozen(saved.diagnostics), 'its diagnostics').to.equal(true);
    expect(Object.isFrozen(saved.diagnostics[0]), 'each diagnostic').to.equal(true);
    expect(() => saved.diagnostics.push({ time: 0, level: 'info', code: 'X' as DiagnosticCode, message: 'x' })).to.throw(TypeError);
  });
});
