/**
 * `npm start`: the runnable example. Starts, on loopback, the demo authorization server
 * (http://127.0.0.1:9000), the petstore backend (http://127.0.0.1:9001) and the gateway
 * (http://127.0.0.1:8080/gateway/Ente/PetStore/v1/...), then prints the URLs and a curl command.
 *
 * Environment:
 * - `GATEWAY_CONFIG=<file>`: another configuration file (relative paths resolve from its folder);
 * - `ISSUER`, `CLIENT_ID`, `CLIENT_SECRET`: a real identity provider instead of the demo one (the
 *   demo server is then not started); the gateway introspects there as `CLIENT_ID`;
 * - with them, optionally: `CLIENT_AUTH_METHOD` (`client_secret_basic`, the default,
 *   `client_secret_post` for a server that does not form-decode Basic credentials, or `bearer`),
 *   and `INTROSPECTION_ENDPOINT`, `JWKS_URI`, `USERINFO_ENDPOINT` to complete the discovered
 *   metadata of a server that does not publish them;
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
import { policiesInForce } from './policies-in-force.js';

const here = path.dirname(fileURLToPath(import.meta.url));

const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'bearer'] as const;

function environmentIdp(env: NodeJS.ProcessEnv): IdentityProvider | undefined {
  const { ISSUER, CLIENT_ID, CLIENT_SECRET, CLIENT_AUTH_METHOD, INTROSPECTION_ENDPOINT, JWKS_URI, USERINFO_ENDPOINT } = env;
  const extras = CLIENT_AUTH_METHOD ?? INTROSPECTION_ENDPOINT ?? JWKS_URI ?? USERINFO_ENDPOINT;
  if (ISSUER === undefined && CLIENT_ID === undefined && CLIENT_SECRET === undefined && extras === undefined) return undefined;
  if (!ISSUER || !CLIENT_ID || !CLIENT_SECRET) {
    throw new Error(
      'ISSUER, CLIENT_ID and CLIENT_SECRET go together (and with CLIENT_AUTH_METHOD, INTROSPECTION_ENDPOINT, JWKS_URI, USERINFO_ENDPOINT): set all three to use your identity provider',
    );
  }
  const method = CLIENT_AUTH_METHOD || undefined;
  if (method !== undefined && !(AUTH_METHODS as readonly string[]).includes(method)) {
    throw new Error(`CLIENT_AUTH_METHOD must be one of ${AUTH_METHODS.join(', ')}`);
  }
  return {
    issuer: ISSUER,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    ...(method === undefined ? {} : { clientAuthMethod: method as (typeof AUTH_METHODS)[number] }),
    ...(INTROSPECTION_ENDPOINT ? { introspectionEndpoint: INTROSPECTION_ENDPOINT } : {}),
    ...(JWKS_URI ? { jwksUri: JWKS_URI } : {}),
    ...(USERINFO_ENDPOINT ? { userinfoEndpoint: USERINFO_ENDPOINT } : {}),
  };
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
  const policies = await policiesInForce(configFile);
  const petstorePolicy = policies.find((policy) => policy.api === 'Ente/PetStore/v1')?.file;
  const admin = `admin:${gateway.adminPassword}`;
  const lines = [
    '',
    'express-access-gateway — petstore example',
    '',
    `  configuration          ${configFile}`,
    ...(policies.length === 0
      ? ['  XACML policies         none (no API of the configuration has xacml-Policy authorization)']
      : policies.map(({ api: name, file }, i) => `  ${i === 0 ? 'XACML policies  ' : '                '}       ${file}  (${name})`)),
    authServer === undefined
      ? `  identity provider      ${idp!.issuer} (introspection as ${idp!.clientId})`
      : `  authorization server   ${authServer.issuer}  (demo; clients client1, client2, client3 with secret <id>-secret)`,
    `  petstore backend       ${backend.url}`,
    `  gateway                ${api}/pet/10`,
    `  monitoring console     ${gateway.adminUrl}/gateway/console/   (user admin, password ${gateway.adminPassword})`,
    `  configuration console  ${gateway.adminUrl}/gateway/configuration/   (the same user; also ResetAllCaches)`,
    `  metrics                ${gateway.adminUrl}/gateway/metrics   (the same user)`,
    `  ResetAllCaches         curl -u '${admin}' -H 'X-Gateway-Console: 1' -X POST ${gateway.adminUrl}/gateway/admin/reset-caches`,
    '',
  ];
  if (authServer !== undefined) {
    lines.push(
      'Get a token as client1 and read the pet (paste it in a shell):',
      '',
      `  TOKEN=$(curl -s -u client1:client1-secret -d grant_type=client_credentials ${authServer.issuer}/token | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).access_token') && curl -s "${api}/pet/10?access_token=$TOKEN"; echo`,
      ...(petstorePolicy === undefined ? [] : ['', `client3 gets 403 until it is added to ${petstorePolicy} and the caches are reset.`]),
    );
  } else {
    lines.push(
      'Get an access token from your identity provider, then:',
      '',
      `  curl -s -H "Authorization: Bearer $TOKEN" ${api}/pet/10; echo`,
    );
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
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
