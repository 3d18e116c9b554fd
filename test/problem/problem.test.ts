import { get, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { GatewayError, messagesEn, type MessageSet } from '../../src/errors.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { sendProblem } from '../../src/problem/render.js';
import { express4 } from '../support/express4.js';

function appThrowing(error: unknown, options?: Parameters<typeof problemJsonErrorHandler>[0], factory = express) {
  const app = factory();
  app.get('/x', (_req, _res, next) => next(error));
  app.use(problemJsonErrorHandler(options));
  return app;
}

/** The header names of an answer exactly as they came over the wire. */
async function wireHeaderNames(app: express.Express, path: string): Promise<string[]> {
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      get(`http://127.0.0.1:${port}${path}`, { agent: false }, (res) => {
        res.resume();
        resolve(res.rawHeaders.filter((_, i) => i % 2 === 0));
      }).on('error', reject);
    });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('problemJsonErrorHandler', () => {
  it('sends the header names in their usual case (WWW-Authenticate, Retry-After, Content-Type, ...)', async () => {
    const unauthorized = await wireHeaderNames(appThrowing(new GatewayError('ERR_TOKEN_INVALID', { realm: 'idp' })), '/x');
    expect(unauthorized).to.include.members(['WWW-Authenticate', 'Content-Type', 'Cache-Control', 'Server', 'Content-Length']);
    const unavailable = await wireHeaderNames(
      appThrowing(new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm: 'idp' })),
      '/x',
    );
    expect(unavailable).to.include('Retry-After');
    for (const name of [...unauthorized, ...unavailable]) expect(name, name).not.to.match(/^(www-authenticate|retry-after|content-type)$/);
  });

  it('renders a GatewayError with the English message set and a custom Server header', async () => {
    const res = await request(
      appThrowing(new GatewayError('ERR_TOKEN_INVALID', { realm: 'idp' }), { messages: 'en', server: 'my-gw' }),
    ).get('/x');
    expect(res.status).to.equal(401);
    expect(res.headers['server']).to.equal('my-gw');
    expect(res.headers['www-authenticate']).to.equal('Bearer realm="idp", error="invalid_token", error_description="Token invalid"');
    expect(res.body).to.deep.equal({
      type: 'https://httpstatuses.com/401',
      title: 'Unauthorized',
      status: 401,
      detail: 'Token not valid',
      gateway_status: 'protocol:GATEWAY-1367',
    });
  });

  it('uses a custom message set and escapes quotes in the realm', async () => {
    const custom: MessageSet = { ...messagesEn, ERR_TOKEN_MISSING: 'where is the token?' };
    const res = await request(
      appThrowing(new GatewayError('ERR_TOKEN_MISSING', { realm: 'a "quoted" \\ realm' }), { messages: custom }),
    ).get('/x');
    expect(res.body.detail).to.equal('where is the token?');
    expect(res.headers['www-authenticate']).to.match(/^Bearer realm="a \\"quoted\\" \\\\ realm", error="invalid_request"/);
  });

  it('answers anything unexpected with a generic 500 that leaks nothing, recording the cause', async () => {
    const app = express();
    let recorded: unknown;
    app.use((req, res, next) => {
      res.on('finish', () => (recorded = req.gateway));
      next();
    });
    app.get('/x', () => {
      throw new Error('database password is hunter2');
    });
    app.use(problemJsonErrorHandler());
    const res = await request(app).get('/x');
    expect(res.status).to.equal(500);
    expect(res.headers['content-type']).to.equal('application/problem+json');
    expect(res.body).to.deep.equal({
      type: 'https://httpstatuses.com/500',
      title: 'Internal Server Error',
      status: 500,
      detail: 'Errore interno del gateway',
      gateway_status: 'integration:GATEWAY-500',
    });
    expect(res.text).not.to.contain('hunter2');
    expect(res.headers['www-authenticate']).to.equal(undefined);
    expect(res.headers['gateway-transaction-id']).to.be.a('string');
    const context = recorded as { error: { code: string }; diagnostics: Array<{ code: string; level: string }> };
    expect(context.error.code).to.equal('ERR_INTERNAL');
    expect(context.diagnostics.at(-1)).to.include({ code: 'ERR_INTERNAL', level: 'error' });
  });

  it('maps a body-parser error to a clean 400 (and 413), on Express 4 and 5', async () => {
    for (const factory of [express, express4]) {
      const app = factory();
      app.post('/x', factory.json(), (_req, res) => res.end());
      app.use(problemJsonErrorHandler());
      const bad = await request(app).post('/x').set('content-type', 'application/json').send('{"oops"');
      expect(bad.status).to.equal(400);
      expect(bad.body.gateway_status).to.equal('protocol:GATEWAY-400');
      const limited = factory();
      limited.post('/x', factory.json({ limit: 10 }), (_req, res) => res.end());
      limited.use(problemJsonErrorHandler());
      const big = await request(limited)
        .post('/x')
        .send({ long: 'x'.repeat(100) });
      expect(big.status).to.equal(413);
    }
  });

  it('answers 503 with Retry-After for the authorization server being unavailable, without a challenge', async () => {
    const res = await request(
      appThrowing(new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm: 'idp', diagnostic: 'introspection: unreachable' })),
    ).get('/x');
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.equal('5');
    expect(res.headers['www-authenticate']).to.equal(undefined);
    expect(res.text).not.to.contain('unreachable');
  });

  it('delegates to next(err) when the headers are already sent', async () => {
    const app = express();
    let delegated = false;
    app.get('/x', (_req, res, next) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      next(new GatewayError('ERR_INTERNAL'));
    });
    app.use(problemJsonErrorHandler());
    app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      delegated = err instanceof GatewayError;
      res.end();
    });
    const res = await request(app).get('/x');
    expect(res.status).to.equal(200);
    expect(res.text).to.equal('partial');
    expect(delegated).to.equal(true);
  });

  it('onError hears of each unexpected error (answered 500) with its request, and of nothing else', async () => {
    const heard: Array<{ err: unknown; url: string | undefined }> = [];
    const onError = (err: unknown, req: { url?: string }): void => void heard.push({ err, url: req.url });
    const boom = new Error('boom');
    expect((await request(appThrowing(boom, { onError })).get('/x')).status).to.equal(500);
    expect(heard).to.deep.equal([{ err: boom, url: '/x' }]);
    // Errors of the catalogue and body-parser refusals are answers, not failures.
    for (const [err, status] of [
      [new GatewayError('ERR_TOKEN_INVALID', { realm: 'r' }), 401],
      [new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm: 'r' }), 503],
      [Object.assign(new Error('bad json'), { status: 400, expose: true, type: 'entity.parse.failed' }), 400],
    ] as const) {
      expect((await request(appThrowing(err, { onError })).get('/x')).status).to.equal(status);
    }
    expect(heard).to.have.length(1);
    // A hook that throws does not change the answer.
    const failing = await request(
      appThrowing(boom, {
        onError: () => {
          throw new Error('the hook failed');
        },
      }),
    ).get('/x');
    expect(failing.status).to.equal(500);
    expect(failing.body.status).to.equal(500);
  });

  it('without onError, an unexpected error is written to console.error with its stack, once per error', async () => {
    const written: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void written.push(args);
    try {
      const once = new Error('written once');
      const app = appThrowing(once);
      await request(app).get('/x');
      await request(app).get('/x');
      await request(appThrowing(new Error('another one'))).get('/x');
      await request(appThrowing(new GatewayError('ERR_TOKEN_INVALID', { realm: 'r' }))).get('/x');
    } finally {
      console.error = original;
    }
    const texts = written.map((args) => args.map(String).join(' '));
    expect(texts).to.have.length(2);
    expect(texts[0]).to.match(/unexpected error answered 500 \(transaction [\w-]+\): Error: written once\n\s+at /);
    expect(texts[1]).to.include('Error: another one');
  });

  it('rejects bad options at factory time', () => {
    expect(() => problemJsonErrorHandler({ messages: 'fr' as 'it' })).to.throw(
      TypeError,
      /^problemJsonErrorHandler: options\.messages must be 'it', 'en' or a MessageSet/,
    );
    expect(() => problemJsonErrorHandler({ server: 3 as unknown as string })).to.throw(
      TypeError,
      /^problemJsonErrorHandler: options\.server must be a non-empty header value/,
    );
    expect(() => problemJsonErrorHandler({ mapClientErrors: 'yes' as never })).to.throw(
      TypeError,
      /^problemJsonErrorHandler: options\.mapClientErrors must be a boolean/,
    );
    expect(() => problemJsonErrorHandler({ onError: 'log' as never })).to.throw(
      TypeError,
      /^problemJsonErrorHandler: options\.onError must be a function/,
    );
    expect(() => problemJsonErrorHandler(null as never)).to.throw(TypeError, /^problemJsonErrorHandler: options must be an object/);
    try {
      problemJsonErrorHandler({ server: 'a\nb' });
      expect.fail('a header value with a line break was accepted');
    } catch (err) {
      expect(err).to.include({ code: 'ERR_INVALID_OPTION', option: 'problemJsonErrorHandler: options.server' });
    }
    // sendProblem checks its options before it touches the response.
    const untouched = {} as ServerResponse;
    expect(() => sendProblem(untouched, new GatewayError('ERR_INTERNAL'), { messages: 'de' as 'it' })).to.throw(
      TypeError,
      /^sendProblem: options\.messages/,
    );
    expect(() => sendProblem(untouched, new GatewayError('ERR_INTERNAL'), { server: '' })).to.throw(
      TypeError,
      /^sendProblem: options\.server/,
    );
  });
});
