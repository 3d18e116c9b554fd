/**
 * Security: how much of an authorization server's answer the gateway reads. A hostile (or broken)
 * server answering introspection or UserInfo with megabytes must not make the gateway buffer them,
 * nor accept and cache the result: past the policy's `maxResponseSize` (default 256 KiB) the answer
 * is non-conforming, a 503 that is never cached, and the rest of it is not read.
 */
import type { ServerResponse } from 'node:http';
import { expect } from 'chai';
import request from 'supertest';
import { createTokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { PolicyApps, type TestApp } from '../token/helpers.js';
import { json, nowSeconds, startPeer, type Peer } from '../token/peer.js';

describe('security: the size of authorization server answers', function () {
  this.timeout(60_000);
  let peer: Peer;
  const apps = new PolicyApps();

  before(async () => {
    peer = await startPeer();
  });
  after(async () => {
    await apps.closeAll();
    await peer.stop();
  });

  const appWith = (options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> => apps.start(peer.issuer, options);

  function activeClaims(): Record<string, unknown> {
    const now = nowSeconds();
    return {
      active: true,
      iss: peer.issuer,
      sub: 'client1',
      client_id: 'client1',
      aud: 'petstore-api',
      iat: now,
      exp: now + 3600,
      token_type: 'Bearer',
    };
  }

  /** The answer a user sees, and the diagnostic the record keeps. */
  async function expectUnavailable(app: TestApp, token: string, diagnostic: RegExp): Promise<void> {
    const res = await request(app.url).get('/pets').set('Authorization', `Bearer ${token}`);
    expect(res.status).to.equal(503);
    expect(res.headers['retry-after']).to.equal('5');
    expect(res.headers['www-authenticate']).to.equal(undefined);
    expect(res.body).to.include({ status: 503, gateway_status: 'protocol:GATEWAY-1369' });
    const context = app.contexts.at(-1)!;
    expect(context.error?.code).to.equal('ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
    const found = context.diagnostics.find((d) => d.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
    expect(found?.message).to.match(diagnostic);
  }

  it('answers 503 for an introspection answer over 256 KiB, says why, and does not cache it', async () => {
    const app = await appWith();
    peer.introspection = (_req, res) => json(res, { ...activeClaims(), padding: 'x'.repeat(300 * 1024) });
    const before = peer.calls['/introspect'] ?? 0;
    await expectUnavailable(app, 'opaque-large', /^introspection: non-conforming response \(body larger than 262144 bytes/);
    await expectUnavailable(app, 'opaque-large', /^introspection: non-conforming response \(body larger than 262144 bytes/);
    expect(peer.calls['/introspect']! - before, 'introspection calls: the answer was not cached').to.equal(2);
    // Just under the bound is fine.
    peer.introspection = (_req, res) => json(res, { ...activeClaims(), padding: 'x'.repeat(200 * 1024) });
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer opaque-large')).status).to.equal(200);
  });

  it('stops reading a 50 MB streamed introspection answer at the bound', async () => {
    const app = await appWith();
    const total = 50 * 1024 * 1024;
    let written = 0;
    let finished: Promise<void> = Promise.resolve();
    peer.introspection = (_req, res: ServerResponse) => {
      finished = (async () => {
        // Chunked (no Content-Length): the bound must hold on the stream itself.
        res.writeHead(200, { 'content-type': 'application/json' });
        let closed = false;
        let wake: (() => void) | undefined;
        res.on('close', () => {
          closed = true;
          wake?.();
        });
        res.on('drain', () => wake?.());
        res.write(JSON.stringify(activeClaims()).slice(0, -1) + ',"padding":"');
        const chunk = Buffer.alloc(64 * 1024, 'x');
        while (written < total && !closed) {
          written += chunk.length;
          // Backpressure: write on only as fast as the gateway reads.
          if (!res.write(chunk)) await new Promise<void>((resolve) => (wake = resolve));
        }
        if (!closed) res.end('"}');
      })();
    };
    await expectUnavailable(app, 'opaque-stream', /^introspection: non-conforming response \(body larger than 262144 bytes/);
    await finished;
    // What the peer managed to write before the gateway hung up: socket buffers, not 50 MB.
    expect(written, 'bytes the peer wrote').to.be.below(16 * 1024 * 1024);
  });

  it('answers 503 for a UserInfo answer over the bound, which the policy option sets', async () => {
    const app = await appWith({ introspection: false, userInfo: true, maxResponseSize: 4096 });
    peer.userinfo = (_req, res) => json(res, { sub: 'client1', name: 'n'.repeat(5000) });
    await expectUnavailable(app, 'opaque-userinfo', /^userinfo: non-conforming response \(body larger than 4096 bytes/);
    peer.userinfo = (_req, res) => json(res, { sub: 'client1', name: 'Demo' });
    expect((await request(app.url).get('/pets').set('Authorization', 'Bearer opaque-userinfo')).status).to.equal(200);
  });

  it('refuses a bad maxResponseSize at creation', () => {
    const base = { name: 'PetStore IdP', issuer: peer.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' };
    for (const value of [0, -1, 1.5, Number.POSITIVE_INFINITY, '262144']) {
      expect(() => createTokenPolicy({ ...base, maxResponseSize: value as number }), String(value)).to.throw(
        TypeError,
        /options\.maxResponseSize/,
      );
    }
  });
});
