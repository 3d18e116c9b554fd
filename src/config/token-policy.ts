/**
 * A token policy of the configuration file and the options of `createTokenPolicy` it stands for.
 * The file's schema is made of the options' (`token/policy-schema.ts`), under the same keys but
 * for the flattened ones ({@link FLATTENED_FILE_KEYS}); its rules are the token policy's own
 * (`token/policy-settings.ts`), so a setting is valid in the file exactly when it is valid in code.
 *
 * @module
 */
import type { RuleIssue } from '../issues.js';
import { tokenPolicyRuleIssues } from '../token/policy-settings.js';
import type { TokenPolicyOptions } from '../token/policy-options.js';
import { FILE_AUTH_METHODS, FLATTENED_FILE_KEYS, TokenPolicyOptionsSchema } from '../token/policy-schema.js';
import type { TokenPolicyConfig } from './types.js';

/** The API's validation switches, which the file sets per API rather than per token policy. */
export interface TokenPolicySwitches {
  introspection: boolean;
  jwtValidation: boolean;
  userInfo: boolean;
}

type FlattenedKey = keyof typeof FLATTENED_FILE_KEYS;

function isFlattened(key: string): key is FlattenedKey {
  return Object.hasOwn(FLATTENED_FILE_KEYS, key);
}

/**
 * The options of `createTokenPolicy` for a token policy of the file (values passed as they are:
 * the token policy checks them). The cache is on, with its defaults, whatever the file says;
 * `negativeCacheTtlSeconds: 0` turns the refusal cache off.
 */
export function tokenPolicyOptionsOf(
  name: string,
  entry: Partial<Record<keyof TokenPolicyConfig, unknown>> & { clientSecret?: unknown },
  switches: TokenPolicySwitches = { introspection: true, jwtValidation: false, userInfo: false },
): TokenPolicyOptions {
  const options: Record<string, unknown> = { name, ...switches, cache: {} };
  for (const [key, value] of Object.entries(entry)) {
    if (value === undefined) continue;
    if (isFlattened(key)) {
      const [section, member] = FLATTENED_FILE_KEYS[key];
      options[section] = { ...(options[section] as object | undefined), [member]: value };
    } else if (Object.hasOwn(TokenPolicyOptionsSchema.properties, key)) {
      options[key] = value;
    }
  }
  if (entry.negativeCacheTtlSeconds === 0) options.negativeCache = false;
  return options as unknown as TokenPolicyOptions;
}

/** The file's key of an option path (`cache.ttlSeconds` → `cacheTtlSeconds`). */
function fileKeyOf(optionPath: string): string {
  const flattened = Object.entries(FLATTENED_FILE_KEYS).find(([, [section, member]]) => optionPath === `${section}.${member}`);
  return flattened?.[0] ?? optionPath;
}

/**
 * The problems of a token policy of the file that its schema cannot see, by the token policy's own
 * rules, with the file's keys as paths (relative to the policy) and in the messages. The schema's
 * problems are the document check's; the secret's are the loader's (a secret it could not give
 * is not asked for again).
 */
export function tokenPolicyIssues(name: string, entry: Readonly<Record<string, unknown>>): RuleIssue[] {
  const candidate: Record<string, unknown> = { ...entry };
  // A file cannot hold a private key: its schema refuses private_key_jwt, the token policy would ask for the key.
  if (!(FILE_AUTH_METHODS as readonly unknown[]).includes(candidate.clientAuthMethod)) delete candidate.clientAuthMethod;
  if (typeof candidate.bearer === 'object' && candidate.bearer !== null && 'clientAuthMethod' in candidate.bearer) {
    const { clientAuthMethod, ...rest } = candidate.bearer as Record<string, unknown>;
    if (clientAuthMethod === 'private_key_jwt') candidate.bearer = rest;
  }
  if (candidate.clientSecret === undefined) candidate.clientSecret = 'reported by the loader';
  return tokenPolicyRuleIssues(tokenPolicyOptionsOf(name, candidate)).map(({ path, message }) => ({
    path: fileKeyOf(path),
    message: message.replace(/options\.([A-Za-z.]+)/g, (_, option: string) => fileKeyOf(option)),
  }));
}
