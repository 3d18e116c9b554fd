import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { ANSWER_FIELDS, gatewayContext, type AnswerFields, type GatewayContext } from '../../src/context.js';
import { GatewayError, recordTransaction, sendProblem } from '../../src/index.js';
import { addIdentityHead, MESSAGE_ID_HEADER, setIdentityHead, TRANSACTION_ID_HEADER } from '../../src/exchange/head.js';
import { close, listen } from '../record/helpers.js';

/** Counts the `setHeader` calls made on `res` from now on. */
function countSetHeader(res: ServerResponse): { calls: string[] } {
  const seen = { calls: [] as string[] };
  const original = res.setHeader.bind(res);
  Object.defineProperty(res, 'setHeader', {
    value: (name: string, value: number | string | readonly string[]) => {
      seen.calls.push(name);
      return original(name, value);
    },
    configurable: true,
  });
  return seen;
}

describe('response head: the identity of every gateway answer', () => {
  let server: Server | undefined;
  afterEach(() => close(server));

  async function start(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    server = createServer(handler);
    return listen(server);
  }

  it('addIdentityHead: transaction id always, message id below 400 only, Server when given', () => {
    const context = { transactionId: 'tx-1', messageId: 'msg-1' } as Parameters<typeof addIdentityHead>[1];
    const ok: OutgoingHttpHeaders = { 'content-type': 'text/plain' };
    addIdentityHead(ok, context, 200, 'Gateway');
    expect(ok).to.deep.equal({
      'content-type': 'text/plain',
      Server: 'Gateway',
      [TRANSACTION_ID_HEADER]: 'tx-1',
      [MESSAGE_ID_HEADER]: 'msg-1',
    });
    const refused: OutgoingHttpHeaders = {};
    addIdentityHead(refused, context, 404);
    expect(refused).to.deep.equal({ [TRANSACTION_ID_HEADER]: 'tx-1' });
  });

  it('setIdentityHead: an error answer loses a message id set before it', async () => {
    const base = await start((req, res) => {
      res.setHeader(MESSAGE_ID_HEADER, 'set-too-early');
      setIdentityHead(res, gatewayContext(req), 502, 'Gateway');
      res.statusCode = 502;
      res.end();
    });
    const res = await fetch(base);
    expect(res.status).to.equal(502);
    expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(res.headers.has('gateway-message-id')).to.equal(false);
    expect(res.headers.get('server')).to.equal('Gateway');
  });

  it('the recorder leaves a head that already carries the ids to its one-pass write (no setHeader)', async () => {
    let setHeaders: { calls: string[] } | undefined;
    const app = express();
    // Nothing set before writeHead: Node then writes the head object in one pass, and any
    // setHeader seen would be the hook's.
    app.disable('x-powered-by');
    app.use(recordTransaction());
    app.get('/', (req, res) => {
      setHeaders = countSetHeader(res);
      const head: OutgoingHttpHeaders = { 'content-type': 'text/plain' };
      addIdentityHead(head, gatewayContext(req), 200, 'Gateway');
      res.writeHead(200, head);
      res.end('ok');
    });
    const base = await start(app);
    const res = await fetch(base);
    expect(res.status).to.equal(200);
    expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('gateway-message-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(setHeaders?.calls).to.deep.equal([]);
  });

  it('sendProblem after the recorder: one transaction id, no message id, Server', async () => {
    const app = express();
    app.use(recordTransaction());
    app.get('/', (_req, res) => {
      res.setHeader(MESSAGE_ID_HEADER, 'set-too-early');
      sendProblem(res, new GatewayError('ERR_API_NOT_FOUND'), { server: 'MyGateway' });
    });
    const base = await start(app);
    const res = await fetch(base);
    expect(res.status).to.equal(404);
    expect(res.headers.get('gateway-transaction-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(res.headers.has('gateway-message-id')).to.equal(false);
    expect(res.headers.get('server')).to.equal('MyGateway');
  });

  it('recordTransaction({ idHeaders: false }) leaves the host answers alone and still records them', async () => {
    const record = recordTransaction({ idHeaders: false });
    const app = express();
    app.use(record);
    app.get('/', (_req, res) => void res.send('host answer'));
    const base = await start(app);
    const res = await fetch(base);
    expect(res.status).to.equal(200);
    expect(res.headers.has('gateway-transaction-id')).to.equal(false);
    expect(res.headers.has('gateway-message-id')).to.equal(false);
    expect(() => recordTransaction({ idHeaders: 'no' as never })).to.throw(
      TypeError,
      /^recordTransaction: options\.idHeaders must be a boolean/,
    );
  });

  describe("the answer fields of an exchange (traffic control's rate-limit fields)", () => {
    const answer: AnswerFields = {
      fields: [
        ['RateLimit-Policy', '"p";q=10;w=60'],
        ['RateLimit', '"p";r=9;t=60'],
      ],
      replaces: (name) => /^(x-)?ratelimit(-|$)/i.test(name),
    };
    const withFields = (context: GatewayContext): GatewayContext => {
      (context as { [ANSWER_FIELDS]?: AnswerFields })[ANSWER_FIELDS] = answer;
      return context;
    };

    it('addIdentityHead: replaces the family in the head object, whatever the case of its names', () => {
      const context = withFields({ transactionId: 'tx-1', messageId: 'msg-1' } as GatewayContext);
      const head: OutgoingHttpHeaders = { 'x-ratelimit-limit': '999', RATELIMIT: 'theirs', 'ratelimit-reset': '3', 'x-other': 'kept' };
      addIdentityHead(head, context, 200);
      expect(head).to.deep.equal({
        'x-other': 'kept',
        [TRANSACTION_ID_HEADER]: 'tx-1',
        [MESSAGE_ID_HEADER]: 'msg-1',
        'RateLimit-Policy': '"p";q=10;w=60',
        RateLimit: '"p";r=9;t=60',
      });
    });

    it("setIdentityHead (a problem answer) and the recorder's hook (a host's own answer) write them too, the others gone", async () => {
      const app = express();
      app.use(recordTransaction());
      app.use((req, _res, next) => {
        withFields(gatewayContext(req));
        next();
      });
      app.get('/problem', (_req, res) => {
        res.setHeader('X-RateLimit-Remaining', '5');
        sendProblem(res, new GatewayError('ERR_RATE_LIMITED'));
      });
      app.get('/host', (_req, res) => {
        res.setHeader('X-RateLimit-Limit', '999');
        res.writeHead(200, { 'Content-Type': 'text/plain', RateLimit: 'theirs' });
        res.end('host');
      });
      const base = await start(app);
      for (const route of ['/problem', '/host']) {
        const res = await fetch(`${base}${route}`);
        await res.arrayBuffer();
        expect(res.headers.get('ratelimit'), route).to.equal('"p";r=9;t=60');
        expect(res.headers.get('ratelimit-policy'), route).to.equal('"p";q=10;w=60');
        expect(res.headers.has('x-ratelimit-limit'), route).to.equal(false);
        expect(res.headers.has('x-ratelimit-remaining'), route).to.equal(false);
      }
    });
  });
});
