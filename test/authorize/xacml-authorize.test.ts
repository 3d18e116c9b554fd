/**
 * xacmlAuthorize in the real chain: the demo authorization server (oidc-provider, port 0), the
 * token chain (requireToken + introspect), the scenario policy, forwardTokenHeaders and a real
 * backend reached through http-proxy-middleware.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import express from 'express';
import { express4 } from '../support/express4.js';
import type { NextFunction, Request, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import supertest from 'supertest';
import { startDemoAuthServer } from '../../examples/petstore/auth-server.js';
import type { DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { toRequestXml, xacmlAuthorize, XacmlPolicySource } from '../../src/authorize/index.js';
import type { XacmlAuthorizeMiddleware } from '../../src/authorize/index.js';
import { gatewayContext } from '../../src/context.js';
import type { GatewayContext } from '../../src/context.js';
import { problemJsonErrorHandler } from '../../src/problem/handler.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicy } from '../../src/token/policy.js';
import { requireToken } from '../../src/token/require-token.js';
import { forwardTokenHeaders } from '../../src/token/forward/index.js';
import type { RequestContext } from '../../src/xacml/request-context.js';
import { startEchoBackend } from '../token/forward/helpers.js';
import type { Echo } from '../token/forward/helpers.js';

const fixtures = new URL('../fixtures/authorize/', import.meta.url);
const BASE = '/gateway/Ente/PetStore/v1';
const DENIED_DETAIL =
  'Il mittente non è autorizzato ad invocare il servizio gw/PetStore (versione:1) erogato da gw/Ente ' +
  '(result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok)';

/** Replaces what changes from run to run (ports, times, epoch claims, ids) by placeholders. */
export function normalizeRequestXml(xml: string): string {
  return xml
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .replace(/<AttributeValue>\d{2}:\d{2}:\d{2}\.\d{3}Z<\/AttributeValue>/g, '<AttributeValue><time></AttributeValue>')
    .replace(/<AttributeValue>\d{4}-\d{2}-\d{2}Z<\/AttributeValue>/g, '<AttributeValue><date></AttributeValue>')
    .replace(/<AttributeValue>\d{4}-\d{2}-\d{2}T[\d:.]+Z<\/AttributeValue>/g, '<AttributeValue><dateTime></AttributeValue>')
    .replace(/<AttributeValue>\d{10}<\/AttributeValue>/g, '<AttributeValue><epoch></AttributeValue>')
    .replace(/(claim:jti" [^>]*>\s*<AttributeValue>)[^<]+/g, '$1<jti>');
}

describe('xacmlAuthorize (real token chain, scenario policy)', () => {
  let as: DemoAuthServer;
  let backend: { url: string; close: () => Promise<void> };
  let backendCalls = 0;
  let tokenPolicy: TokenPolicy;
  let dir: string;
  let policyFile: string;
  let policyXml: string;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    backend = await startEchoBackend();
    tokenPolicy = createTokenPolicy({
      name: 'demo-idp',
      issuer: as.issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      cache: false,
    });
    dir = await mkdtemp(path.join(tmpdir(), 'eag-authorize-'));
    policyFile = path.join(dir, 'petstore.xml');
    policyXml = await readFile(new URL('petstore-policy.xml', fixtures), 'utf8');
  });
  after(async () => {
    await as.stop();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await writeFile(policyFile, policyXml);
    backendCalls = 0;
  });

  /** The gateway app of the scenario; `seen` collects the request contexts and gateway states. */
  function gateway(authorize: XacmlAuthorizeMiddleware, policy: TokenPolicy = tokenPolicy) {
    const seen: { gateway?: GatewayContext } = {};
    const app = express();
    app.use(
      BASE,
      (req: Request, _res: Response, next: NextFunction) => {
        seen.gateway = gatewayContext(req);
        next();
      },
      requireToken({ policy }),
      introspect({ policy }),
      authorize,
      forwardTokenHeaders(),
      (_req: Request, _res: Response, next: NextFunction) => {
        backendCalls += 1;
        next();
      },
      createProxyMiddleware({ target: backend.url }),
    );
    app.use(problemJsonErrorHandler());
    return { app, seen };
  }

  function scenarioAuthorize(extra: Partial<Parameters<typeof xacmlAuthorize>[0]> = {}): XacmlAuthorizeMiddleware {
    return xacmlAuthorize({
      xacmlPolicy: () => readFile(policyFile, 'utf8'),
      serviceName: 'PetStore',
      serviceVersion: 1,
      providerName: 'Ente',
      ...extra,
    });
  }

  it('a listed client gets 200 and the backend receives the Gateway-Token-* headers', async () => {
    const { app, seen } = gateway(scenarioAuthorize());
    const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
    const res = await supertest(app).put(`${BASE}/pet`).set('Authorization', `Bearer ${token}`).send({ id: 1, name: 'rex' }).expect(200);
    const echo = res.body as Echo;
    expect(echo.url).to.equal('/pet');
    expect(echo.body).to.equal('{"id":1,"name":"rex"}');
    expect(echo.headers).to.include({
      'gateway-token-subject': 'client1',
      'gateway-token-clientid': 'client1',
      'gateway-token-issuer': as.issuer,
      'gateway-token-audience': 'petstore-api',
      'gateway-token-scopes': 'read,write',
      'gateway-transaction-id': seen.gateway?.transactionId,
    });
    expect(echo.headers['gateway-token-expire']).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/);
    expect(echo.headers).not.to.have.property('authorization');
    expect(JSON.stringify(echo)).not.to.include(token);
    expect(seen.gateway?.authorization).to.deep.equal({
      decision: 'Permit',
      statusCode: 'urn:oasis:names:tc:xacml:1.0:status:ok',
      text: 'result-1 PERMIT code:urn:oasis:names:tc:xacml:1.0:status:ok',
    });
  });

  it('an unlisted client gets exactly the documented 403, and the backend is not called', async () => {
    const { app, seen } = gateway(scenarioAuthorize());
    const token = await as.issueToken('client3', 'client3-secret', { scope: 'read' });
    const res = await supertest(app).put(`${BASE}/pet?access_token=${token}`).send({ id: 1 }).expect(403);
    expect(res.headers['content-type']).to.match(/^application\/problem\+json/);
    expect(res.headers).not.to.have.property('www-authenticate');
    expect(res.body).to.deep.equal({
      type: 'https://httpstatuses.com/403',
      title: 'Forbidden',
      status: 403,
      detail: DENIED_DETAIL,
      gateway_status: 'protocol:GATEWAY-1352',
    });
    expect(backendCalls).to.equal(0);
    const decision = seen.gateway?.diagnostics.find((d) => d.code === 'XACML_DECISION');
    expect(decision?.message).to.equal('result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok');
    expect(seen.gateway?.authorization?.decision).to.equal('Deny');
  });

  it('adding the client to the policy bag and resetting gives 200 (the old policy holds until reset)', async () => {
    const authorize = scenarioAuthorize();
    const { app } = gateway(authorize);
    const token = await as.issueToken('client3', 'client3-secret');
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(403);
    // A reset that finds the same text does not compile it again.
    authorize.reset();
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(403);
    expect(authorize.policySource.version).to.equal(1);
    const updated = policyXml.replace(
      '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>',
      '$&\n            <AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client3</AttributeValue>',
    );
    expect(updated).to.include('>client3<');
    await writeFile(policyFile, updated);
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(403);
    expect(authorize.policySource.version).to.equal(1);
    authorize.reset();
    const res = await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(200);
    expect((res.body as Echo).headers['gateway-token-clientid']).to.equal('client3');
    expect(authorize.policySource.version).to.equal(2);
  });

  it('a broken policy on reload is rejected and the previous one stays in force', async () => {
    const authorize = scenarioAuthorize();
    const { app, seen } = gateway(authorize);
    const token = await as.issueToken('client1', 'client1-secret');
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(200);
    await writeFile(policyFile, policyXml.replace('<Rule RuleId="ko" Effect="Deny"/>', '<Rule RuleId="ko" Effect="Maybe"/>'));
    let rejected: unknown;
    await authorize.reload().catch((e: unknown) => {
      rejected = e;
    });
    expect(rejected).to.be.instanceOf(Error);
    expect((rejected as Error).name).to.equal('XacmlSyntaxError');
    expect(authorize.policySource.lastError).to.equal(rejected);
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(200);
    // Lazy path: reset, the next request tries the broken text, keeps the old policy, records why.
    authorize.reset();
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(200);
    expect(seen.gateway?.diagnostics.some((d) => d.code === 'XACML_POLICY_RELOAD_FAILED')).to.equal(true);
    const client3 = await as.issueToken('client3', 'client3-secret');
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client3}`).expect(403);
    expect(authorize.policySource.version).to.equal(1);
  });

  it('fails closed (500) when no policy could ever be loaded', async () => {
    const authorize = scenarioAuthorize({ xacmlPolicy: () => Promise.reject(new Error('policy store down')) });
    const { app } = gateway(authorize);
    const token = await as.issueToken('client1', 'client1-secret');
    const res = await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(500);
    expect(res.body.gateway_status).to.equal('integration:GATEWAY-500');
    expect(JSON.stringify(res.body)).not.to.include('policy store down');
    expect(backendCalls).to.equal(0);
  });

  it('throws at start-up on an invalid policy text', () => {
    expect(() => xacmlAuthorize({ xacmlPolicy: '<Policy xmlns="urn:oasis:names:tc:xacml:2.0:policy:schema:os"' })).to.throw();
    expect(() =>
      xacmlAuthorize({
        xacmlPolicy: policyXml.replace('rule-combining-algorithm:permit-overrides', 'rule-combining-algorithm:no-such-algorithm'),
      }),
    ).to.throw(/algorithm|RuleCombiningAlgId/i);
    expect(() => xacmlAuthorize({ xacmlPolicy: policyXml, serviceName: 3 as never })).to.throw(TypeError, /serviceName/);
  });

  it('checks its options at creation, each error naming xacmlAuthorize: options.<path> with code ERR_INVALID_OPTION', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'xacmlAuthorize: options.xacmlPolicy is required'],
      [
        { xacmlPolicy: policyXml, policy: policyXml },
        'xacmlAuthorize: options.policy is the deprecated name of xacmlPolicy: give one of them, not both',
      ],
      [
        { xacmlPolicy: 42 },
        'XacmlPolicySource: options.policy must be XACML policy XML text, a non-empty array of them, or { policies, references }',
      ],
      [{ xacmlPolicy: policyXml, serviceName: 3 }, 'xacmlAuthorize: options.serviceName must be a non-empty string'],
      [{ xacmlPolicy: policyXml, serviceVersion: true }, 'xacmlAuthorize: options.serviceVersion must be a string or a number'],
      [{ xacmlPolicy: policyXml, operation: 'GET /pet' }, 'xacmlAuthorize: options.operation must be a function'],
      [{ xacmlPolicy: policyXml, subject: {} }, 'xacmlAuthorize: options.subject must be a function'],
      [{ xacmlPolicy: policyXml, excludeHeaders: 'cookie' }, 'xacmlAuthorize: options.excludeHeaders must be an array of header names'],
      [{ xacmlPolicy: policyXml, recordRequests: 'permits' }, 'xacmlAuthorize: options.recordRequests must be one of denied, all'],
      [
        { xacmlPolicy: policyXml, obligations: { 'urn:x': 'log' } },
        'xacmlAuthorize: options.obligations["urn:x"] must be a function (obligation ids map to handlers)',
      ],
      [{ xacmlPolicy: policyXml, now: 1 }, 'xacmlAuthorize: options.now must be a function'],
      [{ xacmlPolicy: policyXml, maxXPathAttributes: -1 }, 'xacmlAuthorize: options.maxXPathAttributes must be a non-negative integer'],
      [{ xacmlPolicy: policyXml, limits: { maxDepth: 0 } }, 'xacmlAuthorize: options.limits.maxDepth must be a positive integer'],
      [
        { xacmlPolicy: policyXml, applications: { client1: { organization: 'Acme' } } },
        'xacmlAuthorize: options.applications.client1.name is required',
      ],
      [
        { xacmlPolicy: policyXml, applications: { client1: { name: 'Shop', roles: ['a', ''] } } },
        'xacmlAuthorize: options.applications.client1.roles[1] must be a non-empty string',
      ],
      [
        { xacmlPolicy: policyXml, applications: { 'my client': { name: 'Shop', group: 'x' } } },
        'xacmlAuthorize: options.applications["my client"].group unknown field (allowed: name, organization, roles)',
      ],
    ];
    for (const [options, message] of cases) {
      expect(() => xacmlAuthorize(options as never), JSON.stringify(options).slice(0, 80))
        .to.throw(TypeError, message)
        .with.property('code', 'ERR_INVALID_OPTION');
    }
    expect(() => xacmlAuthorize(null as never)).to.throw(TypeError, 'xacmlAuthorize: options must be an object');
    expect(() => new XacmlPolicySource({ policy: policyXml, references: 'x' as never })).to.throw(
      TypeError,
      'XacmlPolicySource: options.references must be an array of XML strings',
    );
    expect(() => new XacmlPolicySource({ policy: () => policyXml, attributeFinder: 1 as never })).to.throw(
      TypeError,
      'XacmlPolicySource: options.attributeFinder must be a function',
    );
  });

  it('still takes the document under its deprecated name `policy` (one minor version)', async () => {
    const { app } = gateway(xacmlAuthorize({ policy: policyXml, serviceName: 'PetStore', serviceVersion: 1, providerName: 'Ente' }));
    const allowed = await as.issueToken('client1', 'client1-secret');
    const refused = await as.issueToken('client3', 'client3-secret');
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${allowed}`).expect(200);
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${refused}`).expect(403);
  });

  it('NotApplicable and Indeterminate also answer 403, with their decision text', async () => {
    const notApplicable = policyXml.replace(
      '<Target/>',
      `<Target><Resources><Resource><ResourceMatch MatchId="urn:oasis:names:tc:xacml:1.0:function:string-equal">
        <AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">/elsewhere</AttributeValue>
        <ResourceAttributeDesignator AttributeId="urn:oasis:names:tc:xacml:1.0:resource:resource-id" DataType="http://www.w3.org/2001/XMLSchema#string"/>
      </ResourceMatch></Resource></Resources></Target>`,
    );
    const token = await as.issueToken('client1', 'client1-secret');
    const na = gateway(scenarioAuthorize({ xacmlPolicy: notApplicable }));
    const res1 = await supertest(na.app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(403);
    expect(res1.body.detail).to.equal(DENIED_DETAIL.replace('DENY', 'NOT_APPLICABLE'));

    const indeterminate = policyXml.replace(
      '<Rule RuleId="ko" Effect="Deny"/>',
      `<Rule RuleId="ko" Effect="Deny"><Condition><Apply FunctionId="urn:oasis:names:tc:xacml:1.0:function:string-is-in">
        <AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">x</AttributeValue>
        <SubjectAttributeDesignator AttributeId="org:gateway:subject:organization" DataType="http://www.w3.org/2001/XMLSchema#string" MustBePresent="true"/>
      </Apply></Condition></Rule>`,
    );
    const ind = gateway(scenarioAuthorize({ xacmlPolicy: indeterminate }));
    const client3 = await as.issueToken('client3', 'client3-secret');
    const res2 = await supertest(ind.app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client3}`).expect(403);
    expect(res2.body.detail).to.equal(
      DENIED_DETAIL.replace(
        'DENY code:urn:oasis:names:tc:xacml:1.0:status:ok',
        'INDETERMINATE code:urn:oasis:names:tc:xacml:1.0:status:missing-attribute',
      ),
    );
    const diagnostic = ind.seen.gateway?.diagnostics.find((d) => d.code === 'XACML_DECISION');
    expect(diagnostic?.message).to.match(/^result-1 INDETERMINATE code:urn:oasis:names:tc:xacml:1\.0:status:missing-attribute message:.+/);
  });

  it('treats a Permit with an obligation it cannot fulfil as Deny, and passes with a handler', async () => {
    const withObligation = policyXml.replace(
      '</Policy>',
      `<Obligations><Obligation ObligationId="urn:example:log" FulfillOn="Permit"/></Obligations></Policy>`,
    );
    const token = await as.issueToken('client1', 'client1-secret');
    await supertest(gateway(scenarioAuthorize({ xacmlPolicy: withObligation })).app)
      .get(`${BASE}/pet/1`)
      .set('Authorization', `Bearer ${token}`)
      .expect(403);
    let fulfilled = 0;
    const handled = scenarioAuthorize({ xacmlPolicy: withObligation, obligations: { 'urn:example:log': () => void (fulfilled += 1) } });
    await supertest(gateway(handled).app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${token}`).expect(200);
    expect(fulfilled).to.equal(1);
  });

  it('a shared XacmlPolicySource: update() puts an uploaded policy in force, a bad one is refused', async () => {
    const source = new XacmlPolicySource({ policy: policyXml });
    const { app } = gateway(scenarioAuthorize({ xacmlPolicy: source }));
    const client3 = await as.issueToken('client3', 'client3-secret');
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client3}`).expect(403);
    expect(() => source.update('<nope')).to.throw();
    source.update(policyXml.replace('>client2<', '>client3<'));
    await supertest(app).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client3}`).expect(200);
  });

  it('works the same in an Express 4 app', async () => {
    const app4 = express4();
    app4.use(
      BASE,
      requireToken({ policy: tokenPolicy }),
      introspect({ policy: tokenPolicy }),
      scenarioAuthorize(),
      forwardTokenHeaders(),
      createProxyMiddleware({ target: backend.url }),
    );
    app4.use(problemJsonErrorHandler());
    const client2 = await as.issueToken('client2', 'client2-secret');
    const ok = await supertest(app4).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client2}`).expect(200);
    expect((ok.body as Echo).headers['gateway-token-clientid']).to.equal('client2');
    const client3 = await as.issueToken('client3', 'client3-secret');
    const denied = await supertest(app4).get(`${BASE}/pet/1`).set('Authorization', `Bearer ${client3}`).expect(403);
    expect(denied.body.detail).to.equal(DENIED_DETAIL);
  });

  describe('the XACML request of an invocation', () => {
    it('holds every docs/xacml-attributes.md attribute the invocation supplies, never the token (fixture)', async () => {
      const withUserInfo = createTokenPolicy({
        name: 'demo-idp',
        issuer: as.issuer,
        clientId: 'gateway',
        clientSecret: 'gateway-secret',
        userInfo: true,
        cache: false,
      });
      const requests: RequestContext[] = [];
      const { app } = gateway(
        scenarioAuthorize({ onRequest: (request) => requests.push(request), subject: () => ({ organization: 'Comune' }) }),
        withUserInfo,
      );
      const token = await as.issueToken('client1', 'client1-secret', { scope: 'read write' });
      await supertest(app)
        .put(`${BASE}/pet?status=available&tag=a&tag=b&access_token=${token}`)
        .set('Accept', 'application/json')
        .set('SOAPAction', '"urn:updatePet"')
        .set('Gateway-Token-Subject', 'admin')
        .send({ id: 1 })
        .expect(200);
      expect(requests).to.have.length(1);
      const xml = toRequestXml(requests[0]!);
      expect(xml).not.to.include(token);
      const normalized = normalizeRequestXml(xml);
      const expected = await readFile(new URL('petstore-invocation-request.xml', fixtures), 'utf8').catch(() => '');
      if (process.env.UPDATE_FIXTURES === '1') await writeFile(new URL('petstore-invocation-request.xml', fixtures), normalized);
      else expect(normalized).to.equal(expected);
      const ids = new Set([
        ...requests[0]!.subjects.flatMap((s) => s.attributes.map((a) => a.attributeId)),
        ...requests[0]!.action.attributes.map((a) => a.attributeId),
        ...requests[0]!.resources.flatMap((r) => r.attributes.map((a) => a.attributeId)),
      ]);
      for (const id of [
        'urn:oasis:names:tc:xacml:1.0:action:action-id',
        'org:gateway:action:token:audience',
        'org:gateway:action:token:scope',
        'org:gateway:action:token:introspection:claim:azp',
        'org:gateway:action:token:introspection:claim:aud',
        'org:gateway:action:provider',
        'org:gateway:action:service',
        'org:gateway:action:action',
        'org:gateway:action:url',
        'org:gateway:action:url:parameter:status',
        'org:gateway:action:url:parameter:tag',
        'org:gateway:action:transport:header:accept',
        'org:gateway:action:transport:header:gateway-token-subject',
        'org:gateway:action:soapAction',
        'org:gateway:action:gwService',
        'org:gateway:action:protocol',
        'urn:oasis:names:tc:xacml:1.0:subject:subject-id',
        'org:gateway:subject:token:issuer',
        'org:gateway:subject:token:subject',
        'org:gateway:subject:token:clientId',
        'org:gateway:subject:token:userInfo:fullName',
        'org:gateway:subject:token:userInfo:firstName',
        'org:gateway:subject:token:userInfo:middleName',
        'org:gateway:subject:token:userInfo:familyName',
        'org:gateway:subject:token:userInfo:eMail',
        'org:gateway:subject:token:userInfo:claim:email',
        'org:gateway:subject:organization',
        'org:gateway:subject:client',
        'org:gateway:subject:credential',
        'urn:oasis:names:tc:xacml:1.0:resource:resource-id',
      ]) {
        expect(ids, id).to.include(id);
      }
      expect(ids).not.to.include('org:gateway:action:transport:header:authorization');
      expect(ids).not.to.include('org:gateway:action:url:parameter:access_token');
    });
  });
});
