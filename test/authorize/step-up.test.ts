/**
 * requireUserAuthentication (step-up authentication, RFC 9470): without a server, its option
 * checks, how it reads `acr` and `auth_time`, the clock and what it answers; then in an Express
 * host (requireToken + introspect + requireUserAuthentication + problemJsonErrorHandler) over real
 * HTTP with the demo authorization server (oidc-provider) issuing the tokens.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import {
  InsufficientUserAuthenticationError,
  requireUserAuthentication,
  stepUpRuleIssues,
  type RequireUserAuthenticationOptions,
} from '../../src/authorize/step-up.js';
import { createTokenContext, gatewayContext, type TokenContext } from '../../src/context.js';
import { GatewayError } from '../../src/errors.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { bearerChallenge } from '../../src/problem/render.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import { noteValidatingPolicy } from '../../src/token/validated-by.js';
import { listen } from '../token/forward/helpers.js';

const SILVER = 'urn:mace:incommon:iap:silver';
const GOLD = 'urn:mace:incommon:iap:gold';
const info = { audience: [], scopes: [], roles: [], userInfo: {} };
const now = (): number => Math.floor(Date.now() / 1000);

/** Runs the middleware on a request carrying `token` (and `operation`, and the policy that validated it); returns what it passed to next. */
function run(
  options: RequireUserAuthenticationOptions,
  token: Partial<TokenContext> | undefined,
  operation?: string,
  policy?: TokenPolicy,
): unknown {
  const req = {} as IncomingMessage;
  const context = gatewayContext(req);
  if (token !== undefined) context.token = Object.assign(createTokenContext('raw-token-value', 'header', 'idp'), token);
  if (operation !== undefined) context.api = { provider: 'Ente', name: 'Payments', version: 1, operation };
  if (policy !== undefined && context.token !== undefined) noteValidatingPolicy(context.token, policy);
  let passed: unknown = 'not called';
  requireUserAuthentication(options)(req, {} as ServerResponse, (err?: unknown) => {
    passed = err;
  });
  return passed;
}

describe('requireUserAuthentication', () => {
  it('passes a token whose acr is one of the values, refuses another with acr_values in the challenge', () => {
    const rules = { requiredAcrValues: [SILVER, GOLD] };
    expect(run(rules, { info, introspection: { acr: GOLD } })).to.equal(undefined);
    const err = run(rules, { info, introspection: { acr: 'urn:mace:incommon:iap:bronze' } });
    expect(err).to.be.instanceOf(InsufficientUserAuthenticationError);
    const error = err as InsufficientUserAuthenticationError;
    expect(error).to.include({
      code: 'ERR_INSUFFICIENT_USER_AUTHENTICATION',
      status: 401,
      realm: 'idp',
      outcome: 'INSUFFICIENT_USER_AUTHENTICATION',
    });
    expect(error.gatewayStatus).to.equal('protocol:GATEWAY-1374');
    expect(error.diagnostic).to.equal(
      `the user authentication behind the token is not the one the API requires: acr "urn:mace:incommon:iap:bronze" is not one of ${SILVER} ${GOLD}`,
    );
    expect(bearerChallenge(error)).to.equal(
      `Bearer realm="idp", error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="${SILVER} ${GOLD}"`,
    );
    // resource_metadata ends a 401's challenge (RFC 9728 section 5.1).
    expect(bearerChallenge(error, 'https://api.example.org/.well-known/oauth-protected-resource/x')).to.match(
      /acr_values="[^"]+", resource_metadata="https:\/\/api\.example\.org\/\.well-known\/oauth-protected-resource\/x"$/,
    );
    // Neither a missing acr, another type, nor a near miss passes.
    for (const acr of [undefined, null, 1, [GOLD], `${GOLD} `, GOLD.toUpperCase()]) {
      expect(run(rules, { info, introspection: { acr } }), JSON.stringify(acr)).to.be.instanceOf(InsufficientUserAuthenticationError);
    }
  });

  it('reads acr and auth_time from the validated JWT, else the introspection answer, never UserInfo or an inherited member', () => {
    const rules = { requiredAcrValues: [GOLD], maxAuthenticationAge: 60 };
    expect(run(rules, { info, jwt: { acr: GOLD, auth_time: now() - 10 }, introspection: { acr: 'other' } })).to.equal(undefined);
    expect(run(rules, { info, jwt: { acr: GOLD }, introspection: { auth_time: now() - 10 } })).to.equal(undefined);
    expect(run(rules, { info, userInfo: { acr: GOLD, auth_time: now() } })).to.be.instanceOf(InsufficientUserAuthenticationError);
    const inherited = Object.create({ acr: GOLD, auth_time: now() }) as Record<string, unknown>;
    expect(run(rules, { info, introspection: inherited })).to.be.instanceOf(InsufficientUserAuthenticationError);
  });

  it("judges the age of the authentication: missing, in the future, too old; the validating policy's clock tolerance, else none", () => {
    const rules = { maxAuthenticationAge: 300 };
    const refused = (token: Partial<TokenContext>, policy?: TokenPolicy) =>
      run(rules, token, undefined, policy) as InsufficientUserAuthenticationError;
    expect(run(rules, { info, introspection: { auth_time: now() - 299 } })).to.equal(undefined);
    expect(refused({ info, introspection: {} }).diagnostic).to.match(/: no auth_time claim$/);
    expect(refused({ info, introspection: { auth_time: String(now()) } }).diagnostic).to.match(/: no auth_time claim$/);
    expect(refused({ info, introspection: { auth_time: now() + 60 } }).diagnostic).to.match(/: auth_time is in the future$/);
    const old = refused({ info, introspection: { auth_time: now() - 303 } });
    expect(old.diagnostic).to.match(/: authenticated 30[34] s ago, more than the 300 s allowed$/);
    expect(bearerChallenge(old)).to.equal(
      'Bearer realm="idp", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="300"',
    );
    // A policy's clockSkew (default 5 s) is tolerated, as for the token's own times.
    const policy = createTokenPolicy({ name: 'idp', issuer: 'http://127.0.0.1:9', clientId: 'gateway', clientSecret: 'gateway-secret' });
    try {
      expect(policy.clockTolerance).to.equal(5);
      expect(run(rules, { info, introspection: { auth_time: now() - 303 } }, undefined, policy)).to.equal(undefined);
      expect(run(rules, { info, introspection: { auth_time: now() + 3 } }, undefined, policy)).to.equal(undefined);
      expect(refused({ info, introspection: { auth_time: now() - 310 } }, policy)).to.be.instanceOf(InsufficientUserAuthenticationError);
    } finally {
      policy.close();
    }
  });

  it("an operation's rule: its acr values replace the API's, the smaller max age applies; the challenge names every requirement", () => {
    const rules: RequireUserAuthenticationOptions = {
      requiredAcrValues: [SILVER, GOLD],
      maxAuthenticationAge: 3600,
      operations: [
        { name: 'transfer', requiredAcrValues: [GOLD], maxAuthenticationAge: 7200 },
        { name: 'sign', maxAuthenticationAge: 60 },
        { name: 'list' },
      ],
    };
    const silver = { info, introspection: { acr: SILVER, auth_time: now() - 120 } };
    expect(run(rules, silver, 'list')).to.equal(undefined);
    expect(run(rules, silver, 'other')).to.equal(undefined);
    const transfer = run(rules, silver, 'transfer') as InsufficientUserAuthenticationError;
    expect(transfer).to.include({ acrValues: GOLD, maxAge: 3600, challengeDescription: 'A different authentication level is required' });
    const sign = run(rules, silver, 'sign') as InsufficientUserAuthenticationError;
    expect(sign).to.include({ acrValues: `${SILVER} ${GOLD}`, maxAge: 60, challengeDescription: 'More recent authentication is required' });
    const both = run(rules, { info, introspection: { acr: 'x', auth_time: now() - 120 } }, 'sign') as InsufficientUserAuthenticationError;
    expect(bearerChallenge(both)).to.equal(
      `Bearer realm="idp", error="insufficient_user_authentication", error_description="A different authentication level and a more recent authentication are required", acr_values="${SILVER} ${GOLD}", max_age="60"`,
    );
    // Rules only for an operation: other requests pass.
    expect(run({ operations: [{ name: 'sign', maxAuthenticationAge: 60 }] }, { info, introspection: {} }, 'list')).to.equal(undefined);
  });

  it('fails closed (500) without a validated token', () => {
    for (const token of [undefined, {}]) {
      const err = run({ requiredAcrValues: [GOLD] }, token);
      expect(err).to.be.instanceOf(GatewayError);
      expect(err).to.have.property('code', 'ERR_INTERNAL');
    }
  });

  it('checks its options at creation, each error naming requireUserAuthentication: options.<path> (code ERR_INVALID_OPTION)', () => {
    const cases: Array<[unknown, string]> = [
      [null, 'requireUserAuthentication: options must be an object'],
      [{}, 'requireUserAuthentication: options require nothing'],
      [{ operations: [{ name: 'list' }] }, 'requireUserAuthentication: options require nothing'],
      [
        { requiredAcrValues: [] },
        'requireUserAuthentication: options.requiredAcrValues must be a non-empty array of at most 64 acr values',
      ],
      [
        { requiredAcrValues: GOLD },
        'requireUserAuthentication: options.requiredAcrValues must be a non-empty array of at most 64 acr values',
      ],
      [{ requiredAcrValues: [GOLD, ''] }, 'requireUserAuthentication: options.requiredAcrValues[1] must be an acr value'],
      [{ requiredAcrValues: ['a b'] }, 'requireUserAuthentication: options.requiredAcrValues[0] must be an acr value'],
      [
        { requiredAcrValues: Array.from({ length: 65 }, (_, i) => `urn:acr:${i}`) },
        'requireUserAuthentication: options.requiredAcrValues must be a non-empty array of at most 64 acr values',
      ],
      [{ requiredAcrValues: ['x'.repeat(257)] }, 'requireUserAuthentication: options.requiredAcrValues[0] must be an acr value: 1 to 256'],
      [
        { requiredAcrValues: [GOLD, SILVER, GOLD] },
        'requireUserAuthentication: options.requiredAcrValues[2] duplicates requiredAcrValues[0]',
      ],
      [
        { maxAuthenticationAge: 0 },
        'requireUserAuthentication: options.maxAuthenticationAge must be a whole number of seconds from 1 to 31536000',
      ],
      [{ maxAuthenticationAge: 1.5 }, 'requireUserAuthentication: options.maxAuthenticationAge must be a whole number'],
      [{ maxAuthenticationAge: 31_536_001 }, 'requireUserAuthentication: options.maxAuthenticationAge must be a whole number'],
      [{ maxAuthenticationAge: '60' }, 'requireUserAuthentication: options.maxAuthenticationAge must be a whole number'],
      [{ operations: {} }, 'requireUserAuthentication: options.operations must be an array'],
      [{ operations: [{ maxAuthenticationAge: 60 }] }, 'requireUserAuthentication: options.operations[0].name must be a non-empty string'],
      [
        { operations: [{ name: 'x', requiredAcrValues: [] }] },
        'requireUserAuthentication: options.operations[0].requiredAcrValues must be a non-empty array',
      ],
      [
        {
          operations: [
            { name: 'x', maxAuthenticationAge: 60 },
            { name: 'x', requiredAcrValues: [GOLD] },
          ],
        },
        'requireUserAuthentication: options.operations[1] operations[0] of the same name already has step-up rules',
      ],
      [
        { maxAge: 60 },
        'requireUserAuthentication: options.maxAge is not an option (options: requiredAcrValues, maxAuthenticationAge, operations)',
      ],
      [{ acrValues: [GOLD] }, 'requireUserAuthentication: options.acrValues is not an option (did you mean "requiredAcrValues"?)'],
    ];
    for (const [options, message] of cases) {
      expect(() => requireUserAuthentication(options as RequireUserAuthenticationOptions), message)
        .to.throw(TypeError, message)
        .with.property('code', 'ERR_INVALID_OPTION');
    }
  });

  it('stepUpRuleIssues reports every problem, for the configuration validator', () => {
    expect(stepUpRuleIssues({ requiredAcrValues: ['a', 'a', 3], maxAuthenticationAge: -1 })).to.deep.equal([
      { path: 'requiredAcrValues[1]', message: 'duplicates requiredAcrValues[0]' },
      { path: 'requiredAcrValues[2]', message: 'must be an acr value: 1 to 256 printable ASCII characters, no space, " or \\' },
      { path: 'maxAuthenticationAge', message: 'must be a whole number of seconds from 1 to 31536000 (one year)' },
    ]);
    expect(stepUpRuleIssues({})).to.deep.equal([]);
  });
});

describe('requireUserAuthentication in an Express host, over real HTTP', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let host: { url: string; close: () => Promise<void> };
  let reached = 0;

  before(async () => {
    as = await startDemoAuthServer({
      port: 0,
      clients: [
        { clientId: 'plain', clientSecret: 'plain-secret' },
        { clientId: 'gold', clientSecret: 'gold-secret', authentication: { acr: GOLD, authTime: (t) => t - 30 } },
        { clientId: 'gold-stale', clientSecret: 'gold-stale-secret', authentication: { acr: GOLD, authTime: (t) => t - 7200 } },
        { clientId: 'gateway', clientSecret: 'gateway-secret' },
      ],
    });
    policy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    const app = express();
    app.use(
      '/payments',
      requireToken({ policy }),
      introspect({ policy }),
      requireUserAuthentication({ requiredAcrValues: [SILVER, GOLD], maxAuthenticationAge: 3600 }),
      (_req, res) => {
        reached++;
        res.json({ ok: true });
      },
    );
    app.use(problemJsonErrorHandler());
    host = await listen(app);
  });
  after(async () => {
    await host.close();
    policy.close();
    await as.stop();
  });

  const call = async (client: string) => {
    const token = await as.issueToken(client, `${client}-secret`);
    const res = await fetch(`${host.url}/payments`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (await res.json()) as Record<string, unknown> };
  };

  it('answers 401 problem+json with the RFC 9470 challenge, and lets a sufficient authentication through', async () => {
    const before = reached;
    const plain = await call('plain');
    expect(plain.status).to.equal(401);
    expect(plain.challenge).to.equal(
      `Bearer realm="demo-idp", error="insufficient_user_authentication", error_description="A different authentication level and a more recent authentication are required", acr_values="${SILVER} ${GOLD}", max_age="3600"`,
    );
    expect(plain.body).to.deep.equal({
      type: 'https://httpstatuses.com/401',
      title: 'Unauthorized',
      status: 401,
      detail: "L'autenticazione dell'utente non è del livello richiesto dal servizio o non è abbastanza recente",
      gateway_status: 'protocol:GATEWAY-1374',
    });
    const stale = await call('gold-stale');
    expect(stale.status).to.equal(401);
    expect(stale.challenge).to.include('error_description="More recent authentication is required"');
    expect(reached, 'refused requests reach nothing').to.equal(before);
    const gold = await call('gold');
    expect(gold.status).to.equal(200);
    expect(gold.body).to.deep.equal({ ok: true });
    expect(reached).to.equal(before + 1);
  });
});
