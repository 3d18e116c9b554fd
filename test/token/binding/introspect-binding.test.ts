/**
 * `introspect` and certificate-bound tokens on their own (no gateway): a `cnf` that cannot bind
 * (not a thumbprint, or an introspection answer and a JWT that disagree) is refused whatever the
 * request; `clientCertificate` gives the certificate another way; a token without `cnf` needs none.
 */
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import {
  createTokenPolicy,
  introspect,
  problemJsonErrorHandler,
  requireToken,
  type ClientCertificateSource,
  type IntrospectOptions,
  type TokenPolicy,
} from '../../../src/index.js';
import { close, listen } from '../../gateway/helpers.js';
import { json, nowSeconds, startPeer, tokenOf, type Peer } from '../peer.js';

const THUMBPRINT = 'Jf9kihSOz6WjwtZXnR_Swm8Vn-8j_H0ITOyjUgaY8Tk';
const OTHER = 'qDUZHhMABFkGUuYkWdUv9RIC3kbqoC-9ZCBqVlgSkXU';

describe('introspect: certificate-bound tokens', function () {
  this.timeout(30_000);
  let peer: Peer;
  const servers: Server[] = [];
  const policies: TokenPolicy[] = [];
  /** The introspection answer of each token. */
  const answers = new Map<string, Record<string, unknown>>();

  before(async () => {
    peer = await startPeer();
    peer.introspection = (_req, res, body) => json(res, answers.get(tokenOf(body)) ?? { active: false });
  });
  after(async () => {
    await Promise.all(servers.map((server) => close(server)));
    for (const policy of policies) policy.close();
    await peer.stop();
  });

  /** An app with `requireToken` + `introspect` answering the token's binding as JSON. */
  async function app(options: Partial<IntrospectOptions> & { jwt?: boolean } = {}): Promise<string> {
    const { jwt = false, ...rest } = options;
    const policy = createTokenPolicy({
      name: 'idp',
      issuer: peer.issuer,
      clientId: 'gateway',
      clientSecret: 'secret',
      ...(jwt ? { jwtValidation: true, introspection: true, anyAudience: true } : {}),
    });
    policies.push(policy);
    const application = express();
    application.get('/', requireToken({ policy }), introspect({ policy, ...rest }), (req, res) => {
      res.json({ binding: req.gateway?.token?.binding ?? null });
    });
    application.use(problemJsonErrorHandler());
    const server = createServer(application);
    servers.push(server);
    return listen(server);
  }

  const active = (extra: Record<string, unknown>) => ({
    active: true,
    sub: 'client1',
    client_id: 'client1',
    exp: nowSeconds() + 600,
    ...extra,
  });
  const call = (url: string, token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } });

  it('a cnf that cannot bind is refused 401 invalid_token (invalid_cnf), certificate or not', async () => {
    const url = await app({ clientCertificate: () => ({ thumbprint: THUMBPRINT }) });
    for (const [token, cnf] of [
      ['short', { 'x5t#S256': 'abc' }],
      ['number', { 'x5t#S256': 42 }],
      ['padded', { 'x5t#S256': `${THUMBPRINT}=` }],
    ] as const) {
      answers.set(token, active({ cnf }));
      const answer = await call(url, token);
      expect(answer.status, token).to.equal(401);
      expect(answer.headers.get('www-authenticate')).to.include('error="invalid_token"');
    }
  });

  it('clientCertificate gives the certificate: its thumbprint binds, another does not', async () => {
    let presented: ReturnType<ClientCertificateSource> = { thumbprint: THUMBPRINT };
    const url = await app({ clientCertificate: () => presented });
    answers.set('bound', active({ cnf: { 'x5t#S256': THUMBPRINT } }));
    const ok = await call(url, 'bound');
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.deep.equal({
      binding: { kind: 'x5t#S256', thumbprint: THUMBPRINT, result: 'verified', presented: THUMBPRINT },
    });
    presented = { thumbprint: OTHER };
    expect((await call(url, 'bound')).status).to.equal(401);
    presented = undefined;
    expect((await call(url, 'bound')).status).to.equal(401);
  });

  it('a token without cnf needs no certificate and has no binding', async () => {
    const url = await app();
    answers.set('bearer', active({}));
    const answer = await call(url, 'bearer');
    expect(answer.status).to.equal(200);
    expect(await answer.json()).to.deep.equal({ binding: null });
  });

  it('an introspection answer and a JWT that name two certificates: refused', async () => {
    const url = await app({ jwt: true, clientCertificate: () => ({ thumbprint: THUMBPRINT }) });
    const claims = { iss: peer.issuer, sub: 'client1', client_id: 'client1', exp: nowSeconds() + 600 };
    const agreeing = await peer.sign({ ...claims, jti: 'a', cnf: { 'x5t#S256': THUMBPRINT } });
    const disagreeing = await peer.sign({ ...claims, jti: 'b', cnf: { 'x5t#S256': OTHER } });
    answers.set(agreeing, active({ cnf: { 'x5t#S256': THUMBPRINT } }));
    answers.set(disagreeing, active({ cnf: { 'x5t#S256': THUMBPRINT } }));
    expect((await call(url, agreeing)).status).to.equal(200);
    expect((await call(url, disagreeing)).status).to.equal(401);
  });
});
