/** requireScopes without a server: its option checks, how it reads scopes and claims, what it answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import {
  InsufficientScopeError,
  requireScopes,
  requiresSomething,
  scopeRuleIssues,
  scopeWays,
  type RequireScopesOptions,
} from '../../src/authorize/scopes.js';
import { createTokenContext, type TokenContext } from '../../src/context.js';
import { GatewayError, messageSets } from '../../src/errors.js';
import { bearerChallenge, renderProblem } from '../../src/problem/render.js';

/** Runs the middleware on a request carrying `token` (and `operation`); resolves with what it passed to next. */
function run(options: RequireScopesOptions, token: Partial<TokenContext> | undefined, operation?: string): unknown {
  const req = {} as IncomingMessage;
  const context = {
    transactionId: 't',
    messageId: 'm',
    startedAt: 0,
    diagnostics: [],
    outgoing: { headers: {} },
  } as unknown as NonNullable<IncomingMessage['gateway']>;
  if (token !== undefined) context.token = Object.assign(createTokenContext('raw-token-value', 'header', 'idp'), token);
  if (operation !== undefined) context.api = { provider: 'Ente', name: 'PetStore', version: 1, operation };
  req.gateway = context;
  let passed: unknown = 'not called';
  requireScopes(options)(req, {} as ServerResponse, (err?: unknown) => {
    passed = err;
  });
  return passed;
}

const info = (scopes: string[]) => ({ audience: [], scopes, roles: [], userInfo: {} });

describe('requireScopes', () => {
  it('passes a token holding every required scope, refuses one lacking any with the scopes for the challenge', () => {
    expect(run({ requiredScopes: ['a', 'b'] }, { info: info(['b', 'a', 'c']) })).to.equal(undefined);
    // A scope that merely starts with (or contains) the required one is another scope.
    expect(run({ requiredScopes: ['pets:write'] }, { info: info(['pets:write:all', 'pets:writer', 'xpets:write']) })).to.be.instanceOf(
      InsufficientScopeError,
    );
    const err = run({ requiredScopes: ['a', 'b'] }, { info: info(['a']) });
    expect(err).to.be.instanceOf(InsufficientScopeError);
    const error = err as InsufficientScopeError;
    expect(error.code).to.equal('ERR_INSUFFICIENT_SCOPE');
    expect(error.status).to.equal(403);
    expect(error.realm).to.equal('idp');
    expect(error.scope).to.equal('a b');
    expect(error.diagnostic).to.equal('the token lacks what the API requires: scope b');
    expect(bearerChallenge(error)).to.equal(
      'Bearer realm="idp", error="insufficient_scope", scope="a b", error_description="The request requires higher privileges than provided by the access token"',
    );
  });

  it('reads claims from the JWT, then introspection: strings, array items, numbers and booleans as JSON text, dotted names as nested members', () => {
    const rules = { requiredClaims: { tenant: ['acme'], 'realm_access.roles': ['clerk'], level: ['3'], staff: ['true'] } };
    const token = {
      info: info([]),
      jwt: { tenant: 'acme', level: 3 },
      introspection: { realm_access: { roles: ['x', 'clerk'] }, staff: true },
    };
    expect(run(rules, token)).to.equal(undefined);
    // A claim of its own named with a dot wins over the nested reading.
    expect(run({ requiredClaims: { 'a.b': ['own'] } }, { info: info([]), introspection: { 'a.b': 'own', a: { b: 'nested' } } })).to.equal(
      undefined,
    );
    const err = run(rules, { ...token, jwt: { tenant: 'other', level: 3 } }) as InsufficientScopeError;
    expect(err.scope).to.equal(undefined);
    expect(err.diagnostic).to.equal('the token lacks what the API requires: claim tenant');
    expect(bearerChallenge(err)).to.equal(
      'Bearer realm="idp", error="insufficient_scope", error_description="The request requires higher privileges than provided by the access token"',
    );
  });

  it('never matches objects, nested arrays, null, inherited members or a substring', () => {
    const rules = { requiredClaims: { c: ['x'] } };
    for (const value of [{ x: 1 }, [['x']], null, 'xx', ' x', 'X']) {
      expect(run(rules, { info: info([]), introspection: { c: value } }), JSON.stringify(value)).to.be.instanceOf(InsufficientScopeError);
    }
    expect(run({ requiredClaims: { 'c.toString': ['x'] } }, { info: info([]), introspection: { c: {} } })).to.be.instanceOf(
      InsufficientScopeError,
    );
    expect(run({ requiredClaims: { constructor: ['x'] } }, { info: info([]), introspection: {} })).to.be.instanceOf(InsufficientScopeError);
  });

  it("checks an operation's rules on top of the API's, and only the API's for other operations", () => {
    const rules: RequireScopesOptions = {
      requiredScopes: ['read'],
      operations: [{ name: 'update', requiredScopes: ['write'], requiredClaims: { tenant: ['acme'] } }, { name: 'get' }],
    };
    expect(run(rules, { info: info(['read']) }, 'get')).to.equal(undefined);
    expect(run(rules, { info: info(['read']) }, 'other')).to.equal(undefined);
    expect(run(rules, { info: info(['read']) })).to.equal(undefined);
    const err = run(rules, { info: info(['read']) }, 'update') as InsufficientScopeError;
    expect(err.scope).to.equal('read write');
    expect(err.diagnostic).to.equal('the token lacks what the API requires: scope write, claim tenant');
    expect(run(rules, { info: info(['write']), jwt: { tenant: 'acme' } }, 'update')).to.be.instanceOf(InsufficientScopeError);
    expect(run(rules, { info: info(['read', 'write']), jwt: { tenant: 'acme' } }, 'update')).to.equal(undefined);
  });

  it('fails closed (500) without a validated token, and cannot be built requiring nothing', () => {
    const err = run({ requiredScopes: ['a'] }, undefined);
    expect(err).to.be.instanceOf(GatewayError);
    expect((err as GatewayError).code).to.equal('ERR_INTERNAL');
    expect(run({ requiredScopes: ['a'] }, {})).to.have.property('code', 'ERR_INTERNAL');
    for (const nothing of [
      {},
      { requiredScopes: [] },
      { requiredClaims: {} },
      { operations: [{ name: 'get' }] },
      { operations: [{ name: 'get', requiredScopes: [] }] },
    ]) {
      expect(() => requireScopes(nothing), JSON.stringify(nothing))
        .to.throw(TypeError, 'requireScopes: options require no scope and no claim')
        .with.property('code', 'ERR_INVALID_OPTION');
    }
  });

  it('never puts the token or claim values in its diagnostic', () => {
    const err = run(
      { requiredClaims: { email: ['a@example.org'] } },
      { info: info([]), introspection: { email: 'secret@example.org' } },
    ) as GatewayError;
    expect(err.diagnostic).to.equal('the token lacks what the API requires: claim email');
    expect(JSON.stringify(err)).not.to.include('raw-token-value');
  });

  it('checks its options at creation, each error naming requireScopes: options.<path> (code ERR_INVALID_OPTION)', () => {
    const cases: Array<[unknown, string]> = [
      [null, 'requireScopes: options must be an object'],
      [{ requiredScopes: 'read' }, 'requireScopes: options.requiredScopes must be an array of at most 64 scopes'],
      [
        { requiredScopes: ['read', 'a b'] },
        'requireScopes: options.requiredScopes[1] must be a scope: 1 to 256 printable ASCII characters, no space, " or \\',
      ],
      [{ requiredScopes: ['a"b'] }, 'requireScopes: options.requiredScopes[0] must be a scope'],
      // A rule is checked on every request and named in every challenge: its size is bounded.
      [
        { requiredScopes: Array.from({ length: 65 }, (_, i) => `s${i}`) },
        'requireScopes: options.requiredScopes must be an array of at most 64 scopes',
      ],
      [{ requiredScopes: ['read', 'x'.repeat(257)] }, 'requireScopes: options.requiredScopes[1] must be a scope: 1 to 256'],
      [
        { requiredClaims: ['tenant'] },
        'requireScopes: options.requiredClaims must be an object mapping claim names to arrays of allowed values',
      ],
      [
        { requiredClaims: { tenant: 'acme' } },
        'requireScopes: options.requiredClaims.tenant must be a non-empty array of allowed values (strings)',
      ],
      [{ requiredClaims: { tenant: [] } }, 'requireScopes: options.requiredClaims.tenant must be a non-empty array'],
      [{ requiredClaims: { 'realm access': [1] } }, 'requireScopes: options.requiredClaims["realm access"][0] must be a string'],
      [
        { requiredClaims: { 'a..b': ['x'] } },
        'requireScopes: options.requiredClaims["a..b"] a claim name must be non-empty, dot-separated names',
      ],
      [{ operations: {} }, 'requireScopes: options.operations must be an array'],
      [{ operations: [{ requiredScopes: ['x'] }] }, 'requireScopes: options.operations[0].name must be a non-empty string'],
      [{ operations: [{ name: 'u', requiredScopes: [''] }] }, 'requireScopes: options.operations[0].requiredScopes[0] must be a scope'],
      [{ scopes: ['admin'] }, 'requireScopes: options.scopes is not an option (did you mean "requiredScopes"?)'],
      [
        { requiredScopes: ['a'], operations: [{ name: 'u', scope: ['b'] }] },
        'requireScopes: options.operations[0].scope is not an option (did you mean "requiredScopes"?)',
      ],
      [
        { requiredScopes: ['a'], anyOf: ['b'] },
        'requireScopes: options.anyOf is not an option (options: requiredScopes, scopeAlternatives, requiredClaims, operations)',
      ],
      [{ scopeAlternatives: [] }, 'requireScopes: options.scopeAlternatives must be an array of 1 to 16 alternatives'],
      [{ scopeAlternatives: [['a'], 'b'] }, 'requireScopes: options.scopeAlternatives[1] must be an array of at most 64 scopes'],
      [
        { operations: [{ name: 'u', scopeAlternatives: [['a b']] }] },
        'requireScopes: options.operations[0].scopeAlternatives[0][0] must be a scope',
      ],
      [
        { scopeAlternatives: Array.from({ length: 17 }, (_, i) => [`s${i}`]) },
        'requireScopes: options.scopeAlternatives must be an array of 1 to 16',
      ],
      // An empty alternative needs no scope: a rule set of it alone lets every token through.
      [{ scopeAlternatives: [['a'], []] }, 'requireScopes: options require no scope and no claim'],
    ];
    for (const [options, message] of cases) {
      expect(() => requireScopes(options as RequireScopesOptions), message)
        .to.throw(TypeError, message)
        .with.property('code', 'ERR_INVALID_OPTION');
    }
  });

  it('scopeRuleIssues reports every problem, for the configuration validator', () => {
    expect(scopeRuleIssues({ requiredScopes: ['ok', 'not ok', 3], requiredClaims: { a: [], b: ['x', 2] } })).to.deep.equal([
      { path: 'requiredScopes[1]', message: 'must be a scope: 1 to 256 printable ASCII characters, no space, " or \\' },
      { path: 'requiredScopes[2]', message: 'must be a scope: 1 to 256 printable ASCII characters, no space, " or \\' },
      { path: 'requiredClaims.a', message: 'must be a non-empty array of allowed values (strings)' },
      { path: 'requiredClaims.b[1]', message: 'must be a string' },
    ]);
    expect(scopeRuleIssues({})).to.deep.equal([]);
    expect(scopeRuleIssues({ scopeAlternatives: [['ok'], [], ['x y'], {}] })).to.deep.equal([
      { path: 'scopeAlternatives[2][0]', message: 'must be a scope: 1 to 256 printable ASCII characters, no space, " or \\' },
      { path: 'scopeAlternatives[3]', message: 'must be an array of at most 64 scopes' },
    ]);
  });
});

describe('requireScopes with scopeAlternatives (OpenAPI security: any one requirement suffices)', () => {
  const rules: RequireScopesOptions = {
    scopeAlternatives: [['pets:read'], ['pets:admin', 'audit']],
    operations: [
      { name: 'deletePet', requiredScopes: ['pets:delete'] },
      { name: 'updatePet', scopeAlternatives: [['pets:write'], ['pets:admin']] },
      { name: 'open', scopeAlternatives: [[], ['never']] },
    ],
  };

  it('passes a token holding all the scopes of any one alternative, the API and the operation each', () => {
    expect(run(rules, { info: info(['pets:read']) })).to.equal(undefined);
    expect(run(rules, { info: info(['audit', 'pets:admin']) })).to.equal(undefined);
    expect(run(rules, { info: info(['pets:read', 'pets:delete']) }, 'deletePet')).to.equal(undefined);
    expect(run(rules, { info: info(['pets:admin', 'audit', 'pets:delete']) }, 'deletePet')).to.equal(undefined);
    expect(run(rules, { info: info(['pets:read', 'pets:write']) }, 'updatePet')).to.equal(undefined);
    expect(run(rules, { info: info(['pets:admin', 'audit']) }, 'updatePet')).to.equal(undefined);
    // An empty alternative needs no scope of the operation: the API's rule still holds.
    expect(run(rules, { info: info(['pets:read']) }, 'open')).to.equal(undefined);
    expect(run(rules, { info: info([]) }, 'open')).to.be.instanceOf(InsufficientScopeError);
  });

  it('refuses a token short of every alternative, its challenge naming the first way, the body listing them all', () => {
    const err = run(rules, { info: info(['pets:admin']) }) as InsufficientScopeError;
    expect(err).to.be.instanceOf(InsufficientScopeError);
    expect(err.scope).to.equal('pets:read');
    expect(err.scopeAlternatives).to.deep.equal([['pets:read'], ['pets:admin', 'audit']]);
    expect(err.diagnostic).to.equal(
      'the token lacks what the API requires: the scopes of any of 2 alternatives (pets:read | pets:admin audit)',
    );
    expect(bearerChallenge(err)).to.equal(
      'Bearer realm="idp", error="insufficient_scope", scope="pets:read", error_description="The request requires higher privileges than provided by the access token"',
    );
    expect(renderProblem(err, messageSets.en).body.scope_alternatives).to.deep.equal([['pets:read'], ['pets:admin', 'audit']]);
    // The API's alternatives crossed with the operation's: four ways, the API's first with the operation's first first.
    const update = run(rules, { info: info(['pets:read']) }, 'updatePet') as InsufficientScopeError;
    expect(update.scope).to.equal('pets:read pets:write');
    expect(update.scopeAlternatives).to.deep.equal([
      ['pets:read', 'pets:write'],
      ['pets:read', 'pets:admin'],
      ['pets:admin', 'audit', 'pets:write'],
      ['pets:admin', 'audit'],
    ]);
    const del = run(rules, { info: info(['pets:read']) }, 'deletePet') as InsufficientScopeError;
    expect(del.scope).to.equal('pets:delete pets:read');
    expect(del.scopeAlternatives).to.deep.equal([
      ['pets:delete', 'pets:read'],
      ['pets:delete', 'pets:admin', 'audit'],
    ]);
  });

  it('names the way the token holds when it lacks a claim; one way only: no scope_alternatives member', () => {
    const withClaim: RequireScopesOptions = { scopeAlternatives: [['a'], ['b']], requiredClaims: { tenant: ['acme'] } };
    const err = run(withClaim, { info: info(['b']), introspection: { tenant: 'other' } }) as InsufficientScopeError;
    expect(err.scope).to.equal('b');
    expect(err.diagnostic).to.equal('the token lacks what the API requires: claim tenant');
    const single = run({ requiredScopes: ['a'] }, { info: info([]) }) as InsufficientScopeError;
    expect(single.scopeAlternatives).to.equal(undefined);
    expect(renderProblem(single, messageSets.en).body).to.not.have.property('scope_alternatives');
  });

  it('a rule of many crossed alternatives: the refusal lists 16 ways and its diagnostic names 4, whatever their number', () => {
    // 16 alternatives of the API crossed with 16 of the operation, each of 32 scopes: 256 ways of 64.
    const list = (tag: string, i: number) => Array.from({ length: 32 }, (_, k) => `${tag}${i}-${k}`);
    const options: RequireScopesOptions = {
      scopeAlternatives: Array.from({ length: 16 }, (_, i) => list('api', i)),
      operations: [{ name: 'op', scopeAlternatives: Array.from({ length: 16 }, (_, i) => list('op', i)) }],
    };
    const many = Array.from({ length: 500 }, (_, k) => `held-${k}`);
    const err = run(options, { info: info(many) }, 'op') as InsufficientScopeError;
    expect(err).to.be.instanceOf(InsufficientScopeError);
    expect(err.scopeAlternatives).to.have.length(16);
    expect(renderProblem(err, messageSets.en).body.scope_alternatives).to.have.length(16);
    expect(err.diagnostic).to.match(
      /^the token lacks what the API requires: the scopes of any of 256 alternatives \(api0-0 .* \| \.\.\.\)$/,
    );
    expect(err.diagnostic!.split(' | ')).to.have.length(5);
    // The passing way found among the 256 (the last of them).
    const last = [...list('api', 15), ...list('op', 15)];
    expect(run(options, { info: info([...many, ...last]) }, 'op')).to.equal(undefined);
  });

  it('scopeWays and requiresSomething: the ways to pass of rule sets checked together', () => {
    expect(scopeWays({ requiredScopes: ['a'] })).to.deep.equal([['a']]);
    expect(scopeWays({})).to.deep.equal([[]]);
    expect(scopeWays({ requiredScopes: ['a'], scopeAlternatives: [['b'], ['a']] }, { scopeAlternatives: [['c'], []] })).to.deep.equal([
      ['a', 'b', 'c'],
      ['a', 'b'],
      ['a', 'c'],
      ['a'],
    ]);
    expect(requiresSomething({ scopeAlternatives: [['a'], []] })).to.equal(false);
    expect(requiresSomething({ scopeAlternatives: [['a'], []] }, { requiredScopes: ['b'] })).to.equal(true);
    expect(requiresSomething({ scopeAlternatives: [[]], requiredClaims: { t: ['x'] } })).to.equal(true);
  });
});
