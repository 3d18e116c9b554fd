/** xacmlAuthorize also runs on a plain Node.js server (no Express properties on the request). */
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import { xacmlAuthorize } from '../../src/authorize/index.js';
import { createTokenContext, gatewayContext } from '../../src/context.js';
import { isGatewayError } from '../../src/errors.js';
import type { RequestContext } from '../../src/xacml/request-context.js';

describe('xacmlAuthorize on a plain Node.js server', () => {
  it('decides from the token claims and builds the URL and operation from the raw request', async () => {
    const policy = await readFile(new URL('../fixtures/authorize/petstore-policy.xml', import.meta.url), 'utf8');
    const requests: RequestContext[] = [];
    const authorize = xacmlAuthorize({
      xacmlPolicy: policy,
      serviceName: 'PetStore',
      serviceVersion: 1,
      providerName: 'Ente',
      onRequest: (r) => requests.push(r),
    });
    const server = createServer((req, res) => {
      const token = createTokenContext('raw-token-value-1', 'header');
      token.introspection = { active: true, aud: 'petstore-api', azp: String(req.headers['x-client']) };
      gatewayContext(req).token = token;
      authorize(req as Request, res as Response, (err?: unknown) => {
        res.statusCode = err === undefined ? 200 : isGatewayError(err) ? err.status : 500;
        res.end(isGatewayError(err) ? err.params.decisionText : 'ok');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ok = await fetch(`${base}/pet/1?x=1`, { headers: { 'x-client': 'client2' } });
      expect(ok.status).to.equal(200);
      const denied = await fetch(`${base}/pet/1`, { headers: { 'x-client': 'client3' } });
      expect(denied.status).to.equal(403);
      expect(await denied.text()).to.equal('result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok');
      const action = requests[0]!.action.attributes;
      expect(action.find((a) => a.attributeId === 'org:gateway:action:url')?.values).to.deep.equal([`${base}/pet/1?x=1`]);
      expect(action.find((a) => a.attributeId === 'org:gateway:action:action')?.values).to.deep.equal(['GET /pet/1']);
    } finally {
      server.close();
    }
  });
});
