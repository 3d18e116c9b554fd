import { request as httpRequest, createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createTokenContext, gatewayContext, addDiagnostic, type DiagnosticCode } from '../../src/context.js';
import { MemoryTransactionStore, recordTransaction, type TransactionRecord, type TransactionStore } from '../../src/index.js';
import { shareTokenData } from '../../src/token/validated-data.js';
import { express4 } from '../support/express4.js';
import { close, eventually, listen } from './helpers.js';

const TOKEN = 'tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0';

/** Plays the token chain: a token found, introspected, forwarded. */
function fakeChain(req: Request, _res: Response, next: NextFunction): void {
  const context = gatewayContext(req);
  context.api = { provider: 'Ente', name: 'PetStore', version: 1, operation: 'getPet', resourcePath: '/pet/1' };
  const token = createTokenContext(TOKEN, 'query', 'demo-idp');
  token.introspection = {
    active: true,
    sub: 'client1',
    azp: 'client1',
    aud: ['petstore'],
    scope: 'read write',
    iss: 'http://127.0.0.1:9000',
    exp: 2_000_000_000,
  };
  token.info = {
    subject: 'client1',
    clientId: 'client1',
    issuer: 'http://127.0.0.1:9000',
    audience: ['petstore'],
    scopes: ['read', 'write'],
    roles: [],
    userInfo: {},
  };
  context.token = token;
  context.outgoing.headers['Gateway-Token-Subject'] = 'client1';
  context.outgoing.headers['Gateway-Token-Scopes'] = 'read,write';
  context.outgoing.headers['Authorization'] = `Bearer ${TOKEN}`;
  context.outgoing.headers['X-Original-Token'] = TOKEN;
  // A careless middleware: the token must still not reach the store.
  addDiagnostic(req, 'debug', 'CARELESS' as DiagnosticCode, `validated ${TOKEN}`);
  next();
}

describe('recordTransaction', () => {
  let server: Server | undefined;
  afterEach(() => close(server));

  async function start(app: express.Express): Promise<string> {
    server = createServer(app);
    return listen(server);
  }

  it('validates its options at factory time', () => {
    expect(() => recordTransaction({ store: {} as TransactionStore })).to.throw(TypeError, /^recordTransaction: options\.store/);
    expect(() => recordTransaction({ maxValueLength: 10 })).to.throw(
      TypeError,
      /^recordTransaction: options\.maxValueLength must be an integer of at least 64/,
    );
    expect(() => recordTransaction({ onError: 1 as never }))
      .to.throw(TypeError)
      .with.property('code', 'ERR_INVALID_OPTION');
    expect(() => recordTransaction({ recordOutgoingHeaders: 'yes' as unknown as boolean })).to.throw(TypeError, /recordOutgoingHeaders/);
    expect(() => recordTransaction({ redactHeaders: 'authorization' as unknown as string[] })).to.throw(TypeError, /redactHeaders/);
    expect(recordTransaction().store).to.be.instanceOf(MemoryTransactionStore);
  });

  it('sets the id headers and records a success with token data, without the token', async () => {
    const record = recordTransaction();
    const app = express();
    app.use(record);
    app.use(fakeChain);
    app.get('/gateway/Ente/PetStore/v1/pet/:id', (_req, res) => void res.json({ id: 1 }));
    const base = await start(app);
    const res = await fetch(`${base}/gateway/Ente/PetStore/v1/pet/1?x=1&access_token=${TOKEN}&y=2`);
    expect(res.status).to.equal(200);
    const txId = res.headers.get('gateway-transaction-id');
    const msgId = res.headers.get('gateway-message-id');
    expect(txId).to.match(/^[0-9a-f-]{36}$/);
    expect(msgId).to.match(/^[0-9a-f-]{36}$/);
    const saved = await eventually(() => record.store.get(txId!) as TransactionRecord | undefined, 'the record');
    expect(saved.messageId).to.equal(msgId);
    expect(saved.url).to.equal('/gateway/Ente/PetStore/v1/pet/1?x=1&y=2');
    expect(saved.method).to.equal('GET');
    expect(saved.status).to.equal(200);
    expect(saved.outcome).to.deep.equal({ code: 'OK', label: 'Ok', en: 'Ok' });
    expect(saved.clientAddress).to.match(/127\.0\.0\.1/);
    expect(saved.api).to.deep.equal({ provider: 'Ente', name: 'PetStore', version: 1 });
    expect(saved.operation).to.equal('getPet');
    expect(saved.sender).to.deep.equal({ subject: 'client1', clientId: 'client1', issuer: 'http://127.0.0.1:9000' });
    expect(saved.tokenInfo?.introspection?.['scope']).to.equal('read write');
    expect(saved.tokenInfo?.method).to.equal('query');
    expect(saved.tokenInfo?.policy).to.equal('demo-idp');
    expect(saved.endedAt).to.be.at.least(saved.startedAt);
    expect(saved.durationMs).to.equal(saved.endedAt - saved.startedAt);
    expect(saved.outgoing, 'outgoing contents are off by default').to.equal(undefined);
    expect(JSON.stringify(saved)).not.to.include(TOKEN);
    expect(saved.diagnostics.find((d) => d.code === ('CARELESS' as DiagnosticCode))?.message).to.equal('[redacted]');
    expect(record.stats).to.deep.include({ recorded: 1, failed: 0 });
  });

  it('records the outgoing headers when asked, option or per request, with credentials redacted', async () => {
    const record = recordTransaction({ recordOutgoingHeaders: (req) => req.query['rec'] === 'on' });
    const app = express();
    app.use(record);
    app.use(fakeChain);
    app.use((req, _res, next) => {
      if (req.query['override'] !== undefined) gatewayContext(req).recording = { outgoingHeaders: req.query['override'] === '1' };
      next();
    });
    app.get('/r', (_req, res) => void res.send('ok'));
    const base = await start(app);
    const idOf = async (query: string) => (await fetch(`${base}/r?${query}`)).headers.get('gateway-transaction-id')!;
    const on = await idOf('rec=on');
    const off = await idOf('rec=off');
    const forcedOn = await idOf('rec=off&override=1');
    const forcedOff = await idOf('rec=on&override=0');
    const get = (id: string) => eventually(() => record.store.get(id) as TransactionRecord | undefined);
    const recorded = await get(on);
    expect(recorded.outgoing?.headers).to.deep.equal({
      'Gateway-Token-Subject': 'client1',
      'Gateway-Token-Scopes': 'read,write',
      Authorization: '[redacted]',
      'X-Original-Token': '[redacted]',
    });
    expect((await get(off)).outgoing).to.equal(undefined);
    expect((await get(forcedOn)).outgoing?.headers['Gateway-Token-Subject']).to.equal('client1');
    expect((await get(forcedOff)).outgoing).to.equal(undefined);
    for (const id of [on, off, forcedOn, forcedOff]) expect(JSON.stringify(await get(id))).not.to.include(TOKEN);
  });

  it('takes the outcome from req.gateway.error, else from the status; Message-ID only on success', async () => {
    const record = recordTransaction();
    const app = express();
    app.use(record);
    app.get('/denied', (req, res) => {
      const context = gatewayContext(req);
      context.authorization = {
        decision: 'Deny',
        statusCode: 'urn:oasis:names:tc:xacml:1.0:status:ok',
        text: 'result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok',
      };
      context.error = {
        code: 'ERR_AUTHORIZATION_DENIED',
        status: 403,
        gatewayStatus: 'protocol:GATEWAY-1352',
        outcome: 'AUTHORIZATION_DENIED',
      };
      res.status(403).json({ status: 403 });
    });
    app.get('/boom', (_req, res) => void res.status(500).send('no'));
    app.get('/missing', (_req, res) => void res.status(404).send('backend says not found'));
    const base = await start(app);
    const denied = await fetch(`${base}/denied`);
    const boom = await fetch(`${base}/boom`);
    const missing = await fetch(`${base}/missing`);
    for (const res of [denied, boom, missing]) {
      expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('gateway-message-id')).to.equal(null);
    }
    const get = (res: globalThis.Response) =>
      eventually(() => record.store.get(res.headers.get('gateway-transaction-id')!) as TransactionRecord | undefined);
    const d = await get(denied);
    expect(d.outcome).to.deep.equal({ code: 'AUTHORIZATION_DENIED', label: 'Autorizzazione Negata', en: 'Authorization denied' });
    expect(d.gatewayStatus).to.equal('protocol:GATEWAY-1352');
    expect(d.errorCode).to.equal('ERR_AUTHORIZATION_DENIED');
    expect(d.authorization?.decision).to.equal('Deny');
    expect(d.diagnostics.map((x) => x.message)).to.include('result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok');
    // The app's own answers (not gateway errors): outcomes of their own, never Ok.
    expect((await get(boom)).outcome).to.deep.equal({ code: 'BACKEND_5XX', label: 'Risposta HTTP 5xx', en: 'Backend answered 5xx' });
    expect((await get(missing)).outcome).to.deep.equal({ code: 'BACKEND_4XX', label: 'Risposta HTTP 4xx', en: 'Backend answered 4xx' });
    expect((await get(boom)).errorCode).to.equal(undefined);
  });

  it('records an exchange the client abandons as aborted', async () => {
    const record = recordTransaction();
    const app = express();
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    app.use(record);
    app.get('/slow', (req, res) => {
      res.setHeader('X-Tx', gatewayContext(req).transactionId);
      arrived();
      // Never answers: the client goes away first.
    });
    const base = await start(app);
    const clientReq = httpRequest(`${base}/slow?access_token=${TOKEN}`);
    clientReq.on('error', () => undefined);
    clientReq.end();
    await arrival;
    clientReq.destroy();
    const [saved] = await eventually(() => {
      const items = record.store.query({}) as { items: TransactionRecord[] };
      return items.items.length > 0 ? items.items : undefined;
    }, 'the aborted record');
    expect(saved!.aborted).to.equal(true);
    expect(saved!.outcome.code).to.equal('ABORTED');
    expect(saved!.outcome.label).to.equal('Richiesta Interrotta');
    expect(saved!.status).to.equal(null);
    expect(saved!.url).to.equal('/slow');
    expect(saved!.diagnostics.map((d) => d.code)).to.include('CLIENT_ABORTED');
  });

  it('records a backend failure after the status line as the backend error, not as a client abort', async () => {
    // What the relay does when the backend resets or stalls mid-body: it records the error and
    // its diagnostic on the context, then destroys the response it had started.
    const record = recordTransaction();
    const app = express();
    app.use(record);
    app.get('/mid-body', (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part;');
      setTimeout(() => {
        const context = gatewayContext(req);
        context.error = {
          code: 'ERR_BACKEND_UNAVAILABLE',
          status: 503,
          gatewayStatus: 'integration:GATEWAY-516',
          outcome: 'CONNECTION_ERROR',
        };
        addDiagnostic(req, 'error', 'ERR_BACKEND_UNAVAILABLE', 'backend reset the connection after the status line (ECONNRESET)');
        res.destroy();
      }, 20);
    });
    const base = await start(app);
    await new Promise<void>((resolve) => {
      const clientReq = httpRequest(`${base}/mid-body`, (res) => {
        res.on('data', () => undefined);
        res.on('error', () => resolve());
        res.on('close', () => resolve());
      });
      clientReq.on('error', () => resolve());
      clientReq.end();
    });
    const [saved] = await eventually(() => {
      const items = record.store.query({}) as { items: TransactionRecord[] };
      return items.items.length > 0 ? items.items : undefined;
    }, 'the record');
    expect(saved!.outcome.code).to.equal('CONNECTION_ERROR');
    expect(saved!.status, 'the status that was sent').to.equal(200);
    expect(saved!.aborted).to.equal(false);
    expect(saved!.errorCode).to.equal('ERR_BACKEND_UNAVAILABLE');
    expect(saved!.gatewayStatus).to.equal('integration:GATEWAY-516');
    expect(saved!.diagnostics.map((d) => d.code))
      .to.include('ERR_BACKEND_UNAVAILABLE')
      .and.not.include('CLIENT_ABORTED');
  });

  it('never lets a failing store touch the response: logs, counts, calls onError', async () => {
    const errors: unknown[] = [];
    const throwing: TransactionStore = {
      save() {
        throw new Error('disk full');
      },
      get: () => undefined,
      query: () => ({ items: [] }),
    };
    const rejecting: TransactionStore = { ...throwing, save: () => Promise.reject(new Error('db down')) };
    const a = recordTransaction({ store: throwing, onError: (e) => errors.push(e) });
    const b = recordTransaction({ store: rejecting, onError: (e) => errors.push(e) });
    const app = express();
    app.get('/a', a, (_req, res) => void res.send('a'));
    app.get('/b', b, (_req, res) => void res.send('b'));
    const base = await start(app);
    const ra = await fetch(`${base}/a`);
    const rb = await fetch(`${base}/b`);
    expect([ra.status, await ra.text(), rb.status, await rb.text()]).to.deep.equal([200, 'a', 200, 'b']);
    await eventually(() => (a.stats.failed === 1 && b.stats.failed === 1 ? true : undefined), 'the failure counts');
    expect(a.stats.recorded + b.stats.recorded).to.equal(0);
    expect(errors.map((e) => (e as Error).message).sort()).to.deep.equal(['db down', 'disk full']);
  });
});

describe('recordTransaction token sections', () => {
  let server: Server | undefined;
  afterEach(() => close(server));

  it('shares one frozen sender and token section among the records of one cached token, per method and policy', async () => {
    const shared = shareTokenData({
      exp: 2_000_000_000,
      info: {
        subject: 'client1',
        clientId: 'client1',
        issuer: 'http://as',
        audience: ['petstore'],
        scopes: ['read'],
        roles: [],
        userInfo: {},
      },
      introspection: { active: true, sub: 'client1', azp: 'client1', iss: 'http://as', scope: 'read' },
    });
    const record = recordTransaction();
    const app = express();
    app.use(record);
    app.use((req, _res, next) => {
      const token = createTokenContext(TOKEN, req.query['method'] === 'query' ? 'query' : 'header', 'demo-idp');
      token.info = shared.info;
      token.introspection = shared.introspection;
      gatewayContext(req).token = token;
      next();
    });
    app.get('/', (_req, res) => void res.send('ok'));
    server = createServer(app);
    const base = await listen(server);
    const ids: string[] = [];
    for (const method of ['header', 'header', 'query'])
      ids.push((await fetch(`${base}/?method=${method}`)).headers.get('gateway-transaction-id')!);
    const [a, b, c] = await Promise.all(ids.map((id) => eventually(() => record.store.get(id) as TransactionRecord | undefined, id)));
    expect(a!.sender).to.deep.equal({ subject: 'client1', clientId: 'client1', issuer: 'http://as' });
    expect(b!.sender).to.equal(a!.sender);
    expect(b!.tokenInfo).to.equal(a!.tokenInfo);
    expect(Object.isFrozen(a!.tokenInfo!.introspection)).to.equal(true);
    expect(c!.tokenInfo, 'another method: sections of its own').not.to.equal(a!.tokenInfo);
    expect(c!.tokenInfo!.method).to.equal('query');
  });
});

describe('recordTransaction id headers on the response head', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await close(server);
  });
  async function start(handler: Parameters<typeof createServer>[1]): Promise<string> {
    const server = createServer(handler);
    servers.push(server);
    return listen(server);
  }
  const ids = (res: globalThis.Response) => [
    res.status,
    res.headers.get('gateway-transaction-id') !== null,
    res.headers.get('gateway-message-id') !== null,
  ];

  for (const [flavour, factory] of [
    ['Express 5', express],
    ['Express 4', express4],
  ] as const) {
    it(`${flavour}: only on responses of requests the recorder saw, also when a sub-app hands the request back to its parent`, async () => {
      const record = recordTransaction();
      const app = factory();
      app.get('/before', (_req, res) => void res.send('not recorded'));
      const sub = factory();
      sub.use(record);
      sub.get('/own', (_req, res) => void res.send('sub'));
      sub.get('/own-missing', (_req, res) => void res.status(404).send('sub 404'));
      app.use('/sub', sub);
      // Requests the sub-app did not answer come back here, under the parent's response prototype.
      app.use('/sub', (req, res) => void res.status(req.path === '/gone' ? 410 : 200).send('parent'));
      app.get('/after', (_req, res) => void res.send('not recorded either'));
      const base = await start(app);
      expect(ids(await fetch(`${base}/sub/own`))).to.deep.equal([200, true, true]);
      expect(ids(await fetch(`${base}/sub/own-missing`))).to.deep.equal([404, true, false]);
      expect(ids(await fetch(`${base}/sub/elsewhere`))).to.deep.equal([200, true, true]);
      expect(ids(await fetch(`${base}/sub/gone`))).to.deep.equal([410, true, false]);
      expect(ids(await fetch(`${base}/before`))).to.deep.equal([200, false, false]);
      expect(ids(await fetch(`${base}/after`))).to.deep.equal([200, false, false]);
      const recorded = await fetch(`${base}/sub/own`);
      const saved = await eventually(
        () => record.store.get(recorded.headers.get('gateway-transaction-id')!) as TransactionRecord | undefined,
        'the record',
      );
      expect(saved.messageId).to.equal(recorded.headers.get('gateway-message-id'));
    });
  }

  it('outside Express, and when writeHead was already replaced on the response, wraps that response', async () => {
    const record = recordTransaction();
    const plain = await start((req, res) => {
      record(req as Request, res as Response, () => {
        res.statusCode = req.url === '/fail' ? 500 : 200;
        res.end('plain');
      });
    });
    expect(ids(await fetch(`${plain}/ok`))).to.deep.equal([200, true, true]);
    expect(ids(await fetch(`${plain}/fail`))).to.deep.equal([500, true, false]);

    const app = express();
    app.use((_req, res, next) => {
      // Another library wrapping writeHead on each response, before the recorder runs.
      const original = res.writeHead;
      res.writeHead = function (this: Response, ...args: unknown[]) {
        res.setHeader('X-Wrapped', 'yes');
        return (original as (...a: unknown[]) => Response).apply(this, args);
      } as typeof res.writeHead;
      next();
    });
    app.use(recordTransaction());
    app.get('/ok', (_req, res) => void res.send('ok'));
    app.get('/bad', (_req, res) => void res.status(400).send('bad'));
    const base = await start(app);
    const ok = await fetch(`${base}/ok`);
    expect(ids(ok)).to.deep.equal([200, true, true]);
    expect(ok.headers.get('x-wrapped')).to.equal('yes');
    expect(ids(await fetch(`${base}/bad`))).to.deep.equal([400, true, false]);
  });
});
