/**
 * The start-up check of a token policy (`TokenPolicy.check`): whether its authorization server
 * can be used as configured, before a caller's token depends on it.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import * as client from 'openid-client';
import type { Configuration } from 'openid-client';
import { GatewayError } from '../errors.js';
import { classifyClientError } from './classify.js';

/**
 * What {@link TokenPolicy.check} found: the authorization server answered as configured, or why it
 * cannot be used (`discovery: ... HTTP 404`, `introspection: the authorization server refused the
 * gateway's client authentication (HTTP 401, invalid_client)`, `discovery: unreachable (ECONNREFUSED)`).
 * The cause never holds a token or a secret.
 */
export type TokenPolicyCheck =
  | {
      /** Discovery answered and the server accepted the gateway's client authentication. */
      readonly ok: true;
    }
  | {
      /** The policy cannot validate tokens now. */
      readonly ok: false;
      /** Why, for example `discovery: HTTP 404` or `invalid_client` (never a secret or a token). */
      readonly cause: string;
    };

/**
 * Introspects a made-up token: an answer (`active: false`, or a refusal of that token) means the
 * server accepted the gateway's client authentication; a 401/403 means it did not.
 */
export async function probeIntrospection(config: Configuration): Promise<void> {
  // A random value no server ever issued: never a caller's token, so nothing to keep secret.
  await client.tokenIntrospection(config, `gateway-check-${randomBytes(18).toString('base64url')}`, { token_type_hint: 'access_token' });
}

/** The outcome of a check that threw: a failure of the server (or of the gateway's credentials), else a pass. */
export function checkFailure(err: unknown, realm: string): TokenPolicyCheck {
  const error = err instanceof GatewayError ? err : classifyClientError(err, realm, 'introspection');
  // The server judged the made-up token: it did authenticate the gateway.
  if (error.code === 'ERR_TOKEN_INVALID' || error.code === 'ERR_TOKEN_EXPIRED') return { ok: true };
  return { ok: false, cause: error.diagnostic ?? error.code };
}
