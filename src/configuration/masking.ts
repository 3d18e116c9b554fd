/**
 * Secrets of the configuration are never shown: a token policy's `clientSecret` is replaced by
 * whether one is set and where it comes from, and a document sent back without it keeps the
 * secret saved before.
 *
 * @module
 */
import type { ConfigIssue } from '../config/errors.js';
import type { GatewayConfig, TokenPolicyConfig } from '../config/types.js';

/** Where a token policy's client secret comes from, as the console shows it. */
export interface SecretState {
  /** Whether a secret is set (in the file, or in the environment variable named). */
  set: boolean;
  /** `file`: `clientSecret` in the configuration; `env`: the variable `clientSecretEnv`; `none`. */
  from: 'file' | 'env' | 'none';
  /** The variable's name, with `from: env`. */
  variable?: string;
}

/** The secret state of a token policy. */
export function secretState(policy: TokenPolicyConfig, env: NodeJS.ProcessEnv = process.env): SecretState {
  if (typeof policy.clientSecretEnv === 'string') {
    const value = env[policy.clientSecretEnv];
    return { set: value !== undefined && value !== '', from: 'env', variable: policy.clientSecretEnv };
  }
  if (typeof policy.clientSecret === 'string' && policy.clientSecret !== '') return { set: true, from: 'file' };
  return { set: false, from: 'none' };
}

/** A copy of the document without any secret value, and the state of each token policy's secret. */
export function withoutSecrets(document: GatewayConfig): { document: GatewayConfig; secrets: Record<string, SecretState> } {
  const copy = structuredClone(document);
  const secrets: Record<string, SecretState> = {};
  for (const [name, policy] of Object.entries(copy.tokenPolicies ?? {})) {
    if (policy === null || typeof policy !== 'object') continue;
    secrets[name] = secretState(policy);
    delete policy.clientSecret;
  }
  return { document: copy, secrets };
}

/**
 * Where a token policy sends its client secret, or what decides it: a saved secret goes only
 * where it went before.
 */
const SECRET_DESTINATIONS = [
  'issuer',
  'introspectionEndpoint',
  'tokenEndpoint',
  'userinfoEndpoint',
  'jwksUri',
] as const satisfies ReadonlyArray<keyof TokenPolicyConfig>;

/**
 * Puts back the saved secrets of the token policies of `incoming` that give neither `clientSecret`
 * nor `clientSecretEnv` (a console form leaves the secret out unless it is changed). Edits
 * `incoming` in place. A secret the operator did not give again (put back here, or the same
 * `clientSecretEnv` as saved) is refused when the issuer or an endpoint changed: otherwise an
 * operator who never saw the secret could have it sent to a server of theirs. Returns those
 * refusals, each naming the policy's `clientSecret`.
 */
export function restoreSecrets(incoming: GatewayConfig, saved: GatewayConfig): ConfigIssue[] {
  const refused: ConfigIssue[] = [];
  const before = saved.tokenPolicies ?? {};
  for (const [name, policy] of Object.entries(incoming.tokenPolicies ?? {})) {
    if (policy === null || typeof policy !== 'object' || policy.clientSecret !== undefined) continue;
    const old = Object.hasOwn(before, name) ? before[name] : undefined;
    if (old === undefined || old === null || typeof old !== 'object') continue;
    const sameVariable = policy.clientSecretEnv !== undefined && policy.clientSecretEnv === old.clientSecretEnv;
    if ((policy.clientSecretEnv !== undefined && !sameVariable) || (old.clientSecret === undefined && old.clientSecretEnv === undefined))
      continue;
    const moved = SECRET_DESTINATIONS.find((key) => JSON.stringify(policy[key]) !== JSON.stringify(old[key]));
    if (moved !== undefined) {
      refused.push({
        path: `tokenPolicies.${name}.clientSecret`,
        message: `the client secret must be given again when ${moved === 'issuer' ? 'the issuer' : moved} changes (the saved secret is never sent to a new server)`,
      });
      continue;
    }
    if (sameVariable) continue;
    if (old.clientSecret !== undefined) policy.clientSecret = old.clientSecret;
    else if (old.clientSecretEnv !== undefined) policy.clientSecretEnv = old.clientSecretEnv;
  }
  return refused;
}
