/**
 * Misconfiguration that fails open (issue 25, finding 11), as a plain JavaScript user meets it:
 * the fixture imports the built package by its name, with no compiler to catch a misspelt
 * option. `requireScopes({ scopes: ['admin'] })` built a middleware without any rule, which let
 * every token through; any other misspelt option was ignored in silence. Now every public factory
 * refuses a key it does not know, naming it and the option it most likely meant.
 */
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';

interface Fixture {
  misspeltCalls: Array<[name: string, key: string, call: () => unknown]>;
  ruleSetsWithoutRules: Array<[options: string, call: () => unknown]>;
  startMisspeltApp(issuer: string): Promise<{ url: string; stop(): Promise<void> }>;
}

// A .mjs importing `express-access-gateway` (dist/, as installed): run `npm run build` first.
const fixture = (): Promise<Fixture> => import(new URL('../fixtures/options/misspelt.mjs', import.meta.url).href) as Promise<Fixture>;

/** What each factory answers to its misspelt option (the fixture's list, by name). */
const EXPECTED: Readonly<Record<string, string>> = {
  requireToken: 'requireToken: options.method is not an option (did you mean "methods"?)',
  introspect: 'introspect: options.extracton is not an option (did you mean "extraction"?)',
  'introspect extraction': 'introspect: options.extraction.maxTokenLenght is not an option (did you mean "maxTokenLength"?)',
  createTokenPolicy: 'createTokenPolicy: options.clientSecrt is not an option (did you mean "clientSecret"?)',
  'TokenPolicy cache': 'createTokenPolicy: options.cache.ttl is not an option (did you mean "ttlSeconds"?)',
  forwardTokenHeaders: 'forwardTokenHeaders: options.originalTokens is not an option (did you mean "originalToken"?)',
  identifyApplication: 'identifyApplication: options.application is not an option (did you mean "applications"?)',
  requireScopes: 'requireScopes: options.scopes is not an option (did you mean "requiredScopes"?)',
  xacmlAuthorize: 'xacmlAuthorize: options.xacmlPolcy is not an option (did you mean "xacmlPolicy"?)',
  XacmlPolicySource: 'XacmlPolicySource: options.referenses is not an option (did you mean "references"?)',
  problemJsonErrorHandler: 'problemJsonErrorHandler: options.mapClientError is not an option (did you mean "mapClientErrors"?)',
  sendProblem: 'sendProblem: options.messsages is not an option (did you mean "messages"?)',
  MemoryTransactionStore: 'MemoryTransactionStore: options.maxRecord is not an option (did you mean "maxRecords"?)',
  PostgresTransactionStore: 'PostgresTransactionStore: options.conectionString is not an option (did you mean "connectionString"?)',
  monitoringConsole: 'monitoringConsole: options.basicAuht is not an option (did you mean "basicAuth"?)',
  recordTransaction: 'recordTransaction: options.redactHeader is not an option (did you mean "redactHeaders"?)',
  connectRedis: 'connectRedis: options.keyPrefx is not an option (did you mean "keyPrefix"?)',
  createGatewayCluster: 'createGatewayCluster: options.onRest is not an option (did you mean "onReset"?)',
  SharedTokenResults: 'SharedTokenResults: options.polMs is not an option (did you mean "pollMs"?)',
  adminRouter: 'adminRouter: options.realms is not an option (did you mean "realm"?)',
  createGateway: 'createGateway: options.basepath is not an option (did you mean "basePath"?)',
  'createGateway operators': 'createGateway: options.operators.user is not an option (did you mean "users"?)',
  createRelay: 'createRelay: options.timeout is not an option (did you mean "timeoutMs"?)',
  serveGateway: 'serveGateway: options.adminport is not an option (did you mean "adminPort"?)',
  loadConfig: 'loadConfig: options.basedir is not an option (did you mean "baseDir"?)',
  resolveConfig: 'resolveConfig: options.policy is not an option (did you mean "policies"?)',
  PostgresConfigSource: 'PostgresConfigSource: options.initialfile is not an option (did you mean "initialFile"?)',
  MemoryAuditLog: 'MemoryAuditLog: options.maxEntry is not an option (did you mean "maxEntries"?)',
  createPdp: 'createPdp: options.policy is not an option (did you mean "policies"?)',
};

/** What a call did: its error's code and message, or that it built something. */
async function outcome(call: () => unknown): Promise<string> {
  try {
    const built = await call();
    const closable = built as { close?: () => unknown; stop?: () => unknown } | undefined;
    await (closable?.stop ?? closable?.close)?.call(closable);
    return 'built, the misspelt option ignored';
  } catch (err) {
    const { code, message } = err as { code?: string; message: string };
    return `${code ?? 'no code'}: ${message}`;
  }
}

describe('security: options that fail open (issue 25, finding 11)', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
  });
  after(() => as?.stop());

  it('requireScopes({ scopes: ["admin"] }) in plain JavaScript cannot be built, so a token without the admin scope never reaches the route', async () => {
    const { startMisspeltApp } = await fixture();
    let app: Awaited<ReturnType<Fixture['startMisspeltApp']>> | undefined;
    let refusal: unknown;
    try {
      app = await startMisspeltApp(as.issuer);
    } catch (err) {
      refusal = err;
    }
    try {
      if (app !== undefined) {
        const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
        const res = await fetch(`${app.url}/admin-only`, { headers: { authorization: `Bearer ${token}` } });
        const body = await res.text();
        expect(res.status, `a token without the admin scope was answered ${res.status} ${body}`).not.to.equal(200);
      }
      expect(refusal).to.be.instanceOf(TypeError);
      expect(refusal).to.include({
        code: 'ERR_INVALID_OPTION',
        message: 'requireScopes: options.scopes is not an option (did you mean "requiredScopes"?)',
      });
    } finally {
      await app?.stop();
    }
  });

  it('every public factory refuses an option it does not know, naming it and the nearest valid one', async () => {
    const { misspeltCalls } = await fixture();
    expect(misspeltCalls.map(([name]) => name)).to.have.members(Object.keys(EXPECTED));
    const answers: Record<string, string> = {};
    for (const [name, , call] of misspeltCalls) answers[name] = await outcome(call);
    expect(answers).to.deep.equal(
      Object.fromEntries(Object.entries(EXPECTED).map(([name, message]) => [name, `ERR_INVALID_OPTION: ${message}`])),
    );
  });

  it('a rule set without a rule is refused at creation: requireScopes({}), empty lists, operations without rules', async () => {
    const { ruleSetsWithoutRules } = await fixture();
    expect(ruleSetsWithoutRules).to.have.length(4);
    for (const [options, call] of ruleSetsWithoutRules) {
      expect(await outcome(call), options).to.match(/^ERR_INVALID_OPTION: requireScopes: options require no scope and no claim/);
    }
  });
});
