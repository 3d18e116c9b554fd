/**
 * The example's gateway alone, for a test that runs it in a child process (with `DEBUG=*`, say):
 * `CONFIG=<file>` is its configuration; prints `listening on <url>` when it serves.
 */
import { startGatewayServer } from '../../../examples/petstore/gateway-server.js';

const gateway = await startGatewayServer({ configFile: process.env.CONFIG!, port: 0, adminPort: 0, adminPassword: 'debug-test' });
process.stdout.write(`listening on ${gateway.url}\n`);
process.on('SIGTERM', () => void gateway.stop().then(() => process.exit(0)));
