/**
 * `PostgresConfigSource` on the machine's PostgreSQL (a schema of this run, dropped after): the
 * table created once by sources starting together, the example's file imported once, every save a
 * version, conflicts refused, the gateway loading from it, the console saving to it, two gateways
 * on one configuration, and a database that hangs failing a read instead of holding it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { doggie, startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import {
  ConfigError,
  createGateway,
  InvalidOptionError,
  PostgresConfigSource,
  serveGateway,
  VersionConflictError,
  type GatewayConfig,
  type GatewayServer,
} from '../../src/index.js';
import { editJson, exampleCopy } from '../gateway/helpers.js';
import { ADMIN_PASSWORD, OperatorClient, PASSWORDS, testUsers } from '../operators/helpers.js';
import { adminPool, databaseUrl, dropSchema, testSchema } from '../postgres/helpers.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { withClient3 } from './helpers.js';

const API = '/gateway/configuration/api';
const PETSTORE = `${API}/apis/Ente/PetStore/1`;

describe('PostgresConfigSource', function () {
  this.timeout(60_000);
  const schema = testSchema();
  const db = adminPool();
  let as: DemoAuthServer;
  let backend: PetstoreBackend;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  const sources: PostgresConfigSource[] = [];
  const servers: GatewayServer[] = [];

  const source = (options: Partial<ConstructorParameters<typeof PostgresConfigSource>[0]> = {}): PostgresConfigSource => {
    const made = new PostgresConfigSource({ connectionString: databaseUrl(), schema, initialFile: copy.configFile, ...options });
    sources.push(made);
    return made;
  };
  const putPetAs = async (server: GatewayServer, client: string): Promise<number> => {
    const token = await as.issueToken(client, `${client}-secret`);
    const res = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(doggie),
    });
    await res.arrayBuffer();
    return res.status;
  };
  const startGateway = async (config: PostgresConfigSource, nodeId: string): Promise<GatewayServer> => {
    const gateway = createGateway({
      config,
      nodeId,
      admin: { basicAuth: { username: 'admin', password: ADMIN_PASSWORD }, loginThrottle: { maxFailures: 1000 } },
      operators: { users: await testUsers() },
    });
    await gateway.ready();
    const server = await serveGateway(gateway, { port: 0, adminPort: 0 });
    servers.push(server);
    return server;
  };
  const rows = async (table = 'gateway_configuration'): Promise<Array<Record<string, unknown>>> =>
    (await db.query(`SELECT version, author, comment FROM "${schema}"."${table}" ORDER BY version`)).rows;

  before(async () => {
    [as, backend, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), startPetstoreBackend({ port: 0 }), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = backend.url;
    });
  });
  after(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await Promise.all(sources.map((s) => s.close()));
    await dropSchema(db, schema);
    await db.end();
    await Promise.all([as?.stop(), backend?.stop(), copy?.remove()]);
  });

  it('checks its options at creation, naming the option', () => {
    const make = (options: unknown) => () => new PostgresConfigSource(options as never);
    expect(make({})).to.throw(InvalidOptionError, 'PostgresConfigSource: options needs connectionString or pool (one of them)');
    expect(make({ connectionString: databaseUrl(), schema: 'a;b' })).to.throw(
      InvalidOptionError,
      'PostgresConfigSource: options.schema must be an SQL identifier',
    );
    expect(make({ connectionString: databaseUrl(), table: 'x'.repeat(41) })).to.throw(
      InvalidOptionError,
      'PostgresConfigSource: options.table must be at most 40 characters',
    );
    expect(make({ connectionString: databaseUrl(), queryTimeoutMs: 0 })).to.throw(
      InvalidOptionError,
      'PostgresConfigSource: options.queryTimeoutMs must be a positive integer',
    );
    expect(make({ pool: {} })).to.throw(InvalidOptionError, 'PostgresConfigSource: options.pool must be a pg.Pool (query, connect, end)');
  });

  it('holding no configuration and given no file, it is a ConfigError naming the table, and a gateway on it does not start', async () => {
    const empty = source({ table: 'empty_config', initialFile: undefined });
    await empty.ready();
    const err = await empty.current().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as ConfigError).message).to.equal(
      `invalid gateway configuration (PostgreSQL ${schema}.empty_config): holds no configuration yet: import one (initialFile, serve --config) or save one`,
    );
    const gateway = createGateway({ config: empty });
    const failed = await gateway.ready().then(
      () => undefined,
      (e: unknown) => e,
    );
    await gateway.close();
    expect(failed).to.be.instanceOf(ConfigError);
    expect((failed as ConfigError).source).to.equal(`PostgreSQL ${schema}.empty_config`);
  });

  it('refuses an invalid initial file, naming the file and the field, and imports nothing', async () => {
    const bad = path.join(copy.dir, 'bad.config.json');
    const document = JSON.parse(await readFile(copy.configFile, 'utf8')) as GatewayConfig;
    document.apis[0]!.backend.url = 'ftp://nope';
    document.apis[0]!.authorization = { mode: 'xacml-Policy', policy: '../outside.xml' };
    await writeFile(bad, JSON.stringify(document));
    const err = await PostgresConfigSource.create({ connectionString: databaseUrl(), schema, table: 'bad_config', initialFile: bad }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as ConfigError).source).to.equal(bad);
    expect((err as ConfigError).issues).to.deep.equal([
      {
        path: 'apis[0].authorization.policy',
        message:
          'a policy kept in PostgreSQL needs a relative path inside the configuration folder (letters, digits and ._- ending in .xml)',
      },
    ]);
    document.apis[0]!.authorization = { mode: 'xacml-Policy', policy: 'policies/petstore.xml' };
    await writeFile(bad, JSON.stringify(document));
    const second = await PostgresConfigSource.create({
      connectionString: databaseUrl(),
      schema,
      table: 'bad_config',
      initialFile: bad,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((second as ConfigError).issues).to.deep.include({ path: 'apis[0].backend.url', message: 'must be an http(s) URL' });
    expect(await rows('bad_config')).to.deep.equal([]);
  });

  it('three sources starting together create the table once and import the file once, as version 1 with its policy', async () => {
    const three = [source(), source(), source()];
    await Promise.all(three.map((s) => s.ready()));
    expect(await rows()).to.deep.equal([{ version: 1, author: '(imported)', comment: 'imported from gateway.config.json' }]);
    const versions = await db.query(`SELECT version FROM "${schema}"."gateway_configuration_schema_version"`);
    expect(versions.rows).to.deep.equal([{ version: 1 }]);
    const current = await three[2]!.current();
    // The document as written in the file, key order included.
    expect(`${JSON.stringify(current.document, null, 2)}`).to.equal(
      JSON.stringify(JSON.parse(await readFile(copy.configFile, 'utf8')), null, 2),
    );
    expect(current.policies).to.deep.equal({ 'policies/petstore.xml': await readFile(copy.policyFile, 'utf8') });
    expect(current.meta).to.include({ version: 1, author: '(imported)' });
    expect(current.meta.digest).to.match(/^[0-9a-f]{32}$/);
    expect(three[0]!.label).to.equal(`PostgreSQL ${schema}.gateway_configuration`);
  });

  it('saves versions with author and comment as given (parameterized), refuses a stale expected version, and never writes one version twice', async () => {
    const [one, two] = [source(), source()];
    const latest = await one.current();
    const document = structuredClone(latest.document);
    document.apis[0]!.backend.timeoutMs = 9000;
    const comment = "timeout'); DROP TABLE gateway_configuration; --";
    const saved = await one.save({ document }, { author: 'ada', comment }, latest.meta.version);
    expect(saved).to.include({ version: 2, author: 'ada', comment });
    expect(saved.time).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The policy not in the proposal is kept from the version before.
    expect((await two.get(2))!.policies).to.deep.equal(latest.policies);
    const stale = await two.save({ document }, { author: 'otto', comment: 'late' }, 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(stale).to.be.instanceOf(VersionConflictError);
    expect(stale).to.include({ expected: 1, latest: 2 });
    // Saves from two instances at once: each its own version.
    const both = await Promise.all([
      one.save({ document }, { author: 'a', comment: '' }),
      two.save({ document }, { author: 'b', comment: '' }),
    ]);
    expect(both.map((v) => v.version).sort()).to.deep.equal([3, 4]);
    const list = await two.list();
    expect(list.map((v) => v.version)).to.deep.equal([4, 3, 2, 1]);
    expect(await one.get(99)).to.equal(undefined);
    expect(await one.get(-1)).to.equal(undefined);
    const outside = await one.save({ document, policies: { '../x.xml': '<x/>' } }, { author: 'a', comment: '' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(outside).to.be.instanceOf(TypeError).with.property('message', '../x.xml: not a policy path the console writes');
    expect((await two.list()).length).to.equal(4);
  });

  it("two gateways on one configuration: saved through the first one's console, in force on each at its ResetAllCaches; diff and rollback", async () => {
    const [gw1, gw2] = [await startGateway(source(), 'pg-1'), await startGateway(source(), 'pg-2')];
    expect(await putPetAs(gw1, 'client3')).to.equal(403);
    expect(await putPetAs(gw2, 'client3')).to.equal(403);
    const ada = new OperatorClient(gw1.adminUrl!);
    expect((await ada.signIn('ada', PASSWORDS.ada)).status).to.equal(200);
    const config = (await (await ada.fetch(`${API}/config`)).json()) as {
      source: string;
      version: { version: number };
      policies: Record<string, string>;
    };
    expect(config.source).to.equal(`PostgreSQL ${schema}.gateway_configuration`);
    const before = config.version.version;
    const upload = await ada.json(`${PETSTORE}/policy`, 'PUT', {
      text: withClient3(config.policies['policies/petstore.xml']!),
      comment: 'client3 may update pets',
    });
    expect(upload.status).to.equal(200);
    expect(((await upload.json()) as { version: { version: number } }).version.version).to.equal(before + 1);
    // Saved, not yet in force anywhere.
    expect(await putPetAs(gw1, 'client3')).to.equal(403);
    const state = (await (await ada.fetch(`${API}/state`)).json()) as { nodes: Array<{ nodeId: string; state: string }> };
    expect(state.nodes).to.deep.include({ ...state.nodes[0], nodeId: 'pg-1', state: 'saved, not yet in force' });
    // Without Redis each instance resets on its own.
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    expect(await putPetAs(gw1, 'client3')).to.equal(200);
    expect(await putPetAs(gw2, 'client3')).to.equal(403);
    await gw2.gateway.resetAllCaches();
    expect(await putPetAs(gw2, 'client3')).to.equal(200);
    expect(gw2.gateway.configVersion).to.equal(gw1.gateway.configVersion);
    const after = (await (await ada.fetch(`${API}/state`)).json()) as { nodes: Array<{ state: string; version?: number }> };
    expect(after.nodes[0]).to.include({ state: 'in force', version: before + 1 });

    const diff = (await (await ada.fetch(`${API}/diff?from=${before}&to=${before + 1}`)).json()) as {
      files: Array<{ file: string; lines: Array<{ op: string; text: string }> }>;
    };
    expect(diff.files.map((f) => f.file)).to.deep.equal(['policies/petstore.xml']);
    expect(diff.files[0]!.lines.filter((l) => l.op !== ' ').map((l) => `${l.op}${l.text.trim()}`)).to.deep.equal([
      '+<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client3</AttributeValue>',
    ]);
    const back = await ada.json(`${API}/versions/1/rollback`, 'POST', {});
    expect(back.status).to.equal(200);
    await Promise.all([gw1.gateway.resetAllCaches(), gw2.gateway.resetAllCaches()]);
    expect(await putPetAs(gw1, 'client3')).to.equal(403);
    expect(await putPetAs(gw2, 'client3')).to.equal(403);
    expect(await putPetAs(gw2, 'client1')).to.equal(200);
  });

  it('a database that hangs fails the read after queryTimeoutMs; the configuration in force keeps serving', async () => {
    const proxy: TcpProxy = await startTcpProxy({ port: 5432 });
    try {
      const hanging = source({ connectionString: databaseUrl(proxy.port), queryTimeoutMs: 500 });
      const server = await startGateway(hanging, 'pg-hang');
      expect(await putPetAs(server, 'client1')).to.equal(200);
      proxy.stall();
      const err = await hanging.current().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.have.property(
        'message',
        `PostgreSQL ${schema}.gateway_configuration: read of the configuration: no answer within 500 ms`,
      );
      const reset = await server.gateway.resetAllCaches().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(reset).to.be.instanceOf(ConfigError);
      expect((reset as ConfigError).source).to.equal(`PostgreSQL ${schema}.gateway_configuration`);
      expect(await putPetAs(server, 'client1')).to.equal(200);
      proxy.restore();
      await server.gateway.resetAllCaches();
      expect(await putPetAs(server, 'client1')).to.equal(200);
    } finally {
      proxy.restore();
      await proxy.close();
    }
  });
});
