/**
 * Secrets sent where an operator points (issue 25, finding 9), attacked as an admin of the
 * configuration console would, against `express-access-gateway serve` over real HTTP: the
 * legitimate authorization server, and a server of the attacker's that records everything it
 * receives. The console never shows a token policy's secret, but a change that kept it (the form
 * leaves it out) while moving the issuer or an endpoint had the gateway send it to the new server
 * after ResetAllCaches; `clientSecretEnv` could name any variable of the gateway's environment.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { copyFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import type { GatewayConfig, TokenPolicyConfig } from '../../src/index.js';
import { hashPassword } from '../../src/operators/passwords.js';
import { close, editJson, exampleCopy, listen } from '../gateway/helpers.js';
import { OperatorClient } from '../operators/helpers.js';
import { serveOnFreePorts } from './support/serve-ports.js';
import { serve, stop, type Served } from '../server/support.js';

const API = '/gateway/configuration/api';
const SESSION_SECRET = 'session-secret-of-the-gateway-0123456789abcdef';
const DATABASE_PASSWORD = 'database-password-9f8e7d';
const SCHEMA = `eag_secret_redirect_${process.pid}_${randomBytes(4).toString('hex')}`;
const DATABASE_URL = `postgres://postgres:${DATABASE_PASSWORD}@127.0.0.1:5432/test`;
/** The secret of the example's token policy, in the configuration file. */
const SAVED_SECRET = 'gateway-secret';

/** A server of the attacker's: an authorization server's discovery and introspection, recording every request. */
interface Listener {
  url: string;
  /** Everything received so far, as text: request lines, headers (Basic credentials decoded), bodies. */
  received(): string;
  requests(): number;
  stop(): Promise<void>;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

async function startAttacker(): Promise<Listener> {
  const seen: string[] = [];
  let url = '';
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      // client_secret_basic form-encodes the id and secret before base64 (RFC 6749 section 2.3.1).
      const credentials = basic === undefined ? '' : Buffer.from(basic, 'base64').toString('utf8');
      seen.push(
        `${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n${credentials}\n${decoded(credentials)}\n${decoded(Buffer.concat(chunks).toString('utf8'))}`,
      );
      if (req.url?.startsWith('/.well-known/')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            issuer: url,
            introspection_endpoint: `${url}/introspect`,
            token_endpoint: `${url}/token`,
            jwks_uri: `${url}/jwks`,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ active: true, client_id: 'client1', scope: 'read', aud: 'petstore' }));
    });
  });
  url = await listen(server);
  return { url, received: () => seen.join('\n----\n'), requests: () => seen.length, stop: () => close(server) };
}

describe('security: secrets sent where an operator points (issue 25, finding 9)', function () {
  this.timeout(120_000);
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let attacker: Listener;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let served: Served;
  let admin: string;
  let api: string;
  let ada: OperatorClient;

  before(async () => {
    as = await startDemoAuthServer({ port: 0 });
    backend = await startPetstoreBackend({ port: 0 });
    attacker = await startAttacker();
    copy = await exampleCopy();
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
    });
    const users = path.join(copy.dir, 'users.json');
    await writeFile(
      users,
      JSON.stringify({ users: [{ username: 'ada', role: 'admin', passwordHash: await hashPassword('ada-pass-123') }] }),
    );
    const started = await serveOnFreePorts(['serve', '--config', copy.configFile, '--users', users], {
      GATEWAY_SESSION_SECRET: SESSION_SECRET,
      DATABASE_URL,
      DATABASE_SCHEMA: SCHEMA,
      GATEWAY_SECRET_X: SAVED_SECRET,
    });
    served = started.served;
    api = `${started.api}/gateway/Ente/PetStore/v1`;
    admin = started.admin;
    ada = new OperatorClient(admin);
    expect((await ada.signIn('ada', 'ada-pass-123')).status).to.equal(200);
  });

  after(async () => {
    await stop(served);
    await attacker?.stop();
    await backend?.stop();
    await as?.stop();
    await copy?.remove();
    const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
    await client.end();
  });

  /**
   * The issues less the one that says compiling the API's policy took more than 100 ms
   * (operatorWork.maxCompileMs): timed by the wall clock, the example's small policy takes that long
   * on a crowded machine; the issues looked at here are the secret's.
   */
  const withoutCompileTime = <T extends { message: string }>(issues: T[]): T[] =>
    issues.filter((issue) => !/^compiling this policy took \d+ ms; /.test(issue.message));
  const savedPolicy = async (): Promise<TokenPolicyConfig> => {
    const body = (await (await ada.fetch(`${API}/config`)).json()) as { document: GatewayConfig };
    return body.document.tokenPolicies!['DemoIdP']!;
  };
  const putPolicy = async (
    policy: Record<string, unknown>,
  ): Promise<{ status: number; issues: Array<{ path: string; message: string }> }> => {
    const res = await ada.json(`${API}/token-policies/DemoIdP`, 'PUT', { policy });
    const body = (await res.json()) as { issues?: Array<{ path: string; message: string }> };
    return { status: res.status, issues: withoutCompileTime(body.issues ?? []) };
  };
  /** ResetAllCaches, then one invocation with a valid token: the gateway introspects with the policy in force. */
  const resetAndInvoke = async (): Promise<number> => {
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    const token = await as.issueToken('client1', 'client1-secret');
    const res = await fetch(`${api}/pet/10`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    return res.status;
  };

  it('an admin moving the issuer or an endpoint to their server while keeping the saved secret is refused (422 naming clientSecret); after ResetAllCaches that server has received nothing', async () => {
    const policy = await savedPolicy();
    expect(policy).not.to.have.property('clientSecret');
    const issuer = await putPolicy({ ...policy, issuer: attacker.url });
    const endpoint = await putPolicy({ ...policy, introspectionEndpoint: `${attacker.url}/introspect` });
    const config = (await (await ada.fetch(`${API}/config`)).json()) as { document: GatewayConfig };
    config.document.tokenPolicies!['DemoIdP']!.tokenEndpoint = `${attacker.url}/token`;
    const whole = await ada.json(`${API}/config`, 'PUT', { document: config.document });
    const status = await resetAndInvoke();

    // What the attacker's server received, first: that is the harm.
    expect(attacker.received(), 'what the attacker received').not.to.include(SAVED_SECRET);
    expect(attacker.requests()).to.equal(0);
    expect(issuer.status).to.equal(422);
    expect(issuer.issues).to.deep.equal([
      {
        path: 'tokenPolicies.DemoIdP.clientSecret',
        message: 'the client secret must be given again when the issuer changes (the saved secret is never sent to a new server)',
      },
    ]);
    expect(endpoint.status).to.equal(422);
    expect(endpoint.issues).to.deep.equal([
      {
        path: 'tokenPolicies.DemoIdP.clientSecret',
        message:
          'the client secret must be given again when introspectionEndpoint changes (the saved secret is never sent to a new server)',
      },
    ]);
    expect(whole.status).to.equal(422);
    expect(
      withoutCompileTime(((await whole.json()) as { issues: Array<{ path: string; message: string }> }).issues).map((i) => i.path),
    ).to.deep.equal(['tokenPolicies.DemoIdP.clientSecret']);
    // The API still works with the legitimate authorization server.
    expect(status).to.equal(200);
    expect((await savedPolicy()).issuer).to.equal(as.issuer);
  });

  it('with the secret given again the same change is accepted, and only the secret typed goes to the new issuer', async () => {
    const policy = await savedPolicy();
    const moved = await putPolicy({ ...policy, issuer: attacker.url, clientSecret: 'typed-by-the-admin' });
    expect(moved.status).to.equal(200);
    await resetAndInvoke();
    expect(attacker.received()).to.include('gateway:typed-by-the-admin');
    expect(attacker.received()).not.to.include(SAVED_SECRET);
    // Moving back needs the legitimate secret again, too.
    expect((await putPolicy({ ...(await savedPolicy()), issuer: as.issuer })).status).to.equal(422);
    expect((await putPolicy({ ...(await savedPolicy()), issuer: as.issuer, clientSecret: SAVED_SECRET })).status).to.equal(200);
    expect(await resetAndInvoke()).to.equal(200);
  });

  it('clientSecretEnv naming a variable of the gateway (GATEWAY_SESSION_SECRET, DATABASE_URL) is refused by the console; GATEWAY_SECRET_X is accepted, and cannot then be moved to another issuer', async () => {
    const before = attacker.requests();
    const policy = await savedPolicy();
    const session = await putPolicy({ ...policy, issuer: attacker.url, clientSecretEnv: 'GATEWAY_SESSION_SECRET' });
    const database = await putPolicy({ ...policy, issuer: attacker.url, clientSecretEnv: 'DATABASE_URL' });
    await resetAndInvoke();
    const received = attacker.received();
    expect(received, 'what the attacker received').not.to.include(SESSION_SECRET);
    expect(received, 'what the attacker received').not.to.include(DATABASE_PASSWORD);
    expect(attacker.requests()).to.equal(before);
    const rule = 'must name an environment variable starting with GATEWAY_SECRET_ (for example GATEWAY_SECRET_IDP)';
    expect(session.status).to.equal(422);
    expect(session.issues).to.deep.equal([{ path: 'tokenPolicies.DemoIdP.clientSecretEnv', message: rule }]);
    expect(database.status).to.equal(422);
    expect(database.issues).to.deep.equal([{ path: 'tokenPolicies.DemoIdP.clientSecretEnv', message: rule }]);

    const named = await putPolicy({ ...policy, clientSecretEnv: 'GATEWAY_SECRET_X' });
    expect(named.status).to.equal(200);
    expect(await resetAndInvoke()).to.equal(200);
    const withVariable = await savedPolicy();
    expect(withVariable).to.include({ clientSecretEnv: 'GATEWAY_SECRET_X' });
    // The form sends the variable back as it was: the variable's secret stays with its issuer.
    const kept = await putPolicy({ ...withVariable, issuer: attacker.url });
    expect(kept.status).to.equal(422);
    expect(kept.issues).to.deep.equal([
      {
        path: 'tokenPolicies.DemoIdP.clientSecret',
        message: 'the client secret must be given again when the issuer changes (the saved secret is never sent to a new server)',
      },
    ]);
    await resetAndInvoke();
    expect(attacker.received()).not.to.include(SAVED_SECRET);
  });

  it('serve refuses a configuration file whose clientSecretEnv names GATEWAY_SESSION_SECRET or DATABASE_URL (exit 2, naming the field) and starts with GATEWAY_SECRET_X', async () => {
    for (const variable of ['GATEWAY_SESSION_SECRET', 'DATABASE_URL', 'GATEWAY_SECRET_X']) {
      const file = path.join(copy.dir, `env-${variable}.json`);
      await copyFile(copy.configFile, file);
      await editJson<GatewayConfig>(file, (config) => {
        const policy = config.tokenPolicies!['DemoIdP']!;
        delete policy.clientSecret;
        policy.clientSecretEnv = variable;
      });
      const child = serve(['serve', '--config', file, '--port', '0', '--admin-port', '0'], {
        GATEWAY_SESSION_SECRET: SESSION_SECRET,
        DATABASE_URL,
        DATABASE_SCHEMA: SCHEMA,
        GATEWAY_SECRET_X: SAVED_SECRET,
      });
      try {
        if (variable === 'GATEWAY_SECRET_X') {
          await child.waitFor(/serving APIs at/);
          continue;
        }
        const code = await Promise.race([
          child.exited(),
          new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 15_000)),
        ]);
        expect(code, `${variable}: ${child.output()}`).to.equal(2);
        expect(child.output()).to.include(
          'tokenPolicies.DemoIdP.clientSecretEnv: must name an environment variable starting with GATEWAY_SECRET_',
        );
        expect(child.output()).not.to.include(SESSION_SECRET);
      } finally {
        await stop(child);
      }
    }
  });
});
