/** The operator tests' pieces: users with hashed passwords, a gateway's admin listener on loopback, a signed-in client. */
import { randomBytes, scryptSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import express from 'express';
import { createGateway, type CreateGatewayOptions, type Gateway } from '../../src/index.js';
import { hashPassword } from '../../src/operators/passwords.js';
import type { OperatorUser } from '../../src/operators/users.js';
import { close, listen, openConfig } from '../gateway/helpers.js';

export const ADMIN_PASSWORD = 'admin-env-password';
export const PASSWORDS = { vera: 'viewer-pass-1', otto: 'operator-pass-2', ada: 'admin-pass-3' } as const;

let users: Promise<OperatorUser[]> | undefined;
/** vera (viewer), otto (operator), ada (admin), hashed once for all tests. */
export function testUsers(): Promise<OperatorUser[]> {
  users ??= Promise.all([
    hashPassword(PASSWORDS.vera).then((passwordHash) => ({ username: 'vera', role: 'viewer' as const, passwordHash })),
    hashPassword(PASSWORDS.otto).then((passwordHash) => ({ username: 'otto', role: 'operator' as const, passwordHash })),
    hashPassword(PASSWORDS.ada).then((passwordHash) => ({ username: 'ada', role: 'admin' as const, passwordHash })),
  ]);
  return users;
}

/**
 * A hash of the users file's format at scrypt's lowest cost the gateway accepts (N = 1024, r = 8,
 * p = 1: about a thirtieth of the default's work), for tests that sign in thousands of times and
 * are about sessions, not about the hash.
 */
export function lowCostPasswordHash(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password.normalize('NFC'), salt, 32, { N: 1024, r: 8, p: 1 });
  return `scrypt$1024$8$1$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** A gateway's admin listener (admin routes, console, operators) on loopback. */
export interface AdminListener {
  url: string;
  gateway: Gateway;
  stop(): Promise<void>;
}

export async function startAdmin(options: Partial<CreateGatewayOptions> = {}): Promise<AdminListener> {
  const gateway = createGateway({
    config: openConfig('http://127.0.0.1:9'),
    admin: { basicAuth: { username: 'admin', password: ADMIN_PASSWORD }, loginThrottle: { maxFailures: 1000 } },
    operators: { users: await testUsers() },
    ...options,
  });
  await gateway.ready();
  const app = express();
  app.use(gateway.adminRouter);
  const server: Server = createServer(app);
  const url = await listen(server);
  return {
    url,
    gateway,
    async stop() {
      await close(server);
      await gateway.close();
    },
  };
}

/** A browser-like client of the admin listener: keeps the session cookie and the CSRF token. */
export class OperatorClient {
  cookie: string | undefined;
  csrf: string | undefined;
  lastSetCookie: string | null = null;

  constructor(readonly base: string) {}

  async signIn(username: string, password: string): Promise<Response> {
    const res = await this.fetch('/gateway/operators/session', {
      method: 'POST',
      body: JSON.stringify({ username, password }),
      headers: { 'content-type': 'application/json' },
    });
    if (res.ok) {
      const body = (await res.clone().json()) as { csrfToken: string };
      this.csrf = body.csrfToken;
    }
    return res;
  }

  fetch(path: string, init: Omit<RequestInit, 'headers'> & { headers?: Record<string, string> } = {}, csrf = true): Promise<Response> {
    const headers: Record<string, string> = {
      'x-gateway-console': '1',
      origin: this.base,
      'sec-fetch-site': 'same-origin',
      ...(init.headers ?? {}),
    };
    if (this.cookie !== undefined) headers['cookie'] = this.cookie;
    if (csrf && this.csrf !== undefined && init.method !== undefined && init.method !== 'GET') headers['x-csrf-token'] = this.csrf;
    return fetch(`${this.base}${path}`, { ...init, headers }).then((res) => {
      const set = res.headers.get('set-cookie');
      if (set !== null) {
        this.lastSetCookie = set;
        const value = /^eag_session=([^;]*)/.exec(set)?.[1];
        this.cookie = value === undefined || value === '' ? undefined : `eag_session=${value}`;
      }
      return res;
    });
  }

  json(path: string, method: string, body: unknown, csrf = true): Promise<Response> {
    return this.fetch(path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }, csrf);
  }
}

export { close, listen };
