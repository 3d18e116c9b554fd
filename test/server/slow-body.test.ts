/**
 * Security: one client address cannot take every `maxConcurrentRequests` slot by sending token-less
 * form bodies slowly, over a real `express-access-gateway serve` process (store `local`, cap 50).
 *
 * The attacker connects from 127.0.0.2 and sends 60 POSTs of `application/x-www-form-urlencoded`
 * declaring `Content-Length: 100000`, then one byte every 2 s: the gateway reads such a body to
 * look for `access_token`. It used to read it holding a slot, so that the 60 held the cap until
 * the server's `requestTimeout` (~31 s) and everyone else was answered 429. Now reading a body is
 * waiting on the client: no slot is held meanwhile, at most 16 bodies of one address are read at
 * once (the rest refused at once, unread), and each must arrive within 10 s (else 400).
 */
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { GatewayConfig } from '../../src/index.js';
import { InvalidOptionError } from '../../src/options.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import { editJson, exampleCopy } from '../gateway/helpers.js';
import { PASSWORD, call, head, holdingBackend, inFlight, rawClient, until, type HoldingBackend, type RawClient } from './slot-support.js';
import { freePort, serve, stop, type Served } from './support.js';

const CAP = 50;
const ATTACKERS = 60;
/** The defaults under test: `maxBodyReadsPerAddress` and `bodyTimeoutMs`. */
const PER_ADDRESS = 16;

/** The first answer a raw client received: its status, header block (lower case) and body. */
function firstAnswer(client: RawClient): { status: number; head: string; body: string } | undefined {
  const text = client.received();
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
  return { status, head: text.slice(0, end).toLowerCase(), body: text.slice(end + 4) };
}

describe('security: slow form bodies cannot hold the instance cap (serve)', function () {
  this.timeout(180_000);
  let as: DemoAuthServer;
  let backend: HoldingBackend;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let served: Served;
  let port: number;
  let api: string;
  let admin: string;
  let token: string;

  before(async () => {
    [as, backend, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), holdingBackend(), exampleCopy()]);
    token = await as.issueToken('client1', 'client1-secret');
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
      config.trafficControl = { maxConcurrentRequests: CAP };
    });
    const adminPort = await freePort();
    port = await freePort();
    served = serve(['serve', '--config', copy.configFile, '--port', String(port), '--admin-port', String(adminPort)], {
      ADMIN_PASSWORD: PASSWORD,
      GATEWAY_NODE_ID: 'slow-body',
    });
    await served.waitFor(/serving APIs at/, 60_000);
    api = `http://127.0.0.1:${port}/gateway`;
    admin = `http://127.0.0.1:${adminPort}/gateway`;
  });

  after(async () => {
    backend?.release();
    await stop(served);
    await Promise.all([as?.stop(), backend?.stop(), copy?.remove()]);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') process.stderr.write(`--- serve, last output:\n${served.output().slice(-4000)}\n`);
  });

  it('60 trickled token-less form POSTs from one address: other clients are served, the trickling ones answered at the deadline', async () => {
    const attack = head('POST', '/gateway/Ente/PetStore/v1/pet', {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': '100000',
    });
    const attackers = await Promise.all(Array.from({ length: ATTACKERS }, () => rawClient(port, `${attack}a`, '127.0.0.2')));
    const trickle = setInterval(() => {
      for (const attacker of attackers) if (!attacker.isClosed()) attacker.socket.write('b');
    }, 2000);
    try {
      // Every attacker has been seen: refused at once, or its body is being read.
      const answeredAtOnce = (): number => attackers.filter((a) => a.statuses().length > 0).length;
      await until(
        async () => answeredAtOnce() + (await inFlight(admin)),
        (n) => n >= ATTACKERS - PER_ADDRESS,
      );
      const refused = answeredAtOnce();
      const gaugeDuring = await inFlight(admin);

      // Everyone else, meanwhile: 20 concurrent requests with a header token, and a form-body token from another address.
      const legitimate = await Promise.all(
        Array.from({ length: 20 }, () => call(`${api}/Ente/PetStore/v1/pet/1`, { headers: { authorization: `Bearer ${token}` } })),
      );
      const form = await call(`${api}/Ente/PetStore/v1/pet`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${encodeURIComponent(token)}&name=rex`,
      });
      const gaugeAfterLegitimate = await inFlight(admin);

      // The bodies being read are answered at their deadline (10 s), well before requestTimeout (30 s).
      await until(
        () => attackers.filter((a) => a.isClosed()).length,
        (n) => n === ATTACKERS,
        40_000,
      );
      const answers = attackers.map(firstAnswer);
      const busy = answers.filter((a) => a?.status === 429);
      const timedOut = answers.filter((a) => a?.status === 400);
      console.log(
        `      ${ATTACKERS} trickling POSTs from 127.0.0.2: ${refused} refused at once, gauge ${gaugeDuring} while the rest were read; ` +
          `legitimate: ${legitimate.filter((a) => a.status === 200).length}×200 of 20, form token ${form.status}, gauge after them ${gaugeAfterLegitimate}; ` +
          `attackers' answers: ${busy.length}×429, ${timedOut.length}×400, others ${answers
            .filter((a) => a?.status !== 429 && a?.status !== 400)
            .map((a) => a?.status ?? 'none')
            .join(',')}`,
      );

      expect(
        legitimate.map((a) => a.status),
        'legitimate requests during the attack',
      ).to.deep.equal(Array(20).fill(200));
      expect(form.status, 'a form-body token from another address').to.equal(200);
      expect(gaugeDuring, 'slots held while the bodies are read').to.equal(0);
      expect(gaugeAfterLegitimate).to.equal(0);
      expect(refused, 'refused at once: past the per-address bound').to.equal(ATTACKERS - PER_ADDRESS);
      expect(busy).to.have.length(ATTACKERS - PER_ADDRESS);
      for (const answer of busy) {
        expect(answer!.head).to.include('content-type: application/problem+json');
        expect(answer!.head).to.include('connection: close');
        expect(JSON.parse(answer!.body)).to.include({ status: 429, gateway_status: 'integration:GATEWAY-1372' });
      }
      expect(timedOut, 'answered at the body-read deadline').to.have.length(PER_ADDRESS);
      for (const answer of timedOut) {
        expect(answer!.head).to.include('content-type: application/problem+json');
        expect(answer!.head).to.include('connection: close');
        expect(JSON.parse(answer!.body)).to.include({ status: 400, gateway_status: 'protocol:GATEWAY-400' });
      }
      expect(await inFlight(admin)).to.equal(0);
    } finally {
      clearInterval(trickle);
      for (const attacker of attackers) attacker.socket.destroy();
    }
  });

  it('the same attack again, right after: repeatable, nothing left held', async () => {
    const attack = head('POST', '/gateway/Ente/PetStore/v1/pet', {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': '100000',
    });
    const attackers = await Promise.all(Array.from({ length: ATTACKERS }, () => rawClient(port, `${attack}a`, '127.0.0.2')));
    try {
      const refused = await until(
        () => attackers.filter((a) => a.statuses().length > 0).length,
        (n) => n >= ATTACKERS - PER_ADDRESS,
      );
      const legitimate = await Promise.all(
        Array.from({ length: 20 }, () => call(`${api}/Ente/PetStore/v1/pet/1`, { headers: { authorization: `Bearer ${token}` } })),
      );
      expect(refused).to.equal(ATTACKERS - PER_ADDRESS);
      expect(legitimate.map((a) => a.status)).to.deep.equal(Array(20).fill(200));
    } finally {
      for (const attacker of attackers) attacker.socket.destroy();
    }
    // Clients gone while their bodies were read: nothing counted any more.
    expect(
      await until(
        () => inFlight(admin),
        (n) => n === 0,
      ),
    ).to.equal(0);
    // The address's reads ended with its connections: a form-body token of it is read again.
    const body = `access_token=${encodeURIComponent(token)}&name=rex`;
    const formPost = head('POST', '/gateway/Ente/PetStore/v1/pet', {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': String(body.length),
      connection: 'close',
    });
    const statuses = await until(
      async () => {
        const client = await rawClient(port, formPost + body, '127.0.0.2');
        await client.closed;
        return client.statuses();
      },
      (found) => found[0] === 200,
      10_000,
    );
    expect(statuses).to.deep.equal([200]);
  });
});

describe('requireToken and introspect: the bounds of a form-body read are checked at creation', () => {
  it('refuses a bodyTimeoutMs or maxBodyReadsPerAddress that is not a positive integer, and a clientAddress that is not a function', () => {
    expect(() => requireToken({ bodyTimeoutMs: 0 })).to.throw(
      InvalidOptionError,
      'requireToken: options.bodyTimeoutMs must be a positive integer',
    );
    expect(() => requireToken({ bodyTimeoutMs: 2 ** 31 })).to.throw(
      InvalidOptionError,
      'requireToken: options.bodyTimeoutMs must be at most',
    );
    expect(() => requireToken({ maxBodyReadsPerAddress: 1.5 })).to.throw(
      InvalidOptionError,
      'requireToken: options.maxBodyReadsPerAddress must be a positive integer',
    );
    expect(() => requireToken({ clientAddress: 'peer' as never })).to.throw(
      InvalidOptionError,
      'requireToken: options.clientAddress must be a function',
    );
    const policy = createTokenPolicy({ name: 'p', issuer: 'http://127.0.0.1:1', clientId: 'gateway', clientSecret: 'secret' });
    try {
      expect(() => introspect({ policy, extraction: { maxBodyReadsPerAddress: -1 } })).to.throw(
        InvalidOptionError,
        'introspect: options.extraction.maxBodyReadsPerAddress must be a positive integer',
      );
      expect(() => requireToken({ policy, bodyTimeoutMs: 1000, maxBodyReadsPerAddress: 4, clientAddress: () => 'x' })).not.to.throw();
    } finally {
      policy.close();
    }
  });
});
