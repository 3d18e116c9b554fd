/**
 * Security: the form-body token (RFC 6750 section 2.2) as an attack surface.
 *
 * - A 1 MiB urlencoded body of repeated fields (`x&x&x…`) must not block the event loop: the
 *   gateway runs in a worker thread, so that this thread can time an unrelated request sent to the
 *   same server while the big body is being processed (a blocked server cannot be timed from its
 *   own thread), and can stop the worker if it never answers.
 * - A form-body token longer than the token length limit is a 400 `invalid_request`, never sent
 *   to the authorization server (which would make it a false 503 "authorization server
 *   unavailable", recorded as an outage).
 */
import { request as httpRequest, type Server } from 'node:http';
import { Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { expect } from 'chai';
import express from 'express';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { requireToken } from '../../src/token/require-token.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { startTestApp, type TestApp } from '../token/helpers.js';

const MALFORMED = 'Bearer realm="PetStore IdP", error="invalid_request", error_description="The request has a malformed token parameter"';

/** In the worker: `requireToken` on POST /pets, and an unrelated GET /ping on the same server. */
async function serveInWorker(): Promise<void> {
  const app = express();
  app.post('/pets', requireToken({ policy: 'PetStore IdP' }), (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/ping', (_req, res) => {
    res.end('pong');
  });
  app.use(problemJsonErrorHandler());
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  parentPort!.postMessage((server.address() as AddressInfo).port);
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over its own agent; rejects after `timeoutMs` (the worker may be blocked). */
function send(
  port: number,
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  timeoutMs: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

if (isMainThread) {
  describe('security: the form-body token', function () {
    this.timeout(60_000);

    describe('a 1 MiB body of repeated fields (x&x&x…)', () => {
      let worker: Worker;
      let port: number;
      before(async () => {
        // The worker loads this TypeScript file itself, through tsx's loader (Node 20 does not run
        // the parent's --import in a worker before its entry module).
        const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
        const self = JSON.stringify(import.meta.url);
        worker = new Worker(`import(${tsx}).then((tsx) => { tsx.register(); return import(${self}); });`, { eval: true });
        port = await new Promise<number>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
        });
      });
      after(() => worker.terminate());

      it('does not delay an unrelated request to the same server by more than 100 ms', async () => {
        const body = Buffer.from('x&'.repeat(512 * 1024)); // exactly 1 MiB: the default maxBodySize
        expect(body.length).to.equal(1024 * 1024);
        const attackAgent = new Agent({ keepAlive: false });
        const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
        // Warm the probe connection, so a probe's latency is the server's, not a TCP handshake.
        await send(port, probeAgent, 'GET', '/ping', {}, undefined, 5000);

        let attackDone = false;
        const attack = send(
          port,
          attackAgent,
          'POST',
          '/pets',
          { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) },
          body,
          10_000,
        ).finally(() => (attackDone = true));
        // Probe, one at a time, until the attack is answered (or the server stops answering).
        const latencies: number[] = [];
        const deadline = Date.now() + 10_000;
        while (!attackDone && Date.now() < deadline) {
          const sent = performance.now();
          try {
            const pong = await send(port, probeAgent, 'GET', '/ping', {}, undefined, 1000);
            expect(pong.body).to.equal('pong');
            latencies.push(performance.now() - sent);
          } catch {
            latencies.push(performance.now() - sent);
            break; // the server is blocked: no need to wait for it
          }
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        const worst = Math.max(...latencies);
        expect(worst, `worst latency of ${latencies.length} unrelated requests, ms`).to.be.below(100);

        const answer = await attack;
        // Too many fields to be a form that carries a token: refused as body-parser's parameterLimit does.
        expect(answer.status).to.equal(413);
        expect(answer.headers['content-type']).to.equal('application/problem+json');
        expect(JSON.parse(answer.body)).to.include({ status: 413, gateway_status: 'protocol:GATEWAY-413' });
        attackAgent.destroy();
        probeAgent.destroy();
      });
    });

    describe('a form-body token above the token length limit', () => {
      let as: DemoAuthServer;
      let policy: TokenPolicy;
      let app: TestApp;
      before(async () => {
        as = await startDemoAuthServer({ port: 0 });
        policy = createTokenPolicy({ name: 'PetStore IdP', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
        app = await startTestApp({ policy });
        // Discovery first, so that the counter below sees only introspection calls.
        await request(app.url)
          .get('/pets')
          .set('Authorization', `Bearer ${await as.issueToken('client1', 'client1-secret')}`)
          .expect(200);
      });
      after(async () => {
        await app.close();
        policy.close();
        await as.stop();
      });

      it('is a 400 invalid_request (malformed), never sent to introspection nor recorded as an outage', async () => {
        const before = as.stats.introspections;
        const res = await request(app.url)
          .post('/pets')
          .type('form')
          .send(`name=rex&access_token=${'a'.repeat(60 * 1024)}`);
        expect(res.status).to.equal(400);
        expect(res.headers['www-authenticate']).to.equal(MALFORMED);
        expect(res.headers['retry-after']).to.equal(undefined);
        expect(res.body).to.include({ status: 400, gateway_status: 'protocol:GATEWAY-1366' });
        expect(as.stats.introspections, 'introspection calls').to.equal(before);
        const context = app.contexts.at(-1)!;
        expect(context.error).to.deep.include({ code: 'ERR_TOKEN_MALFORMED', status: 400, outcome: 'TOKEN_FAILED' });
      });
    });
  });
} else {
  await serveInWorker();
}
