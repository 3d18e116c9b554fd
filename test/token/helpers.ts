/**
 * Shared pieces of the token tests: a protected app (echoing what the gateway put on the request)
 * over a real HTTP server, and a record of every request's gateway context.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { GatewayContext } from '../../src/context.js';
import { introspect } from '../../src/token/introspect.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';
import { requireToken, type RequireTokenOptions } from '../../src/token/require-token.js';
import { problemJsonErrorHandler, type ProblemJsonErrorHandlerOptions } from '../../src/problem/handler.js';

export interface TestApp {
  server: Server;
  url: string;
  /** Gateway context of every finished request, in order. */
  contexts: GatewayContext[];
  close(): Promise<void>;
}

export interface TestAppOptions {
  express?: typeof express;
  policy?: TokenPolicy;
  realm?: string;
  extraction?: Omit<RequireTokenOptions, 'policy'>;
  problem?: ProblemJsonErrorHandlerOptions;
  /** Middleware mounted before the chain (for example a body parser). */
  before?: express.RequestHandler[];
}

/** Starts `requireToken` (+ `introspect` when a policy is given) + echo handler on loopback. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const app = (options.express ?? express)();
  const contexts: GatewayContext[] = [];
  app.use((req, res, next) => {
    res.on('finish', () => {
      if (req.gateway) contexts.push(req.gateway);
    });
    next();
  });
  for (const middleware of options.before ?? []) app.use(middleware);
  const chain: express.RequestHandler[] = [requireToken({ policy: options.policy ?? options.realm, ...options.extraction })];
  if (options.policy) chain.push(introspect({ policy: options.policy }));
  app.all('/pets', ...chain, (req, res) => {
    const token = req.gateway?.token;
    res.json({
      method: token?.method,
      scheme: token?.scheme,
      binding: token?.binding,
      policy: token?.policy,
      info: token?.info,
      introspection: token?.introspection,
      jwt: token?.jwt,
      userInfo: token?.userInfo,
      body: (req as { body?: unknown }).body,
      rawBody: req.gateway?.rawBody?.toString('utf8'),
    });
  });
  app.use(problemJsonErrorHandler(options.problem));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    contexts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every string of a JSON-able value, to look for a token anywhere in it. */
export function serialized(value: unknown): string {
  return JSON.stringify(value) ?? '';
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Test apps, each with a token policy of its own against one authorization server (the policy's
 * name is the realm the tests expect), closed together by {@link PolicyApps.closeAll}.
 */
export class PolicyApps {
  /** The apps started and not closed yet, oldest first. */
  readonly open: Array<{ app: TestApp; policy: TokenPolicy }> = [];

  /** Starts an app whose policy validates at `issuer` as the gateway client, with `options` on top. */
  async start(issuer: string, options: Partial<TokenPolicyOptions> = {}): Promise<TestApp> {
    const policy = createTokenPolicy({
      name: 'PetStore IdP',
      issuer,
      clientId: 'gateway',
      clientSecret: 'gateway-secret',
      ...options,
    } as TokenPolicyOptions);
    const app = await startTestApp({ policy });
    this.open.push({ app, policy });
    return app;
  }

  /** Closes every open app and its policy. */
  async closeAll(): Promise<void> {
    for (const { app, policy } of this.open.splice(0)) {
      await app.close();
      policy.close();
    }
  }
}
