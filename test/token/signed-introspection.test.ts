/**
 * JWT response for token introspection (RFC 9701), through the gateway over real HTTP: a token
 * policy with `signedIntrospection` asks for the signed answer, verifies it against the issuer's
 * JWKS and uses its `token_introspection`; any other answer of the authorization server is a 503,
 * the backend never reached, nothing cached. The authorization server is a purpose-built one
 * (`rfc9701-server.ts`) switched to misbehave in one way at a time.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { createGateway, MemoryTransactionStore, type Gateway, type GatewayConfig } from '../../src/index.js';
import type { GatewayLogger, LogFields } from '../../src/log.js';
import { ConfigError } from '../../src/config/errors.js';
import { resolveConfig } from '../../src/config/validate.js';
import { tokenPolicyOptionsFor } from '../../src/gateway/compile.js';
import { createTokenPolicy } from '../../src/token/policy.js';
import { close, echoBackend, listen } from '../gateway/helpers.js';
import { startRfc9701Server, type Misbehaviour, type Rfc9701Server } from './rfc9701-server.js';

type Kept = Array<LogFields & { level: string; msg?: string }>;

/** A logger that keeps what it is given, as pino would write it. */
function keptLogger(kept: Kept, bindings: LogFields = {}): GatewayLogger {
  const at =
    (level: string) =>
    (fields: LogFields, msg?: string): void =>
      void kept.push({ ...bindings, ...fields, level, ...(msg === undefined ? {} : { msg }) });
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (more) => keptLogger(kept, { ...bindings, ...more }),
  };
}

/** Each misbehaviour of the server, and what the 503's diagnostic says of it. */
const MISBEHAVIOURS: Array<[Misbehaviour, string]> = [
  ['unsigned', 'the answer is not a signed JWT (Content-Type application/json)'],
  ['jwt-as-json', 'the answer is not a signed JWT (Content-Type application/json)'],
  ['wrong-key', "its signature does not verify with the issuer's key"],
  ['unknown-kid', "no key of the issuer's JWKS matches its header"],
  ['wrong-typ', 'its typ is not token-introspection+jwt'],
  ['wrong-aud', "its aud is not the gateway's client id"],
  ['wrong-iss', 'its iss is not the issuer'],
  ['no-iat', 'it has no iat'],
  ['old-iat', 'it is older than signedIntrospection.maxAgeSeconds (iat)'],
  ['future-iat', 'its iat is in the future'],
  ['alg-none', 'its alg is not one of the allowed algorithms'],
  ['hs256', 'its alg is not one of the allowed algorithms'],
  ['unlisted-alg', 'its alg is not one of the allowed algorithms'],
  ['no-token-introspection', 'its token_introspection is missing or not an object'],
  ['active-string', 'its token_introspection has no boolean active'],
];

describe('signed introspection answers (RFC 9701) through the gateway', function () {
  this.timeout(60_000);
  let as: Rfc9701Server;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let gateway: Gateway;
  let server: Server;
  let base: string;
  let store: MemoryTransactionStore;
  const kept: Kept = [];

  before(async () => {
    [as, echo] = await Promise.all([startRfc9701Server(), echoBackend()]);
    store = new MemoryTransactionStore();
    const config: GatewayConfig = {
      tokenPolicies: {
        AS: { issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', signedIntrospection: true, jwksCooldownSeconds: 1 },
      },
      apis: [
        {
          provider: 'Ente',
          name: 'Echo',
          version: 1,
          backend: { url: echo.url },
          tokenManagement: { enabled: true, policy: 'AS', introspection: true, tokenForward: true },
        },
      ],
    };
    gateway = createGateway({ config, store, logger: keptLogger(kept) });
    server = createServer(gateway.handler);
    base = `${await listen(server)}/gateway/Ente/Echo/v1`;
  });
  after(async () => {
    await close(server);
    await gateway.close();
    await Promise.all([as.stop(), echo.stop()]);
  });
  beforeEach(() => {
    as.misbehaviour = 'none';
  });

  const call = (token: string) => fetch(`${base}/pets`, { headers: { authorization: `Bearer ${token}` } });
  const now = () => Math.floor(Date.now() / 1000);
  const issue = (sub: string) => as.issue({ sub, client_id: 'client1', scope: 'read write', exp: now() + 600 });

  it('a valid signed answer lets the request through, with the information of its token_introspection', async () => {
    const token = issue('mario');
    const accepted = as.accepts.length;
    const seen = echo.seen.length;
    const answer = await call(token);
    expect(answer.status).to.equal(201);
    expect(as.accepts.slice(accepted)).to.deep.equal(['application/token-introspection+jwt']);
    expect(echo.seen.length - seen).to.equal(1);
    const headers = echo.seen.at(-1)!.headers;
    expect(headers['gateway-token-subject']).to.equal('mario');
    expect(headers['gateway-token-clientid']).to.equal('client1');
    expect(headers['gateway-token-scopes']).to.equal('read,write');
    expect(headers['gateway-token-issuer']).to.equal(as.issuer);
    // Cached like any valid result: the second request asks nobody.
    const introspections = as.calls['/introspect'];
    expect((await call(token)).status).to.equal(201);
    expect(as.calls['/introspect']).to.equal(introspections);
  });

  it('a signed answer saying active: false is 401, the backend not reached', async () => {
    const token = issue('luigi');
    as.revoke(token);
    const seen = echo.seen.length;
    const answer = await call(token);
    expect(answer.status).to.equal(401);
    expect(answer.headers.get('www-authenticate')).to.match(/^Bearer realm="AS", error="invalid_token"/);
    expect(await answer.json()).to.include({ gateway_status: 'protocol:GATEWAY-1367' });
    expect(echo.seen.length).to.equal(seen);
  });

  for (const [misbehaviour, reason] of MISBEHAVIOURS) {
    it(`${misbehaviour}: 503, the backend not reached, the record and the log say why, nothing cached`, async () => {
      const token = issue(`user-${misbehaviour}`);
      as.misbehaviour = misbehaviour;
      const seen = echo.seen.length;
      const logged = kept.length;
      const answer = await call(token);
      expect(answer.status).to.equal(503);
      const problem = (await answer.json()) as Record<string, unknown>;
      expect(problem).to.include({ gateway_status: 'protocol:GATEWAY-1369' });
      expect(echo.seen.length, 'backend reached').to.equal(seen);
      const record = await store.get(answer.headers.get('gateway-transaction-id')!);
      expect(record?.errorCode).to.equal('ERR_AUTHORIZATION_SERVER_UNAVAILABLE');
      const diagnostic = `introspection: signed answer refused (RFC 9701): ${reason}`;
      expect(record?.diagnostics.map((d) => d.message).join('\n')).to.include(diagnostic);
      const down = kept.slice(logged).find((r) => r.event === 'authorization_server_down');
      expect(down?.cause, 'log line').to.include(diagnostic);
      expect(JSON.stringify(kept)).to.not.include(token);
      expect(JSON.stringify(record)).to.not.include(token);

      // The server fixed, the same token passes: the 503 was not remembered.
      as.misbehaviour = 'none';
      const again = await call(token);
      expect(again.status).to.equal(201);
      expect(echo.seen.at(-1)!.headers['gateway-token-subject']).to.equal(`user-${misbehaviour}`);
    });
  }

  it("the policy's check says why the server cannot be used", async () => {
    const policy = createTokenPolicy({
      name: 'checked',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      signedIntrospection: true,
    });
    expect(await policy.check()).to.deep.equal({ ok: true });
    as.misbehaviour = 'wrong-aud';
    expect(await policy.check()).to.deep.equal({
      ok: false,
      cause: "introspection: signed answer refused (RFC 9701): its aud is not the gateway's client id",
    });
  });
});

describe('signed introspection answers (RFC 9701): algorithms and bounds', function () {
  this.timeout(60_000);
  let as: Rfc9701Server;
  before(async () => {
    as = await startRfc9701Server();
  });
  after(async () => {
    await as.stop();
  });
  beforeEach(() => {
    as.misbehaviour = 'none';
  });
  const now = () => Math.floor(Date.now() / 1000);

  it('algorithms given replace the metadata list: RS256 allowed, ES256 then refused', async () => {
    const policy = createTokenPolicy({
      name: 'rs',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      signedIntrospection: { algorithms: ['RS256'] },
    });
    as.misbehaviour = 'unlisted-alg';
    const valid = await policy.validate(as.issue({ sub: 'rs-user', exp: now() + 600 }));
    expect(valid.info.subject).to.equal('rs-user');
    as.misbehaviour = 'none';
    const err = await policy.validate(as.issue({ sub: 'es-user', exp: now() + 600 })).catch((e: unknown) => e);
    expect(err).to.include({
      code: 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE',
      diagnostic: 'introspection: signed answer refused (RFC 9701): its alg is not one of the allowed algorithms',
    });
  });

  it('maxAgeSeconds bounds the age of iat', async () => {
    const policy = createTokenPolicy({
      name: 'age',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      signedIntrospection: { maxAgeSeconds: 3600 },
    });
    as.misbehaviour = 'old-iat';
    expect((await policy.validate(as.issue({ sub: 'old', exp: now() + 600 }))).info.subject).to.equal('old');
  });

  it('metadata listing no asymmetric algorithm: 503 that says so, without a call; algorithms given override it', async () => {
    const metadata = {
      issuer: as.issuer,
      introspection_endpoint: `${as.issuer}/introspect`,
      jwks_uri: `${as.issuer}/jwks`,
      introspection_signing_alg_values_supported: ['HS256', 'none'],
    };
    const options = { name: 'hmac-only', metadata, clientId: 'gateway', clientSecret: 'gateway-secret' };
    const token = as.issue({ sub: 'listed', exp: now() + 600 });
    const introspections = as.calls['/introspect'] ?? 0;
    const err = await createTokenPolicy({ ...options, signedIntrospection: true })
      .validate(token)
      .catch((e: unknown) => e);
    expect(err).to.include({
      code: 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE',
      diagnostic:
        "introspection: signed answer refused (RFC 9701): the server's introspection_signing_alg_values_supported names no asymmetric algorithm (give signedIntrospection.algorithms)",
    });
    expect(as.calls['/introspect'] ?? 0).to.equal(introspections);
    const given = createTokenPolicy({ ...options, signedIntrospection: { algorithms: ['ES256'] } });
    expect((await given.validate(token)).info.subject).to.equal('listed');
  });

  it("key rotation: the policy's JWKS is fetched again for the new kid, at most once per cool-down", async () => {
    const policy = createTokenPolicy({
      name: 'rotation',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      signedIntrospection: true,
      jwksCooldownSeconds: 1,
    });
    const fetches = as.jwksFetches;
    expect((await policy.validate(as.issue({ sub: 'before', exp: now() + 600 }))).info.subject).to.equal('before');
    expect(as.jwksFetches - fetches, 'the first answer fetches the JWKS').to.equal(1);
    await as.rotate();
    // Within the cool-down the new kid is not looked for: 503, the JWKS not asked again.
    const early = await policy.validate(as.issue({ sub: 'early', exp: now() + 600 })).catch((e: unknown) => e);
    expect(early).to.include({
      code: 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE',
      diagnostic: "introspection: signed answer refused (RFC 9701): no key of the issuer's JWKS matches its header (kid, alg)",
    });
    expect(as.jwksFetches - fetches).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await policy.validate(as.issue({ sub: 'after', exp: now() + 600 }))).info.subject).to.equal('after');
    expect(as.jwksFetches - fetches, 'one fetch for the new kid').to.equal(2);
  });

  it('without signedIntrospection the gateway asks plain JSON and accepts it', async () => {
    const policy = createTokenPolicy({ name: 'plain', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    const accepted = as.accepts.length;
    expect((await policy.validate(as.issue({ sub: 'plain', exp: now() + 600 }))).info.subject).to.equal('plain');
    expect(as.accepts.slice(accepted)).to.deep.equal(['application/json']);
  });

  it('with client_secret_post too', async () => {
    const policy = createTokenPolicy({
      name: 'post',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      clientAuthMethod: 'client_secret_post',
      signedIntrospection: true,
    });
    expect((await policy.validate(as.issue({ sub: 'post', exp: now() + 600 }))).info.subject).to.equal('post');
  });
});

describe('signed introspection answers (RFC 9701): the option', () => {
  const base = { name: 'p', issuer: 'http://127.0.0.1:9000', clientId: 'gateway', clientSecret: 'gateway-secret' };
  const file = (signedIntrospection: unknown) =>
    ({
      tokenPolicies: { idp: { issuer: base.issuer, clientId: 'gateway', clientSecret: 'gateway-secret', signedIntrospection } },
      apis: [
        {
          provider: 'Ente',
          name: 'P',
          version: 1,
          backend: { url: 'http://127.0.0.1:9001' },
          tokenManagement: { enabled: true, policy: 'idp' },
        },
      ],
    }) as unknown as GatewayConfig;

  it('createTokenPolicy refuses a bad value, naming it', () => {
    const refusals: Array<[unknown, string]> = [
      ['yes', 'options.signedIntrospection must be a boolean or an object { algorithms?, maxAgeSeconds? }'],
      [null, 'options.signedIntrospection must be a boolean or an object { algorithms?, maxAgeSeconds? }'],
      [{ algorithms: ['HS256'] }, 'options.signedIntrospection.algorithms must be a non-empty array of asymmetric JWS algorithms'],
      [{ algorithms: ['ES256', 'none'] }, 'options.signedIntrospection.algorithms must be a non-empty array of asymmetric JWS algorithms'],
      [{ algorithms: [] }, 'options.signedIntrospection.algorithms must be a non-empty array of asymmetric JWS algorithms'],
      [{ maxAgeSeconds: 0 }, 'options.signedIntrospection.maxAgeSeconds must be a positive number'],
      [{ alg: ['ES256'] }, 'options.signedIntrospection.alg is not an option (options: algorithms, maxAgeSeconds)'],
    ];
    for (const [value, message] of refusals) {
      expect(() => createTokenPolicy({ ...base, signedIntrospection: value } as never), JSON.stringify(value)).to.throw(
        TypeError,
        `createTokenPolicy: ${message}`,
      );
    }
    for (const value of [true, false, {}, { algorithms: ['ES256', 'PS256'], maxAgeSeconds: 60 }])
      expect(() => createTokenPolicy({ ...base, signedIntrospection: value })).to.not.throw();
  });

  it('the configuration file refuses a bad value with its path, and passes a good one to the token policy', async () => {
    const issues = async (value: unknown) => {
      const error = await resolveConfig(file(value)).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ConfigError);
      return (error as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
    };
    expect(await issues({ algorithms: ['none'] })).to.deep.equal([
      'tokenPolicies.idp.signedIntrospection.algorithms: must be a non-empty array of asymmetric JWS algorithms',
    ]);
    expect(await issues('yes')).to.deep.equal([
      'tokenPolicies.idp.signedIntrospection: must be a boolean or an object { algorithms?, maxAgeSeconds? }',
    ]);
    expect(await issues({ maxAgeSeconds: -1 })).to.deep.equal([
      'tokenPolicies.idp.signedIntrospection.maxAgeSeconds: must be a positive number',
    ]);
    const config = await resolveConfig(file({ algorithms: ['ES256'], maxAgeSeconds: 120 }));
    const api = config.apis[0]!;
    const [, options] = tokenPolicyOptionsFor(config.tokenPolicies['idp']!, api as typeof api & { tokenManagement: { enabled: true } });
    expect(options.signedIntrospection).to.deep.equal({ algorithms: ['ES256'], maxAgeSeconds: 120 });
  });
});
