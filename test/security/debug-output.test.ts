/**
 * With `DEBUG=*`, nothing the gateway prints may hold a token: the example's gateway runs in a
 * child process with every debug namespace on, and receives tokens in every RFC 6750 way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { echoBackend, editJson, exampleCopy, repoRoot } from '../gateway/helpers.js';
import type { GatewayConfig } from '../../src/index.js';
import { rawRequest } from './support/http.js';

describe('security: debug output', () => {
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let child: ChildProcess;
  let output = '';
  let base: string;

  before(async function () {
    this.timeout(60_000);
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
    child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'test/security/support/debug-gateway.ts')], {
      cwd: repoRoot,
      env: { ...process.env, DEBUG: '*', DEBUG_COLORS: '0', CONFIG: copy.configFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer): void => void (output += chunk.toString('utf8'));
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    base = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = /listening on (http:\/\/\S+)/.exec(output);
        if (found !== null) {
          clearInterval(timer);
          resolve(found[1]!);
        }
      }, 50);
      child.once('exit', (code) => {
        clearInterval(timer);
        reject(new Error(`the gateway exited (${code}):\n${output}`));
      });
    });
  });

  after(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await Promise.all([as.stop(), echo.stop(), copy.remove()]);
  });

  it('prints no token, however the client sends it', async () => {
    const api = '/gateway/Ente/PetStore/v1';
    const tokens = await Promise.all([1, 2, 3, 4].map(() => as.issueToken('client1', 'client1-secret')));
    const answers = [
      await rawRequest(base, `${api}/pet/10?access_token=${encodeURIComponent(tokens[0]!)}`),
      await rawRequest(base, `${api}/pet/10`, { headers: { authorization: `Bearer ${tokens[1]}` } }),
      await rawRequest(base, `${api}/pet`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${encodeURIComponent(tokens[2]!)}&name=doggie`,
      }),
      // Refused paths and unknown APIs print nothing of the query either.
      await rawRequest(base, `${api}/x/../pet?access_token=${encodeURIComponent(tokens[3]!)}`),
    ];
    expect(answers.map((a) => a.status)).to.deep.equal([201, 201, 201, 400]);
    // Something was printed (the namespaces are on), and none of it is a token.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(output).to.match(/token|record|relay/);
    for (const token of tokens) expect(output).to.not.include(token);
  });
});
