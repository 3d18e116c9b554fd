/**
 * Validation of a gateway configuration: structure first (every bad field reported with its path),
 * then the files it names (policy documents, read relative to the configuration's folder).
 *
 * @module
 */
import { apiKey } from '../record/types.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { applicationIssues, type ClientApplication } from '../authorize/applications.js';
import { issuePath } from '../authorize/rule-issues.js';
import { scopeRuleIssues } from '../authorize/scopes.js';
import { RESERVED_PROVIDERS } from '../url/admin-areas.js';
import { ConfigError } from './errors.js';
import { InvalidOptionError, optionKeys, refuseUnknownKeys } from '../options.js';
import { forwardSettings } from '../token/forward/options.js';
import { TOKEN_POLICY_KEYS, tokenPolicyIssues } from './token-policy.js';
import { compilePathTemplate } from '../url/path-template.js';
import type { ConfigIssue } from './errors.js';
import type {
  GatewayConfig,
  HttpMethod,
  ResolvedApi,
  ResolvedConfig,
  ResolvedOperation,
  ResolvedTokenPolicy,
  TokenForwardConfig,
} from './types.js';

const METHODS: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** A path segment of the gateway URL: no slash, nothing that needs encoding. */
const SEGMENT = /^[A-Za-z0-9._~-]+$/;

type Obj = Record<string, unknown>;

/** The client authentications a file can configure (private_key_jwt needs a key object: code only). */
const FILE_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'bearer'] as const;

/** Collects issues while walking the document. */
class Checker {
  readonly issues: ConfigIssue[] = [];

  fail(at: string, message: string): undefined {
    this.issues.push({ path: at, message });
    return undefined;
  }

  object(value: unknown, at: string): Obj | undefined {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return this.fail(at, 'must be an object');
    return value as Obj;
  }

  /** Reports fields that the schema does not know (a typo must not silently disable a check). */
  known(object: Obj, at: string, names: readonly string[]): void {
    for (const key of Object.keys(object)) {
      if (!names.includes(key)) this.fail(join(at, key), `unknown field (allowed: ${names.join(', ')})`);
    }
  }

  string(object: Obj, key: string, at: string, required: boolean, pattern?: RegExp, patternText?: string): string | undefined {
    const value = object[key];
    const where = join(at, key);
    if (value === undefined) return required ? this.fail(where, 'is required') : undefined;
    if (typeof value !== 'string' || value.trim() === '') return this.fail(where, 'must be a non-empty string');
    if (pattern !== undefined && !pattern.test(value)) return this.fail(where, patternText ?? `must match ${String(pattern)}`);
    return value;
  }

  boolean(object: Obj, key: string, at: string, fallback: boolean): boolean {
    const value = object[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') {
      this.fail(join(at, key), 'must be a boolean');
      return fallback;
    }
    return value;
  }

  positive(object: Obj, key: string, at: string, fallback: number, integer = false): number {
    const value = object[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      this.fail(join(at, key), integer ? 'must be a positive integer' : 'must be a positive number');
      return fallback;
    }
    return value;
  }

  url(object: Obj, key: string, at: string, required: boolean): string | undefined {
    const value = object[key];
    const where = join(at, key);
    if (value === undefined) return required ? this.fail(where, 'is required') : undefined;
    if (typeof value !== 'string' || !isHttpUrl(value)) return this.fail(where, 'must be an http(s) URL');
    return value;
  }
}

function join(at: string, key: string | number): string {
  if (typeof key === 'number') return `${at}[${key}]`;
  return at === '' ? key : `${at}.${key}`;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/**
 * The prefix of every variable `clientSecretEnv` may name. Whoever edits the configuration (an
 * operator of the console) must not be able to name any other variable of the gateway's
 * environment (`GATEWAY_SESSION_SECRET`, `DATABASE_URL`...) and have it sent to an issuer.  @internal
 */
export const CLIENT_SECRET_ENV_PREFIX = 'GATEWAY_SECRET_';
const CLIENT_SECRET_ENV = /^GATEWAY_SECRET_[A-Za-z0-9_]+$/;

/** The client secret: given in the file, or read from the environment variable it names. */
function secret(c: Checker, o: Obj, at: string): string | undefined {
  if (o.clientSecret !== undefined && o.clientSecretEnv !== undefined) {
    return c.fail(join(at, 'clientSecretEnv'), 'give clientSecret or clientSecretEnv, not both');
  }
  if (o.clientSecretEnv === undefined) return c.string(o, 'clientSecret', at, true);
  const variable = c.string(o, 'clientSecretEnv', at, true, CLIENT_SECRET_ENV, `must name an environment variable starting with ${CLIENT_SECRET_ENV_PREFIX} (for example ${CLIENT_SECRET_ENV_PREFIX}IDP)`);
  if (variable === undefined) return undefined;
  const value = process.env[variable];
  // Name the variable, never its value.
  return value === undefined || value === '' ? c.fail(join(at, 'clientSecretEnv'), `environment variable ${variable} is not set`) : value;
}

/**
 * One token policy: its keys and its secret here (they belong to the file), every value by the
 * token policy's own rules.
 */
function checkTokenPolicy(c: Checker, name: string, value: unknown, at: string): ResolvedTokenPolicy | undefined {
  const o = c.object(value, at);
  if (o === undefined) return undefined;
  c.known(o, at, TOKEN_POLICY_KEYS);
  const issuer = c.string(o, 'issuer', at, true);
  const clientId = c.string(o, 'clientId', at, true);
  const clientSecret = secret(c, o, at);
  const { clientSecretEnv: _env, ...entry } = o;
  // A file cannot hold a private key: private_key_jwt is for code.
  const refused = c.issues.length;
  if (o.clientAuthMethod !== undefined && !(FILE_AUTH_METHODS as readonly unknown[]).includes(o.clientAuthMethod)) {
    c.fail(join(at, 'clientAuthMethod'), `must be one of ${FILE_AUTH_METHODS.join(', ')}`);
    delete entry.clientAuthMethod;
  }
  const bearer = o.bearer !== null && typeof o.bearer === 'object' ? (o.bearer as Obj) : undefined;
  if (bearer !== undefined) {
    c.known(bearer, join(at, 'bearer'), ['scope', 'clientAuthMethod']);
    if (bearer.clientAuthMethod !== undefined && bearer.clientAuthMethod !== 'client_secret_basic' && bearer.clientAuthMethod !== 'client_secret_post') {
      c.fail(join(at, 'bearer.clientAuthMethod'), 'must be one of client_secret_basic, client_secret_post');
    }
  }
  if (o.invalidTokenThrottle !== null && typeof o.invalidTokenThrottle === 'object') {
    c.known(o.invalidTokenThrottle as Obj, join(at, 'invalidTokenThrottle'), ['maxRefusals', 'windowSeconds', 'maxAddresses']);
  }
  const issues = tokenPolicyIssues(name, { ...entry, clientSecret });
  for (const issue of issues) c.fail(join(at, issue.path), issue.message);
  if (issuer === undefined || clientId === undefined || clientSecret === undefined || issues.length > 0 || c.issues.length > refused) return undefined;
  // A copy: later edits of the document given wait for a reload, as for the rest of it.
  const known = Object.fromEntries(Object.entries(entry).filter(([key]) => (TOKEN_POLICY_KEYS as readonly string[]).includes(key)));
  return { ...structuredClone(known), name, issuer, clientId, clientSecret, cacheTtlSeconds: (o.cacheTtlSeconds as number | undefined) ?? 300, timeoutMs: (o.timeoutMs as number | undefined) ?? 5000 };
}

/** Token forwarding of an API: its keys here, the mode and the original token by `forwardTokenHeaders`'s rules. */
function checkTokenForward(c: Checker, value: unknown, at: string): TokenForwardConfig {
  if (value === undefined || value === false) return { enabled: false };
  if (value === true) return { enabled: true, mode: 'headers', originalToken: 'none' };
  const o = c.object(value, at);
  if (o === undefined) return { enabled: false };
  c.known(o, at, ['enabled', 'mode', 'originalToken']);
  const enabled = c.boolean(o, 'enabled', at, true);
  if (o.mode === 'jws') {
    c.fail(join(at, 'mode'), 'jws needs a signing key, which a JSON file cannot hold: use forwardTokenHeaders in code');
    return { enabled: false };
  }
  const forward = { mode: (o.mode ?? 'headers') as 'headers' | 'json', originalToken: (o.originalToken ?? 'none') as NonNullable<TokenForwardConfig['originalToken']> };
  try {
    forwardSettings(forward);
  } catch (error) {
    if (!(error instanceof InvalidOptionError)) throw error;
    c.fail(join(at, error.option.replace(/^[^:]*: options\.?/, '')), error.message.slice(error.option.length + 1));
    return { enabled: false };
  }
  const { originalToken } = forward;
  return { enabled, mode: forward.mode, originalToken: typeof originalToken === 'object' ? { header: originalToken.header } : originalToken };
}

/** `requiredScopes` and `requiredClaims` of an API or operation, checked by the rules `requireScopes` applies. */
function scopeRules(c: Checker, o: Obj, at: string): { requiredScopes?: string[]; requiredClaims?: Record<string, string[]> } {
  const issues = scopeRuleIssues(o);
  for (const issue of issues) c.fail(issuePath(at, issue.path), issue.message);
  if (issues.length > 0) return {};
  return {
    ...(o.requiredScopes === undefined ? {} : { requiredScopes: [...(o.requiredScopes as string[])] }),
    ...(o.requiredClaims === undefined ? {} : { requiredClaims: { ...(o.requiredClaims as Record<string, string[]>) } }),
  };
}

/** The structural part of an API, before its files are read. */
type CheckedApi = Omit<ResolvedApi, 'authorization'> & {
  authorization: { mode: 'none' } | { mode: 'xacml-Policy'; policy: string; references: string[] };
};

function checkBackend(c: Checker, value: unknown, at: string): ResolvedApi['backend'] | undefined {
  if (value === undefined) return c.fail(at, 'is required');
  const b = c.object(value, at);
  if (b === undefined) return undefined;
  c.known(b, at, ['url', 'timeoutMs']);
  const url = c.url(b, 'url', at, true);
  const timeoutMs = c.positive(b, 'timeoutMs', at, 30_000);
  return url === undefined ? undefined : { url, timeoutMs };
}

/** The operations, and the paths of those with scope or claim rules of their own. */
function checkOperations(c: Checker, value: unknown, at: string): { operations: ResolvedOperation[] | undefined; withRules: string[] } {
  const withRules: string[] = [];
  if (value === undefined) return { operations: undefined, withRules };
  if (!Array.isArray(value) || value.length === 0) {
    c.fail(at, 'must be a non-empty array');
    return { operations: undefined, withRules };
  }
  const operations: ResolvedOperation[] = [];
  value.forEach((op: unknown, i: number) => {
    const opAt = join(at, i);
    const p = c.object(op, opAt);
    if (p === undefined) return;
    c.known(p, opAt, ['name', 'method', 'path', 'requiredScopes', 'requiredClaims']);
    const rules = scopeRules(c, p, opAt);
    if (rules.requiredScopes !== undefined || rules.requiredClaims !== undefined) withRules.push(opAt);
    const name = c.string(p, 'name', opAt, true);
    const method = c.string(p, 'method', opAt, true);
    if (method !== undefined && !METHODS.includes(method as HttpMethod)) c.fail(join(opAt, 'method'), `must be one of ${METHODS.join(', ')}`);
    const template = c.string(p, 'path', opAt, true, /^\/[^?#\s]*$/, 'must be a path starting with "/" (no query), "{name}" for a segment');
    if (name !== undefined && method !== undefined && template !== undefined) {
      operations.push({ name, method: method as HttpMethod, path: template, pattern: compilePathTemplate(template), ...rules });
    }
  });
  return { operations, withRules };
}

/** Token management of an API (spec 2.1). */
function checkTokenManagement(c: Checker, value: unknown, at: string, policies: ReadonlySet<string>): ResolvedApi['tokenManagement'] {
  if (value === undefined) return { enabled: false };
  const t = c.object(value, at);
  if (t === undefined) return { enabled: false };
  c.known(t, at, ['enabled', 'policy', 'jwtValidation', 'introspection', 'userInfo', 'tokenForward']);
  if (t.enabled === undefined) c.fail(join(at, 'enabled'), 'is required');
  const enabled = c.boolean(t, 'enabled', at, false);
  const policy = c.string(t, 'policy', at, enabled);
  if (policy !== undefined && !policies.has(policy)) c.fail(join(at, 'policy'), `names no token policy (defined: ${[...policies].join(', ') || 'none'})`);
  const jwtValidation = c.boolean(t, 'jwtValidation', at, false);
  const introspection = c.boolean(t, 'introspection', at, true);
  const userInfo = c.boolean(t, 'userInfo', at, false);
  const tokenForward = checkTokenForward(c, t.tokenForward, join(at, 'tokenForward'));
  if (enabled && !jwtValidation && !introspection) c.fail(at, 'an enabled token management needs introspection or jwtValidation');
  return enabled && policy !== undefined ? { enabled, policy, jwtValidation, introspection, userInfo, tokenForward } : { enabled: false };
}

/** Authorization of an API (spec 2.2); its policy files are read later. */
function checkAuthorization(c: Checker, value: unknown, at: string, tokenManagement: boolean): CheckedApi['authorization'] {
  if (value === undefined) return { mode: 'none' };
  const a = c.object(value, at);
  if (a === undefined) return { mode: 'none' };
  if (a.mode === 'none') {
    c.known(a, at, ['mode']);
    return { mode: 'none' };
  }
  if (a.mode !== 'xacml-Policy') {
    c.fail(join(at, 'mode'), 'must be "none" or "xacml-Policy"');
    return { mode: 'none' };
  }
  c.known(a, at, ['mode', 'policy', 'references']);
  const policy = c.string(a, 'policy', at, true);
  const references: string[] = [];
  if (a.references !== undefined) {
    if (!Array.isArray(a.references) || a.references.some((r) => typeof r !== 'string' || r === '')) c.fail(join(at, 'references'), 'must be an array of file paths');
    else references.push(...(a.references as string[]));
  }
  if (!tokenManagement) c.fail(join(at, 'mode'), 'xacml-Policy needs token management enabled (the policy decides on token data)');
  return policy === undefined ? { mode: 'none' } : { mode: 'xacml-Policy', policy, references };
}

/** Default most bytes of a recorded body. */
const DEFAULT_MAX_BODY_BYTES = 4096;
/** Largest `maxBodyBytes`: a record stays a record, not a copy of the traffic. */
const MAX_BODY_BYTES = 1_048_576;

/** Message recording of an API (spec 2.3). */
function checkRecording(c: Checker, value: unknown, at: string): ResolvedApi['recording'] {
  const none = { incomingHeaders: false, outgoingHeaders: false, requestBody: false, responseBody: false, maxBodyBytes: DEFAULT_MAX_BODY_BYTES, xacmlRequests: 'denied' as const };
  if (value === undefined) return none;
  const r = c.object(value, at);
  if (r === undefined) return none;
  c.known(r, at, ['incomingHeaders', 'outgoingHeaders', 'requestBody', 'responseBody', 'maxBodyBytes', 'xacmlRequests']);
  const xacmlRequests = r.xacmlRequests ?? 'denied';
  if (xacmlRequests !== 'denied' && xacmlRequests !== 'all') c.fail(join(at, 'xacmlRequests'), 'must be one of denied, all');
  const maxBodyBytes = c.positive(r, 'maxBodyBytes', at, DEFAULT_MAX_BODY_BYTES, true);
  if (maxBodyBytes > MAX_BODY_BYTES) c.fail(join(at, 'maxBodyBytes'), `must be at most ${MAX_BODY_BYTES}`);
  return {
    incomingHeaders: c.boolean(r, 'incomingHeaders', at, false),
    outgoingHeaders: c.boolean(r, 'outgoingHeaders', at, false),
    requestBody: c.boolean(r, 'requestBody', at, false),
    responseBody: c.boolean(r, 'responseBody', at, false),
    maxBodyBytes,
    xacmlRequests: xacmlRequests === 'all' ? 'all' : 'denied',
  };
}

/** One API: its identity and backend, then the sections of spec 2.1-2.3. */
function checkApi(c: Checker, value: unknown, at: string, policies: ReadonlySet<string>): CheckedApi | undefined {
  const o = c.object(value, at);
  if (o === undefined) return undefined;
  c.known(o, at, ['provider', 'name', 'version', 'backend', 'operations', 'tokenManagement', 'authorization', 'recording', 'requiredScopes', 'requiredClaims']);
  const rules = scopeRules(c, o, at);
  const segment = 'must be a non-empty string of letters, digits, ".", "_", "~" or "-"';
  const provider = c.string(o, 'provider', at, true, SEGMENT, segment);
  const name = c.string(o, 'name', at, true, SEGMENT, segment);
  if (provider !== undefined && RESERVED_PROVIDERS.has(provider)) c.fail(join(at, 'provider'), `"${provider}" is reserved for the gateway's own routes`);
  let version: number | undefined;
  if (o.version === undefined) c.fail(join(at, 'version'), 'is required');
  else version = c.positive(o, 'version', at, Number.NaN, true);
  const backend = checkBackend(c, o.backend, join(at, 'backend'));
  const { operations, withRules } = checkOperations(c, o.operations, join(at, 'operations'));
  const tokenManagement = checkTokenManagement(c, o.tokenManagement, join(at, 'tokenManagement'), policies);
  const authorization = checkAuthorization(c, o.authorization, join(at, 'authorization'), tokenManagement.enabled);
  const recording = checkRecording(c, o.recording, join(at, 'recording'));
  if (provider === undefined || name === undefined || version === undefined || Number.isNaN(version) || backend === undefined) return undefined;
  // Scope and claim rules read the validated token: without token management there is none.
  if (!tokenManagement.enabled) {
    if (rules.requiredScopes !== undefined) c.fail(join(at, 'requiredScopes'), 'needs token management enabled (the rules read the validated token)');
    if (rules.requiredClaims !== undefined) c.fail(join(at, 'requiredClaims'), 'needs token management enabled (the rules read the validated token)');
    for (const opAt of withRules) c.fail(opAt, 'requiredScopes/requiredClaims need token management enabled (the rules read the validated token)');
  }
  const { requiredScopes = [], requiredClaims = {} } = rules;
  return { provider, name, version, backend, operations, tokenManagement, authorization, recording, requiredScopes, requiredClaims };
}

/**
 * Checks the structure of a configuration document and applies defaults. Throws a
 * {@link ConfigError} naming every bad field. Does not read files: see {@link resolveConfig}.
 */
export function checkConfig(
  input: unknown,
  source?: string,
): { tokenPolicies: Record<string, ResolvedTokenPolicy>; apis: CheckedApi[]; applications: Record<string, ClientApplication> } {
  const c = new Checker();
  const root = c.object(input, '');
  const tokenPolicies: Record<string, ResolvedTokenPolicy> = {};
  const apis: CheckedApi[] = [];
  let applications: Record<string, ClientApplication> = {};
  if (root !== undefined) {
    c.known(root, '', ['$schema', 'tokenPolicies', 'apis', 'applications']);
    if (root.applications !== undefined) {
      const issues = applicationIssues(root.applications);
      for (const issue of issues) c.fail(issuePath('applications', issue.path), issue.message);
      // A copy: later edits of the document given wait for a reload, as for the rest of it.
      if (issues.length === 0) {
        applications = Object.fromEntries(
          Object.entries(root.applications as Record<string, ClientApplication>).map(([id, a]) => [id, { ...a, ...(a.roles === undefined ? {} : { roles: [...a.roles] }) }]),
        );
      }
    }
    if (root.tokenPolicies !== undefined) {
      const tp = c.object(root.tokenPolicies, 'tokenPolicies');
      for (const [name, value] of Object.entries(tp ?? {})) {
        const policy = checkTokenPolicy(c, name, value, join('tokenPolicies', name));
        if (policy !== undefined) tokenPolicies[name] = policy;
      }
    }
    const policyNames = new Set(Object.keys(root.tokenPolicies !== null && typeof root.tokenPolicies === 'object' ? root.tokenPolicies : {}));
    if (!Array.isArray(root.apis)) c.fail('apis', root.apis === undefined ? 'is required' : 'must be an array');
    else {
      const seen = new Map<string, number>();
      root.apis.forEach((value: unknown, i: number) => {
        const api = checkApi(c, value, join('apis', i), policyNames);
        if (api === undefined) return;
        const key = apiKey(api);
        const first = seen.get(key);
        if (first !== undefined) c.fail(join('apis', i), `duplicates apis[${first}] (${key})`);
        else seen.set(key, i);
        apis.push(api);
      });
    }
  }
  if (c.issues.length > 0) throw new ConfigError(c.issues, source);
  return { tokenPolicies, apis, applications };
}

/** Options of {@link resolveConfig}. */
export interface ResolveConfigOptions {
  /** Folder that relative file paths (policies) resolve from. Default: the working directory. */
  baseDir?: string;
  /** Names the configuration's origin in errors (a file path, `object`, `loader`). */
  source?: string;
  /**
   * The policy texts by their path in the document, for a source that keeps them itself (a
   * database): read from here instead of files, and a path missing here is an error.
   */
  policies?: Readonly<Record<string, string>>;
}

const RESOLVE_CONFIG_KEYS = optionKeys<ResolveConfigOptions>({ baseDir: true, source: true, policies: true });

/**
 * Validates a configuration document and reads the files it names (XACML policies), giving the
 * form the gateway runs on. Throws a {@link ConfigError} naming every bad field, for example
 * `apis[0].backend.url: must be an http(s) URL` or
 * `apis[0].authorization.policy: cannot read /etc/gw/policies/petstore.xml (ENOENT)`.
 */
export async function resolveConfig(input: GatewayConfig | unknown, options: ResolveConfigOptions = {}): Promise<ResolvedConfig> {
  refuseUnknownKeys('resolveConfig: options', options, RESOLVE_CONFIG_KEYS);
  const { tokenPolicies, apis, applications } = checkConfig(input, options.source);
  const baseDir = options.baseDir ?? process.cwd();
  const issues: ConfigIssue[] = [];
  const { policies } = options;
  const read = async (file: string, at: string): Promise<{ file: string; text: string } | undefined> => {
    if (policies !== undefined) {
      if (Object.hasOwn(policies, file) && typeof policies[file] === 'string') return { file, text: policies[file] };
      issues.push({ path: at, message: `${file} is not in ${options.source ?? 'the configuration source'}` });
      return undefined;
    }
    const absolute = path.resolve(baseDir, file);
    try {
      return { file: absolute, text: await readFile(absolute, 'utf8') };
    } catch (err) {
      issues.push({ path: at, message: `cannot read ${absolute} (${(err as { code?: string }).code ?? String(err)})` });
      return undefined;
    }
  };
  const resolved = await Promise.all(
    apis.map(async (api, i): Promise<ResolvedApi> => {
      const { authorization } = api;
      if (authorization.mode === 'none') return { ...api, authorization };
      const at = `apis[${i}].authorization`;
      const policy = await read(authorization.policy, `${at}.policy`);
      const references = await Promise.all(authorization.references.map((r, j) => read(r, `${at}.references[${j}]`)));
      return {
        ...api,
        authorization: {
          mode: 'xacml-Policy',
          policyFile: policy?.file ?? '',
          policyXml: policy?.text ?? '',
          referencesXml: references.map((r) => r?.text ?? ''),
        },
      };
    }),
  );
  if (issues.length > 0) throw new ConfigError(issues, options.source);
  return { tokenPolicies, apis: resolved, applications };
}
