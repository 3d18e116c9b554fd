/**
 * `createRelay`'s `dropHeaders`: client headers never relayed, in any case of their name and however
 * many times sent (what `createGateway` uses for the proxy's client certificate header).
 */
import { request, createServer, type Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { createRelay, InvalidOptionError, problemJsonErrorHandler } from '../../src/index.js';
import { close, echoBackend, listen } from './helpers.js';

describe('createRelay: dropHeaders', () => {
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let server: Server;
  let url: string;
  before(async () => {
    backend = await echoBackend();
    const app = express();
    app.use(createRelay({ target: backend.url, dropHeaders: ['X-SSL-Client-Cert'] }));
    app.use(problemJsonErrorHandler());
    server = createServer(app);
    url = await listen(server);
  });
  after(async () => {
    await close(server);
    await backend.stop();
  });

  it('drops the named headers, repeated or not, and relays the others', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${url}/pets`, { headers: { 'x-ssl-client-cert': ['a', 'b'], 'X-Other': 'kept' }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).to.equal(201);
    const seen = backend.seen.at(-1)!;
    expect(seen.headers).not.to.have.property('x-ssl-client-cert');
    expect(seen.headers['x-other']).to.equal('kept');
  });

  it('refuses a name that is not a header name', () => {
    expect(() => createRelay({ target: backend.url, dropHeaders: ['bad header'] })).to.throw(InvalidOptionError, /dropHeaders\[0\]/);
    expect(() => createRelay({ target: backend.url, dropHeaders: 'x' as unknown as string[] })).to.throw(InvalidOptionError, /dropHeaders/);
  });
});
