/**
 * The configuration console's tests: the example's three parts in-process (demo authorization
 * server, petstore backend, a gateway on a copy of the example's configuration and policy) with
 * operators, over real HTTP.
 */
import { readFile } from 'node:fs/promises';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { doggie, startPetstoreBackend, type PetstoreBackend } from '../../examples/petstore/backend.js';
import { createGateway, serveGateway, type CreateGatewayOptions, type GatewayConfig, type GatewayServer } from '../../src/index.js';
import { editJson, exampleCopy } from '../gateway/helpers.js';
import { ADMIN_PASSWORD, OperatorClient, PASSWORDS, testUsers } from '../operators/helpers.js';

export { ADMIN_PASSWORD, OperatorClient, PASSWORDS };

export interface PetstoreGateway {
  as: DemoAuthServer;
  backend: PetstoreBackend;
  server: GatewayServer;
  copy: Awaited<ReturnType<typeof exampleCopy>>;
  /** `http://127.0.0.1:<port>/gateway/Ente/PetStore/v1` */
  api: string;
  /** PUT /pet with a token of `client` in the query. */
  putPetAs(client: 'client1' | 'client2' | 'client3'): Promise<Response>;
  /** The configuration file as it is on disk. */
  onDisk(): Promise<GatewayConfig>;
  stop(): Promise<void>;
}

export async function startPetstore(options: Partial<CreateGatewayOptions> = {}): Promise<PetstoreGateway> {
  const as = await startDemoAuthServer({ port: 0 });
  const backend = await startPetstoreBackend({ port: 0 });
  const copy = await exampleCopy();
  await editJson<GatewayConfig>(copy.configFile, (config) => {
    config.tokenPolicies!.DemoIdP!.issuer = as.issuer;
    config.apis[0]!.backend.url = backend.url;
  });
  const gateway = createGateway({
    config: copy.configFile,
    admin: { basicAuth: { username: 'admin', password: ADMIN_PASSWORD }, loginThrottle: { maxFailures: 1000 } },
    operators: { users: await testUsers() },
    ...options,
    // A crowded machine's wall clock can take an ordinary policy's compile past the default
    // 100 ms, and the save would be refused; the tests of that bound set it themselves.
    operatorWork: { maxCompileMs: 10_000, ...options.operatorWork },
  });
  await gateway.ready();
  const server = await serveGateway(gateway, { port: 0, adminPort: 0 });
  const api = `${server.url}/gateway/Ente/PetStore/v1`;
  return {
    as,
    backend,
    server,
    copy,
    api,
    async putPetAs(client) {
      const token = await as.issueToken(client, `${client}-secret`);
      return fetch(`${api}/pet?access_token=${encodeURIComponent(token)}`, {
        method: 'PUT',
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify(doggie),
      });
    },
    async onDisk() {
      return JSON.parse(await readFile(copy.configFile, 'utf8')) as GatewayConfig;
    },
    async stop() {
      await server.stop();
      await backend.stop();
      await as.stop();
      await copy.remove();
    },
  };
}

/** The example policy with `client3` added to the bag of allowed clients. */
export function withClient3(policy: string): string {
  return policy.replace(
    '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>',
    '<AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client2</AttributeValue>\n            <AttributeValue DataType="http://www.w3.org/2001/XMLSchema#string">client3</AttributeValue>',
  );
}
