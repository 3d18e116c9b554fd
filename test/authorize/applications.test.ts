/**
 * Issue 14 item 14: the registry of client applications. The XACML request of every invocation
 * carries the application name, the consuming organization and the roles of the token's client,
 * and a policy can decide on `org:gateway:subject:organization`, over real HTTP with tokens of
 * the demo authorization server.
 */
import { expect } from 'chai';
import express from 'express';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { ApplicationRegistry, applicationIssues, identifyApplication } from '../../src/authorize/applications.js';
import { XacmlAttributes as A } from '../../src/authorize/attributes.js';
import { xacmlAuthorize, type XacmlAuthorizeOptions } from '../../src/authorize/xacml-authorize/index.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import type { RequestContext } from '../../src/xacml/index.js';
import { listen } from '../token/forward/helpers.js';

const NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';
const FN = 'urn:oasis:names:tc:xacml:1.0:function:';
const STRING = 'http://www.w3.org/2001/XMLSchema#string';

/** Permits the organization `Comune di Pisa` only (its designator: the consuming subject, docs/xacml-attributes.md). */
const ORGANIZATION_POLICY = `<Policy xmlns="${NS}" PolicyId="by-organization" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable">
  <Target/>
  <Rule RuleId="pisa" Effect="Permit">
    <Condition>
      <Apply FunctionId="${FN}string-is-in">
        <AttributeValue DataType="${STRING}">Comune di Pisa</AttributeValue>
        <SubjectAttributeDesignator AttributeId="${A.organization}" DataType="${STRING}"/>
      </Apply>
    </Condition>
  </Rule>
  <Rule RuleId="otherwise" Effect="Deny"/>
</Policy>`;

const APPLICATIONS = {
  client1: { name: 'PetShopWeb', organization: 'Comune di Pisa', roles: ['buyer', 'seller'] },
  client2: { name: 'PetShopApp', organization: 'Comune di Lucca' },
};

describe('xacmlAuthorize applications (registry of client applications)', function () {
  this.timeout(30_000);
  let as: DemoAuthServer;
  let policy: TokenPolicy;
  let gateway: { url: string; close: () => Promise<void> } | undefined;
  let requests: RequestContext[];
  let evaluations = 0;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    policy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
  });
  after(async () => {
    policy.close();
    await as.stop();
  });
  beforeEach(() => {
    requests = [];
    evaluations = 0;
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  async function start(options: Partial<XacmlAuthorizeOptions>, hook = true): Promise<string> {
    const authorize = xacmlAuthorize({
      xacmlPolicy: ORGANIZATION_POLICY,
      serviceName: 'PetStore',
      serviceVersion: 1,
      providerName: 'Ente',
      ...(hook ? { onRequest: (r) => void requests.push(r) } : {}),
      ...options,
    });
    const state = authorize.policySource.get();
    if (state instanceof Promise) throw new Error('a policy given as text is compiled at once');
    const evaluate = state.pdp.evaluate.bind(state.pdp);
    (state.pdp as { evaluate: typeof evaluate }).evaluate = (request) => {
      evaluations++;
      return evaluate(request);
    };
    const app = express();
    app.use('/gateway/Ente/PetStore/v1', requireToken({ policy }), introspect({ policy }), authorize, (req, res) => {
      res.json({ decision: req.gateway?.authorization?.decision });
    });
    app.use(problemJsonErrorHandler());
    gateway = await listen(app);
    return `${gateway.url}/gateway/Ente/PetStore/v1/pet/1`;
  }

  const subjectValues = (request: RequestContext, id: string): readonly string[] | undefined =>
    request.subjects[0]!.attributes.find((a) => a.attributeId === id)?.values;

  it('puts the application name, organization and roles of the token client into every XACML request', async () => {
    const url = await start({ applications: APPLICATIONS });
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read' });
    for (let i = 0; i < 2; i++) expect((await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(200);
    expect(requests).to.have.length(2);
    for (const request of requests) {
      expect(subjectValues(request, A.client)).to.deep.equal(['PetShopWeb']);
      expect(subjectValues(request, A.organization)).to.deep.equal(['Comune di Pisa']);
      expect(subjectValues(request, A.role)).to.deep.equal(['buyer', 'seller']);
      // The token's own facts stay where they were.
      expect(subjectValues(request, A.tokenClientId)).to.deep.equal(['client1']);
      expect(subjectValues(request, A.subjectId)).to.deep.equal(['client1']);
    }
  });

  it('a client without registered roles keeps its token roles; an unregistered client keeps its client id and has no organization', async () => {
    const url = await start({ applications: APPLICATIONS });
    const lucca = await as.issueToken('client2', 'client2-secret');
    const unregistered = await as.issueToken('client3', 'client3-secret');
    expect((await fetch(url, { headers: { authorization: `Bearer ${lucca}` } })).status).to.equal(403);
    expect((await fetch(url, { headers: { authorization: `Bearer ${unregistered}` } })).status).to.equal(403);
    expect(subjectValues(requests[0]!, A.client)).to.deep.equal(['PetShopApp']);
    expect(subjectValues(requests[0]!, A.organization)).to.deep.equal(['Comune di Lucca']);
    expect(subjectValues(requests[0]!, A.role)).to.equal(undefined);
    expect(subjectValues(requests[1]!, A.client)).to.deep.equal(['client3']);
    expect(subjectValues(requests[1]!, A.organization)).to.equal(undefined);
  });

  it('a policy decides on org:gateway:subject:organization: the registered organization passes, others get the 403 of docs/errors.md (decisions reused per token)', async () => {
    const url = await start({ applications: APPLICATIONS }, false);
    const pisa = await as.issueToken('client1', 'client1-secret');
    const lucca = await as.issueToken('client2', 'client2-secret');
    for (let i = 0; i < 2; i++) {
      const allowed = await fetch(url, { headers: { authorization: `Bearer ${pisa}` } });
      expect(allowed.status).to.equal(200);
      expect(await allowed.json()).to.deep.equal({ decision: 'Permit' });
      const refused = await fetch(url, { headers: { authorization: `Bearer ${lucca}` } });
      expect(refused.status).to.equal(403);
      expect(await refused.json()).to.deep.equal({
        type: 'https://httpstatuses.com/403',
        title: 'Forbidden',
        status: 403,
        detail:
          'Il mittente non è autorizzato ad invocare il servizio gw/PetStore (versione:1) erogato da gw/Ente (result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok)',
        gateway_status: 'protocol:GATEWAY-1352',
      });
    }
    expect(evaluations, 'one evaluation per token: the registry is fixed, so the decision depends on the token alone').to.equal(2);
  });

  it('the subject option overrides the registered values it gives, and only those', async () => {
    const url = await start({
      applications: new ApplicationRegistry(APPLICATIONS),
      subject: () => ({ organization: 'Comune di Lucca', client: undefined }),
    });
    const pisa = await as.issueToken('client1', 'client1-secret');
    expect((await fetch(url, { headers: { authorization: `Bearer ${pisa}` } })).status).to.equal(403);
    expect(subjectValues(requests[0]!, A.organization)).to.deep.equal(['Comune di Lucca']);
    expect(subjectValues(requests[0]!, A.client)).to.deep.equal(['PetShopWeb']);
    expect(subjectValues(requests[0]!, A.role)).to.deep.equal(['buyer', 'seller']);
  });

  it('identifyApplication puts the registered application on the request (for the record), and nothing for an unregistered client', async () => {
    const app = express();
    app.use('/who', requireToken({ policy }), introspect({ policy }), identifyApplication({ applications: APPLICATIONS }), (req, res) => {
      res.json({ application: req.gateway?.application ?? null });
    });
    gateway = await listen(app);
    const ask = async (clientId: string) => {
      const token = await as.issueToken(clientId, `${clientId}-secret`);
      return (await (await fetch(`${gateway!.url}/who`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        application: unknown;
      };
    };
    expect(await ask('client1')).to.deep.equal({
      application: { clientId: 'client1', name: 'PetShopWeb', organization: 'Comune di Pisa', roles: ['buyer', 'seller'] },
    });
    expect(await ask('client2')).to.deep.equal({
      application: { clientId: 'client2', name: 'PetShopApp', organization: 'Comune di Lucca' },
    });
    expect(await ask('client3')).to.deep.equal({ application: null });
    expect(() => identifyApplication({} as never)).to.throw(TypeError, 'identifyApplication: options.applications is required');
    expect(() => identifyApplication({ applications: { client1: {} } } as never)).to.throw(
      TypeError,
      'identifyApplication: options.applications.client1.name is required',
    );
  });

  it('the registry is copied at creation: a later change of the object given changes nothing', async () => {
    const applications: Record<string, { name: string; organization?: string }> = {
      client2: { name: 'PetShopApp', organization: 'Comune di Lucca' },
    };
    const url = await start({ applications });
    applications.client2!.organization = 'Comune di Pisa';
    const lucca = await as.issueToken('client2', 'client2-secret');
    expect((await fetch(url, { headers: { authorization: `Bearer ${lucca}` } })).status).to.equal(403);
  });
});

describe('ApplicationRegistry', () => {
  it('looks up own entries only: __proto__, constructor and toString find nothing', () => {
    const registry = new ApplicationRegistry(JSON.parse('{"__proto__":{"name":"Evil"},"client1":{"name":"Shop"}}'));
    expect(registry.get('client1')).to.deep.equal({ name: 'Shop' });
    expect(registry.get('constructor')).to.equal(undefined);
    expect(registry.get('toString')).to.equal(undefined);
    expect(registry.get('__proto__')).to.deep.equal({ name: 'Evil' });
    expect(registry.get(undefined)).to.equal(undefined);
    expect(registry.size).to.equal(2);
  });

  it('reports every problem of a registry, and throws the first', () => {
    expect(applicationIssues({ a: { organization: '' }, 'b c': { name: 'B', roles: 'admin' }, d: 'x' })).to.deep.equal([
      { path: 'a.name', message: 'is required' },
      { path: 'a.organization', message: 'must be a non-empty string' },
      { path: '["b c"].roles', message: 'must be an array of non-empty strings' },
      { path: 'd', message: 'must be an object { name, organization?, roles? }' },
    ]);
    expect(applicationIssues([])).to.deep.equal([{ path: '', message: 'must be an object mapping client ids to applications' }]);
    expect(() => new ApplicationRegistry({ a: { name: '' } })).to.throw(
      TypeError,
      'ApplicationRegistry: applications.a.name must be a non-empty string',
    );
  });
});
