/**
 * `npm start`: the runnable example. Starts, on loopback, the demo authorization server
 * (http://127.0.0.1:9000), the petstore backend (http://127.0.0.1:9001) and the gateway
 * (http://127.0.0.1:8080/gateway/Ente/PetStore/v1/...), then prints the URLs and a curl command.
 *
 * Environment:
 * - `GATEWAY_CONFIG=<file>`: another configuration file (relative paths resolve from its folder);
 * - `ISSUER`, `CLIENT_ID`, `CLIENT_SECRET`: a real identity provider instead of the demo one (the
 *   demo server is then not started); the gateway introspects there as `CLIENT_ID`;
 * - `ADMIN_PASSWORD`: password of the `admin` user of `/gateway/admin` and `/gateway/console`
 *   (a random one is generated and printed when unset).
 *
 * @module
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDemoAuthServer, type DemoAuthServer } from './auth-server.js';
import { startPetstoreBackend } from './backend.js';
import { startGatewayServer, type IdentityProvider } from './gateway-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));

function environmentIdp(env: NodeJS.ProcessEnv): IdentityProvider | undefined {
  const { ISSUER, CLIENT_ID, CLIENT_SECRET } = env;
  if (ISSUER === undefined && CLIENT_ID === undefined && CLIENT_SECRET === undefined) return undefined;
  if (!ISSUER || !CLIENT_ID || !CLIENT_SECRET) {
    throw new Error('ISSUER, CLIENT_ID and CLIENT_SECRET go together: set all three to use your identity provider');
  }
  return { issuer: ISSUER, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET };
}

async function main(): Promise<void> {
  const configFile = path.resolve(process.env.GATEWAY_CONFIG ?? path.join(here, 'gateway.config.json'));
  const idp = environmentIdp(process.env);
  let authServer: DemoAuthServer | undefined;
  if (idp === undefined) authServer = await startDemoAuthServer({ port: 9000 });
  const backend = await startPetstoreBackend({ port: 9001 });
  const gateway = await startGatewayServer({
    configFile,
    port: 8080,
    adminPort: 8081,
    ...(idp === undefined ? {} : { idp }),
    ...(process.env.ADMIN_PASSWORD ? { adminPassword: process.env.ADMIN_PASSWORD } : {}),
  });

  const api = `${gateway.url}/gateway/Ente/PetStore/v1`;
  const admin = `admin:${gateway.adminPassword}`;
  const lines = [
    '',
    'express-access-gateway — petstore example',
    '',
    `  configuration          ${configFile}`,
    authServer === undefined
      ? `  identity provider      ${idp!.issuer} (introspection as ${idp!.clientId})`
      : `  authorization server   ${authServer.issuer}  (demo; clients client1, client2, client3 with secret <id>-secret)`,
    `  petstore backend       ${backend.url}`,
    `  gateway                ${api}/pet/10`,
    `  monitoring console     ${gateway.adminUrl}/gateway/console/   (user admin, password ${gateway.adminPassword})`,
    `  ResetAllCaches         curl -u '${admin}' -H 'X-Gateway-Console: 1' -X POST ${gateway.adminUrl}/gateway/admin/reset-caches`,
    '',
  ];
  if (authServer !== undefined) {
    lines.push(
      'Get a token as client1 and read the pet (paste it in a shell):',
      '',
      `  TOKEN=$(curl -s -u client1:client1-secret -d grant_type=client_credentials ${authServer.issuer}/token | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token') && curl -s "${api}/pet/10?access_token=$TOKEN"; echo`,
      '',
      'client3 gets 403 until it is added to examples/petstore/policies/petstore.xml and the caches are reset.',
    );
  } else {
    lines.push('Get an access token from your identity provider, then:', '', `  curl -s -H "Authorization: Bearer $TOKEN" ${api}/pet/10; echo`);
  }
  lines.push('', 'Ctrl-C stops everything.', '');
  process.stdout.write(lines.join('\n'));

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    // The gateway first: its in-flight exchanges still need the backend and the authorization server.
    gateway
      .stop()
      .finally(() => Promise.allSettled([backend.stop(), authServer?.stop()]))
      .then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
