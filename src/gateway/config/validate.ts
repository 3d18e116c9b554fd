/**
 * Validation of a gateway configuration: structure first (every bad field reported with its path),
 * then the files it names (policy documents, read relative to the configuration's folder).
 *
 * @module
 */
import { apiKey } from '../../record/types.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { applicationIssues, type ClientApplication } from '../../authorize/applications.js';
import { issuePath } from '../../authorize/rule-issues.js';
import { scopeRuleIssues } from '../../authorize/scopes.js';
import { ConfigError } from './errors.js';
import { InvalidOptionError } from '../../options.js';
import { forwardSettings } from '../../token/forward/options.js';
import { TOKEN_POLICY_KEYS, tokenPolicyIssues } from './token-policy.js';
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
/** First path segments taken by the gateway's admin and console routes. */
const RESERVED = new Set(['admin', 'console']);

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
 * Compiles `/pet/{petId}` into an anchored regular expression over the resource path. A parameter
 * never matches a dot segment (`.`, `..`), even where the canonical path would let one through.
 */
function compileTemplate(template: string): RegExp {
  const parts = template.split(/(\{[^}/]+\})/).map((part) =>
    part.startsWith('{') && part.endsWith('}') ? '(?!\\.\\.?(?:/|$))[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
  );
  return new RegExp(`^${parts.join('')}/?$`);
}

/** The client secret: given in the file, or read from the environment variable it names. */
function secret(c: Checker, o: Obj, at: string): string | undefined {
  if (o.clientSecret !== undefined && o.clientSecretEnv !== undefined) {
    return c.fail(join(at, 'clientSecretEnv'), 'give clientSecret or clientSecretEnv, not both');
  }
  if (o.clientSecretEnv === undefined) return c.string(o, 'clientSecret', at, true);
  const variable = c.string(o, 'clientSecretEnv', at, true, /^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
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

function checkApi(c: Checker, value: unknown, at: string, policies: ReadonlySet<string>): CheckedApi | undefined {
  const o = c.object(value, at);
  if (o === undefined) return undefined;
  c.known(o, at, ['provider', 'name', 'version', 'backend', 'operations', 'tokenManagement', 'authorization', 'recording', 'requiredScopes', 'requiredClaims']);
  const rules = scopeRules(c, o, at);
  const segment = 'must be a non-empty string of letters, digits, ".", "_", "~" or "-"';
  const provider = c.string(o, 'provider', at, true, SEGMENT, segment);
  const name = c.string(o, 'name', at, true, SEGMENT, segment);
  if (provider !== undefined && RESERVED.has(provider)) c.fail(join(at, 'provider'), `"${provider}" is reserved for the gateway's own routes`);
  let version: number | undefined;
  if (o.version === undefined) c.fail(join(at, 'version'), 'is required');
  else version = c.positive(o, 'version', at, Number.NaN, true);

  const backendAt = join(at, 'backend');
  let backend: ResolvedApi['backend'] | undefined;
  if (o.backend === undefined) c.fail(backendAt, 'is required');
  else {
    const b = c.object(o.backend, backendAt);
    if (b !== undefined) {
      c.known(b, backendAt, ['url', 'timeoutMs']);
      const url = c.url(b, 'url', backendAt, true);
      const timeoutMs = c.positive(b, 'timeoutMs', backendAt, 30_000);
      if (url !== undefined) backend = { url, timeoutMs };
    }
  }

  let operations: ResolvedOperation[] | undefined;
  const operationRules: string[] = [];
  if (o.operations !== undefined) {
    const opsAt = join(at, 'operations');
    if (!Array.isArray(o.operations) || o.operations.length === 0) c.fail(opsAt, 'must be a non-empty array');
    else {
      operations = [];
      o.operations.forEach((op: unknown, i: number) => {
        const opAt = join(opsAt, i);
        const p = c.object(op, opAt);
        if (p === undefined) return;
        c.known(p, opAt, ['name', 'method', 'path', 'requiredScopes', 'requiredClaims']);
        const opRules = scopeRules(c, p, opAt);
        if (opRules.requiredScopes !== undefined || opRules.requiredClaims !== undefined) operationRules.push(opAt);
        const opName = c.string(p, 'name', opAt, true);
        const method = c.string(p, 'method', opAt, true);
        if (method !== undefined && !METHODS.includes(method as HttpMethod)) c.fail(join(opAt, 'method'), `must be one of ${METHODS.join(', ')}`);
        const template = c.string(p, 'path', opAt, true, /^\/[^?#\s]*$/, 'must be a path starting with "/" (no query), "{name}" for a segment');
        if (opName !== undefined && method !== undefined && template !== undefined) {
          operations!.push({ name: opName, method: method as HttpMethod, path: template, pattern: compileTemplate(template), ...opRules });
        }
      });
    }
  }

  const tmAt = join(at, 'tokenManagement');
  let tokenManagement: ResolvedApi['tokenManagement'] = { enabled: false };
  if (o.tokenManagement !== undefined) {
    const t = c.object(o.tokenManagement, tmAt);
    if (t !== undefined) {
      c.known(t, tmAt, ['enabled', 'policy', 'jwtValidation', 'introspection', 'userInfo', 'tokenForward']);
      if (t.enabled === undefined) c.fail(join(tmAt, 'enabled'), 'is required');
      const enabled = c.boolean(t, 'enabled', tmAt, false);
      const policy = c.string(t, 'policy', tmAt, enabled);
      if (policy !== undefined && !policies.has(policy)) {
        c.fail(join(tmAt, 'policy'), `names no token policy (defined: ${[...policies].join(', ') || 'none'})`);
      }
      const jwtValidation = c.boolean(t, 'jwtValidation', tmAt, false);
      const introspection = c.boolean(t, 'introspection', tmAt, true);
      const userInfo = c.boolean(t, 'userInfo', tmAt, false);
      const tokenForward = checkTokenForward(c, t.tokenForward, join(tmAt, 'tokenForward'));
      if (enabled && !jwtValidation && !introspection) c.fail(tmAt, 'an enabled token management needs introspection or jwtValidation');
      if (enabled && policy !== undefined) tokenManagement = { enabled, policy, jwtValidation, introspection, userInfo, tokenForward };
    }
  }

  const azAt = join(at, 'authorization');
  let authorization: CheckedApi['authorization'] = { mode: 'none' };
  if (o.authorization !== undefined) {
    const a = c.object(o.authorization, azAt);
    if (a !== undefined) {
      if (a.mode === 'none') c.known(a, azAt, ['mode']);
      else if (a.mode === 'xacml-Policy') {
        c.known(a, azAt, ['mode', 'policy', 'references']);
        const policy = c.string(a, 'policy', azAt, true);
        const references: string[] = [];
        if (a.references !== undefined) {
          if (!Array.isArray(a.references) || a.references.some((r) => typeof r !== 'string' || r === '')) {
            c.fail(join(azAt, 'references'), 'must be an array of file paths');
          } else references.push(...(a.references as string[]));
        }
        if (!tokenManagement.enabled) c.fail(join(azAt, 'mode'), 'xacml-Policy needs token management enabled (the policy decides on token data)');
        if (policy !== undefined) authorization = { mode: 'xacml-Policy', policy, references };
      } else c.fail(join(azAt, 'mode'), 'must be "none" or "xacml-Policy"');
    }
  }

  const recAt = join(at, 'recording');
  let recording = { outgoingHeaders: false };
  if (o.recording !== undefined) {
    const r = c.object(o.recording, recAt);
    if (r !== undefined) {
      c.known(r, recAt, ['outgoingHeaders']);
      recording = { outgoingHeaders: c.boolean(r, 'outgoingHeaders', recAt, false) };
    }
  }

  if (provider === undefined || name === undefined || version === undefined || Number.isNaN(version) || backend === undefined) return undefined;
  // Scope and claim rules read the validated token: without token management there is none.
  if (!tokenManagement.enabled) {
    if (rules.requiredScopes !== undefined) c.fail(join(at, 'requiredScopes'), 'needs token management enabled (the rules read the validated token)');
    if (rules.requiredClaims !== undefined) c.fail(join(at, 'requiredClaims'), 'needs token management enabled (the rules read the validated token)');
    for (const opAt of operationRules) c.fail(opAt, 'requiredScopes/requiredClaims need token management enabled (the rules read the validated token)');
  }
  return {
    provider,
    name,
    version,
    backend,
    operations,
    tokenManagement,
    authorization,
    recording,
    requiredScopes: rules.requiredScopes ?? [],
    requiredClaims: rules.requiredClaims ?? {},
  };
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
}

/**
 * Validates a configuration document and reads the files it names (XACML policies), giving the
 * form the gateway runs on. Throws a {@link ConfigError} naming every bad field, for example
 * `apis[0].backend.url: must be an http(s) URL` or
 * `apis[0].authorization.policy: cannot read /etc/gw/policies/petstore.xml (ENOENT)`.
 */
export async function resolveConfig(input: GatewayConfig | unknown, options: ResolveConfigOptions = {}): Promise<ResolvedConfig> {
  const { tokenPolicies, apis, applications } = checkConfig(input, options.source);
  const baseDir = options.baseDir ?? process.cwd();
  const issues: ConfigIssue[] = [];
  const read = async (file: string, at: string): Promise<{ file: string; text: string } | undefined> => {
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
