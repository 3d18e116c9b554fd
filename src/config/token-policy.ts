/**
 * A token policy of the configuration file and the options of `createTokenPolicy` it stands for.
 * The file's keys are mapped here, once; their rules are the token policy's own (see
 * `token/policy-settings.ts`), so a setting is valid in the file exactly when it is valid in code.
 *
 * @module
 */
import { InvalidOptionError } from '../options.js';
import { tokenPolicySettings } from '../token/policy-settings.js';
import type { TokenPolicyOptions } from '../token/policy.js';
import type { ConfigIssue } from './errors.js';
import { TOKEN_POLICY_KEYS } from '../token/policy-schema.js';
import type { TokenPolicyConfig } from './types.js';

/** Keys passed to the token policy under the same name. */
const SAME_NAME = [
  'introspectionEndpoint',
  'userinfoEndpoint',
  'jwksUri',
  'tokenEndpoint',
  'clientAuthMethod',
  'bearer',
  'allowInsecureRequests',
  'audience',
  'anyAudience',
  'jwtTypes',
  'maxResponseSize',
  'maxConcurrentCalls',
  'invalidTokenThrottle',
  'staleIfErrorSeconds',
  'timeoutMs',
] as const;

/** Option paths whose key in the file differs. */
const FILE_KEY: Readonly<Record<string, string>> = {
  'cache.ttlSeconds': 'cacheTtlSeconds',
  'cache.maxEntries': 'cacheMaxEntries',
  'cache.maxBytes': 'cacheMaxBytes',
  'negativeCache.ttlSeconds': 'negativeCacheTtlSeconds',
  'negativeCache.maxEntries': 'negativeCacheMaxEntries',
};

/** The API's switches (spec 2.1), which the file sets per API rather than per token policy. */
export interface TokenPolicySwitches {
  introspection: boolean;
  jwtValidation: boolean;
  userInfo: boolean;
}

/**
 * The options of `createTokenPolicy` for a token policy of the file (values passed as they are:
 * the token policy checks them).
 */
export function tokenPolicyOptionsOf(
  name: string,
  entry: Partial<Record<keyof TokenPolicyConfig, unknown>> & { clientSecret?: unknown },
  switches: TokenPolicySwitches = { introspection: true, jwtValidation: false, userInfo: false },
): TokenPolicyOptions {
  const options: Record<string, unknown> = {
    name,
    issuer: entry.issuer,
    clientId: entry.clientId,
    clientSecret: entry.clientSecret,
    ...switches,
  };
  for (const key of SAME_NAME) if (entry[key] !== undefined) options[key] = entry[key];
  options.cache = {
    ...(entry.cacheTtlSeconds === undefined ? {} : { ttlSeconds: entry.cacheTtlSeconds }),
    ...(entry.cacheMaxEntries === undefined ? {} : { maxEntries: entry.cacheMaxEntries }),
    ...(entry.cacheMaxBytes === undefined ? {} : { maxBytes: entry.cacheMaxBytes }),
  };
  // 0 turns the refusal cache off.
  if (entry.negativeCacheTtlSeconds === 0) options.negativeCache = false;
  else if (entry.negativeCacheTtlSeconds !== undefined || entry.negativeCacheMaxEntries !== undefined) {
    options.negativeCache = {
      ...(entry.negativeCacheTtlSeconds === undefined ? {} : { ttlSeconds: entry.negativeCacheTtlSeconds }),
      ...(entry.negativeCacheMaxEntries === undefined ? {} : { maxEntries: entry.negativeCacheMaxEntries }),
    };
  }
  return options as unknown as TokenPolicyOptions;
}

/** The file's key of an option path (`cache.ttlSeconds` → `cacheTtlSeconds`). */
function fileKeyOf(optionPath: string): string {
  return FILE_KEY[optionPath] ?? optionPath;
}

/** Messages of the file's own meaning of a key (0 turns the refusal cache off). */
const FILE_MESSAGE: Readonly<Record<string, string>> = {
  negativeCacheTtlSeconds: 'must be a number of seconds, 0 (off) or more',
};

/** A placeholder that passes the token policy's checks, standing for a value already reported. */
const STAND_IN: Readonly<Record<string, unknown>> = { issuer: 'https://issuer.invalid', clientId: 'client', clientSecret: 'secret' };

/**
 * Every problem of a token policy of the file, by the token policy's own rules, with the file's
 * key as path (relative to the policy). The token policy stops at the first bad option: each one
 * found is set aside (or stood in for, when required) and the check runs again.
 */
export function tokenPolicyIssues(name: string, entry: Readonly<Record<string, unknown>>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const candidate: Record<string, unknown> = { ...entry };
  for (const key of Object.keys(STAND_IN)) if (typeof candidate[key] !== 'string' || candidate[key] === '') candidate[key] = STAND_IN[key];
  for (let round = 0; round <= TOKEN_POLICY_KEYS.length; round++) {
    try {
      tokenPolicySettings(tokenPolicyOptionsOf(name, candidate));
      return issues;
    } catch (error) {
      if (!(error instanceof InvalidOptionError)) throw error;
      const optionPath = error.option.replace(/^[^:]*: options\.?/, '');
      const key = fileKeyOf(optionPath);
      const top = key.split('.')[0]!;
      // An unknown key of a section (bearer, invalidTokenThrottle) is the file's own check's to
      // report: set it aside and check the rest of the section.
      const [section, member] = key.split('.');
      if (error.message.startsWith(`${error.option} is not an option`)) {
        const value = section === undefined ? undefined : candidate[section];
        if (member !== undefined && value !== null && typeof value === 'object' && Object.hasOwn(value, member)) {
          const { [member]: _unknown, ...rest } = value as Record<string, unknown>;
          candidate[section!] = rest;
          continue;
        }
      }
      // The message without its prefix, naming file keys rather than options.
      const message = error.message.slice(error.option.length + 1).replace(/options\.([A-Za-z.]+)/g, (_, path: string) => fileKeyOf(path));
      issues.push({ path: key, message: FILE_MESSAGE[key] ?? message });
      if (top === '' || !(top in candidate) || candidate[top] === STAND_IN[top]) return issues;
      if (top in STAND_IN) candidate[top] = STAND_IN[top];
      else delete candidate[top];
    }
  }
  return issues;
}
