/**
 * `createGateway({ logger, accessLog })`: a host's structured logger gets the gateway's events,
 * each with its `event`; without one nothing is written.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { createGateway, type Gateway, type GatewayConfig } from '../../src/index.js';
import type { GatewayLogger, LogFields } from '../../src/log.js';
import { close, echoBackend, listen, openConfig } from './helpers.js';

/** A logger that keeps what it is given, with its level, as pino would write it. */
function keptLogger(bindings: LogFields = {}, kept: Array<LogFields & { level: string }> = []): GatewayLogger & { kept: typeof kept } {
  const at =
    (level: string) =>
    (fields: LogFields, msg?: string): void =>
      void kept.push({ ...bindings, ...fields, level, ...(msg === undefined ? {} : { msg }) });
  return {
    kept,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (more) => keptLogger({ ...bindings, ...more }, kept),
  };
}

const ADMIN = { username: 'admin', password: 'logging-admin-password' };
const auth = { Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`, 'X-Gateway-Console': '1' };

describe('createGateway: logger and accessLog', () => {
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let gateway: Gateway | undefined;
  let server: Server | undefined;
  before(async () => {
    backend = await echoBackend();
  });
  afterEach(async () => {
    await close(server);
    await gateway?.close();
    gateway = undefined;
  });
  after(async () => {
    await backend.stop();
  });

  async function mounted(options: Parameters<typeof createGateway>[0]): Promise<string> {
    gateway = createGateway(options);
    const app = express();
    app.use(gateway.adminRouter);
    app.use(gateway.router);
    server = createServer(app);
    return listen(server);
  }

  it('refuses a logger without the methods of one, and accessLog: true without a logger', () => {
    expect(() => createGateway({ config: openConfig(backend.url), logger: console as never })).to.throw(
      TypeError,
      /^createGateway: options\.logger must be a structured logger with info, warn, error, debug and child/,
    );
    expect(() => createGateway({ config: openConfig(backend.url), accessLog: true })).to.throw(
      TypeError,
      /^createGateway: options\.accessLog true needs logger/,
    );
    expect(() => createGateway({ config: openConfig(backend.url), accessLog: 'yes' as never })).to.throw(
      TypeError,
      /options\.accessLog must be/,
    );
  });

  it('access records per exchange, without the query string; a ResetAllCaches names who asked; a refused configuration its issues', async () => {
    const log = keptLogger();
    let document: GatewayConfig = openConfig(backend.url);
    const base = await mounted({ config: () => document, admin: { basicAuth: ADMIN }, logger: log, accessLog: true });
    expect((await fetch(`${base}/gateway/Ente/Echo/v1/pet?secret-looking=abc123`)).status).to.equal(201);
    const access = log.kept.filter((r) => r['event'] === 'access');
    expect(access).to.have.length(1);
    expect(access[0]).to.include({ level: 'info', api: 'Ente/Echo/v1', method: 'GET', status: 201 });
    expect(JSON.stringify(log.kept)).not.to.include('abc123');

    expect((await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: auth })).status).to.equal(200);
    expect(log.kept.find((r) => r['event'] === 'reset')).to.include({ by: 'admin', apis: 1 });
    // The admin route's change is an operator's action too.
    expect(log.kept.find((r) => r['event'] === 'operator_action')).to.include({ actor: 'admin', action: 'reset-caches', result: 'ok' });

    document = { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: 'ftp://nope' } }] };
    expect((await fetch(`${base}/gateway/admin/reset-caches`, { method: 'POST', headers: auth })).status).to.equal(422);
    const refused = log.kept.find((r) => r['event'] === 'config_error')!;
    expect(refused['level']).to.equal('error');
    expect((refused['issues'] as Array<{ path: string }>).map((issue) => issue.path)).to.include('apis[0].backend.url');
    expect(String(refused['msg'])).to.include('apis[0].backend.url');

    // A wrong password is an operator refused.
    await fetch(`${base}/gateway/admin/status`, {
      headers: { ...auth, Authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` },
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(log.kept.find((r) => r['event'] === 'operator_refused')).to.include({ level: 'warn', action: 'sign-in', result: 'refused' });
  });

  it('a configuration refused at its reload at expiry is logged with its issues, the previous one serving', async () => {
    const log = keptLogger();
    let document: GatewayConfig = openConfig(backend.url);
    const base = await mounted({ config: () => document, configCacheTtlSeconds: 1, logger: log });
    expect((await fetch(`${base}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
    document = { apis: [{ provider: 'Ente', name: 'Echo', version: 1, backend: { url: 'ftp://nope' } }] };
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect((await fetch(`${base}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
    const refused = log.kept.find((r) => r['event'] === 'config_error');
    expect(refused, 'config_error').not.to.equal(undefined);
    expect(refused!['level']).to.equal('error');
    expect(String(refused!['msg'])).to.match(/at its reload at expiry \(the previous one stays in force\)[\s\S]*apis\[0\]\.backend\.url/);
  });

  it('accessLog given its own logger writes there, and the events to logger', async () => {
    const events = keptLogger();
    const access = keptLogger();
    const base = await mounted({ config: openConfig(backend.url), logger: events, accessLog: access });
    expect((await fetch(`${base}/gateway/Ente/Echo/v1/ping`)).status).to.equal(201);
    expect(access.kept.map((r) => r['event'])).to.deep.equal(['access']);
    expect(events.kept.some((r) => r['event'] === 'access')).to.equal(false);
  });
});
