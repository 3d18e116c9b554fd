/**
 * Forgetting one caller's cached token results through createGateway's admin route, over real
 * HTTP: the next request of that caller is introspected again, other callers' results stay.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { createGateway, type Gateway } from '../../src/index.js';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { close, echoBackend, listen } from './helpers.js';

describe('createGateway: forget one caller', () => {
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let gateway: Gateway;
  let api: Server;
  let admin: Server;
  let apiUrl: string;
  let adminUrl: string;

  before(async () => {
    [as, echo] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend()]);
    gateway = createGateway({
      config: {
        tokenPolicies: { DemoIdP: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' } },
        apis: [
          {
            provider: 'Ente',
            name: 'Echo',
            version: 1,
            backend: { url: echo.url },
            tokenManagement: { enabled: true, policy: 'DemoIdP', introspection: true, tokenForward: true },
          },
        ],
      },
      admin: { basicAuth: { username: 'admin', password: 'forget-test' } },
    });
    api = createServer(gateway.handler);
    admin = createServer(express().use(gateway.adminRouter));
    [apiUrl, adminUrl] = await Promise.all([listen(api), listen(admin)]);
  });
  after(async () => {
    await Promise.all([close(api), close(admin)]);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop()]);
  });

  it('POST /gateway/admin/forget drops the results of one client id, and only those', async () => {
    const one = await as.issueToken('client1', 'client1-secret');
    const two = await as.issueToken('client2', 'client2-secret');
    const call = (token: string): Promise<Response> =>
      fetch(`${apiUrl}/gateway/Ente/Echo/v1/x`, { headers: { authorization: `Bearer ${token}` } });
    for (const token of [one, two, one, two]) expect((await call(token)).status).to.equal(201);
    const before = as.stats.introspections;
    const headers = {
      authorization: `Basic ${Buffer.from('admin:forget-test').toString('base64')}`,
      'x-gateway-console': '1',
      'content-type': 'application/json',
    };
    const forgot = await fetch(`${adminUrl}/gateway/admin/forget`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ clientId: 'client1' }),
    });
    expect(forgot.status).to.equal(200);
    expect(await forgot.json()).to.deep.equal({ forgotten: 1 });
    for (const token of [one, two]) expect((await call(token)).status).to.equal(201);
    expect(as.stats.introspections - before, 'only client1 introspected again').to.equal(1);
    expect(gateway.forget({ subject: 'nobody' })).to.equal(0);
  });
});
