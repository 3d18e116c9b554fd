/**
 * Security: the form-body token (RFC 6750 section 2.2) as an attack surface.
 *
 * - A 1 MiB urlencoded body of repeated fields (`x&x&x…`) must not block the event loop: the
 *   gateway runs in a process of its own (support/token-body-gateway.ts), which measures its own
 *   event-loop delay while the big body is processed (support/loop-delay.ts; the measure's control
 *   is in xacml-redos.test.ts), while an unrelated client times requests to the same server, and
 *   which the test can stop if it never answers.
 * - A form-body token longer than the token length limit is a 400 `invalid_request`, never sent
 *   to the authorization server (which would make it a false 503 "authorization server
 *   unavailable", recorded as an outage).
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import request from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { expectNotDelayed, latencyDuring, startTestGateway, type GatewayProcess } from '../authorize/helpers/gateway-process.js';
import { startTestApp, type TestApp } from '../token/helpers.js';

const MALFORMED = 'Bearer realm="PetStore IdP", error="invalid_request", error_description="The request has a malformed token parameter"';

describe('security: the form-body token', function () {
  this.timeout(60_000);

  describe('a 1 MiB body of repeated fields (x&x&x…)', () => {
    let gateway: GatewayProcess;
    before(async () => {
      gateway = await startTestGateway(fileURLToPath(new URL('support/token-body-gateway.ts', import.meta.url)), []);
    });
    after(() => gateway?.stop());

    it('does not delay an unrelated request to the same server by more than 100 ms', async () => {
      const body = Buffer.from('x&'.repeat(512 * 1024)); // exactly 1 MiB: the default maxBodySize
      expect(body.length).to.equal(1024 * 1024);
      const report = await latencyDuring(
        (signal) =>
          fetch(`${gateway.url}/pets`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body,
            signal,
          }),
        `${gateway.url}/ping`,
        { patienceMs: 10_000, loopDelay: gateway.loopDelay },
      );
      expectNotDelayed(report, 100);
      expect(new Set(report.statuses), 'the unrelated requests were answered').to.deep.equal(new Set([200]));

      // Too many fields to be a form that carries a token: refused as body-parser's parameterLimit does.
      expect(report.attack).to.have.property('status', 413);
      const answer = report.attack as { contentType: string; body: string };
      expect(answer.contentType).to.equal('application/problem+json');
      expect(JSON.parse(answer.body)).to.include({ status: 413, gateway_status: 'protocol:GATEWAY-413' });
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
