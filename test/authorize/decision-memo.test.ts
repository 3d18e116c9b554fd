/**
 * xacmlAuthorize reuses a decision for the requests with the same cached token and the same
 * values of the invocation attributes the policy reads, and only then. Real chain: the demo
 * authorization server (oidc-provider), requireToken + introspect with the token cache on, real HTTP.
 */
import { expect } from 'chai';
import express from 'express';
import supertest from 'supertest';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { XacmlAttributes as A } from '../../src/authorize/attributes.js';
import { xacmlAuthorize, XacmlPolicySource, type XacmlAuthorizeMiddleware } from '../../src/authorize/index.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';

const NS = 'urn:oasis:names:tc:xacml:2.0:policy:schema:os';
const FN = 'urn:oasis:names:tc:xacml:1.0:function:';
const STRING = 'http://www.w3.org/2001/XMLSchema#string';

/** A policy that permits when the condition holds and denies otherwise. */
function permitWhen(condition: string): string {
  return `<Policy xmlns="${NS}" PolicyId="p" RuleCombiningAlgId="urn:oasis:names:tc:xacml:1.0:rule-combining-algorithm:first-applicable"><Target/>
    <Rule RuleId="ok" Effect="Permit"><Condition>${condition}</Condition></Rule><Rule RuleId="ko" Effect="Deny"/></Policy>`;
}

function isIn(designator: string, values: string[]): string {
  const bag = values.map((v) => `<AttributeValue DataType="${STRING}">${v}</AttributeValue>`).join('');
  return `<Apply FunctionId="${FN}string-at-least-one-member-of">${designator}<Apply FunctionId="${FN}string-bag">${bag}</Apply></Apply>`;
}

const action = (id: string): string => `<ActionAttributeDesignator AttributeId="${id}" DataType="${STRING}"/>`;
const subject = (id: string): string => `<SubjectAttributeDesignator AttributeId="${id}" DataType="${STRING}"/>`;
const resource = (id: string): string => `<ResourceAttributeDesignator AttributeId="${id}" DataType="${STRING}"/>`;
const client1 = isIn(subject(A.tokenClientId), ['client1']);

describe('xacmlAuthorize decision reuse (cached tokens, real chain)', () => {
  let as: DemoAuthServer;
  let tokenPolicy: TokenPolicy;
  let token1: string;
  let token2: string;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    tokenPolicy = createTokenPolicy({ name: 'demo-idp', issuer: as.issuer, clientId: 'gateway', clientSecret: 'gateway-secret' });
    token1 = await as.issueToken('client1', 'client1-secret');
    token2 = await as.issueToken('client2', 'client2-secret');
  });
  after(async () => {
    tokenPolicy.close();
    await as.stop();
  });

  /** The chain with `policy`, and the count of the policy's evaluations. */
  function gateway(policy: string | XacmlPolicySource): {
    app: express.Express;
    authorize: XacmlAuthorizeMiddleware;
    evaluations: () => number;
  } {
    const authorize = xacmlAuthorize({ xacmlPolicy: policy, serviceName: 'PetStore', serviceVersion: 1, providerName: 'Ente' });
    let count = 0;
    const state = authorize.policySource.get();
    if (state instanceof Promise) throw new Error('a policy given as text is compiled at once');
    const evaluate = state.pdp.evaluate.bind(state.pdp);
    (state.pdp as { evaluate: typeof evaluate }).evaluate = (request) => {
      count++;
      return evaluate(request);
    };
    const app = express();
    app.use('/api', requireToken({ policy: tokenPolicy }), introspect({ policy: tokenPolicy }), authorize, (req, res) => {
      res.json({ decision: req.gateway?.authorization?.decision });
    });
    app.use(problemJsonErrorHandler());
    return { app, authorize, evaluations: () => count };
  }

  const bearer = (token: string): string => `Bearer ${token}`;

  it('evaluates the scenario policy once per token, and still answers each token its own decision', async () => {
    const { app, evaluations } = gateway(permitWhen(client1));
    for (let i = 0; i < 5; i++) {
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200, { decision: 'Permit' });
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token2)).expect(403);
    }
    expect(evaluations()).to.equal(2);
  });

  it('keys decisions by the operation when the policy reads action-id', async () => {
    const { app, evaluations } = gateway(
      permitWhen(`<Apply FunctionId="${FN}and">${client1}${isIn(action(A.actionId), ['GET /pet/10'])}</Apply>`),
    );
    for (let i = 0; i < 3; i++) {
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200);
      await supertest(app).delete('/api/pet/10').set('Authorization', bearer(token1)).expect(403);
      await supertest(app).get('/api/pet/11').set('Authorization', bearer(token1)).expect(403);
    }
    expect(evaluations()).to.equal(3);
  });

  it('keys decisions by the header values the policy reads, absent included', async () => {
    const { app, evaluations } = gateway(permitWhen(isIn(action(`${A.headerPrefix}x-tenant`), ['acme'])));
    for (let i = 0; i < 2; i++) {
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token1)).set('X-Tenant', 'acme').expect(200);
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token1)).set('X-Tenant', 'other').expect(403);
      await supertest(app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(403);
      // Any other header may change freely: it is not part of the key.
      await supertest(app)
        .get('/api/pet/10')
        .set('Authorization', bearer(token1))
        .set('X-Tenant', 'acme')
        .set('X-Other', String(i))
        .expect(200);
    }
    expect(evaluations()).to.equal(3);
  });

  it('keys decisions by the path when the policy reads resource-id, and by the URL when it reads a URL parameter', async () => {
    const byPath = gateway(
      permitWhen(
        `<Apply FunctionId="${FN}string-regexp-match"><AttributeValue DataType="${STRING}">^/api/pet/1\\d$</AttributeValue><Apply FunctionId="${FN}string-one-and-only">${resource(A.resourceId)}</Apply></Apply>`,
      ),
    );
    await supertest(byPath.app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200);
    await supertest(byPath.app).get('/api/pet/99').set('Authorization', bearer(token1)).expect(403);
    await supertest(byPath.app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200);
    expect(byPath.evaluations()).to.equal(2);

    const byParameter = gateway(permitWhen(isIn(action(`${A.urlParameterPrefix}status`), ['available'])));
    await supertest(byParameter.app).get('/api/pet?status=available').set('Authorization', bearer(token1)).expect(200);
    await supertest(byParameter.app).get('/api/pet?status=sold').set('Authorization', bearer(token1)).expect(403);
    await supertest(byParameter.app).get('/api/pet?status=available').set('Authorization', bearer(token1)).expect(200);
    expect(byParameter.evaluations()).to.equal(2);
  });

  it('evaluates every request when the policy reads the clock, or a header that carries the token', async () => {
    const clock = gateway(
      permitWhen(
        `<Apply FunctionId="${FN}date-greater-than"><Apply FunctionId="${FN}date-one-and-only"><EnvironmentAttributeDesignator AttributeId="${A.currentDate}" DataType="http://www.w3.org/2001/XMLSchema#date"/></Apply><AttributeValue DataType="http://www.w3.org/2001/XMLSchema#date">2001-01-01Z</AttributeValue></Apply>`,
      ),
    );
    for (let i = 0; i < 3; i++) await supertest(clock.app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200);
    expect(clock.evaluations()).to.equal(3);

    const echoed = gateway(permitWhen(isIn(action(`${A.headerPrefix}x-copy`), ['acme'])));
    for (let i = 0; i < 3; i++)
      await supertest(echoed.app).get('/api/pet/10').set('Authorization', bearer(token1)).set('X-Copy', token1).expect(403);
    expect(echoed.evaluations()).to.equal(3);
  });

  it('evaluates every request when an attribute finder of a shared policy source supplies attributes', async () => {
    let department = 'pets';
    const source = new XacmlPolicySource({
      policy: permitWhen(isIn(subject('org:example:department'), ['pets'])),
      attributeFinder: (q) => (q.attributeId === 'org:example:department' ? [department] : undefined),
    });
    const found = gateway(source);
    await supertest(found.app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(200);
    department = 'finance';
    await supertest(found.app).get('/api/pet/10').set('Authorization', bearer(token1)).expect(403);
    expect(found.evaluations()).to.equal(2);
  });
});
