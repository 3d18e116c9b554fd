/**
 * Validation of a gateway configuration: the schema first (`schema.ts`: every bad field with its
 * path, unknown keys with the key they may mean), then the rules a schema cannot say (beside it
 * here: the secret's source, names that refer to each other, reserved providers, duplicates, URLs,
 * the token policy's own rules), then the files it names (policy documents, read relative to the
 * configuration's folder).
 *
 * @module
 */
import { apiKey } from '../record/types.js';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { applicationIssues, type ClientApplication } from '../authorize/applications.js';
import { issuePath, memberPath, type RuleIssue } from '../issues.js';
import { scopeRuleIssues } from '../authorize/scopes.js';
import { stepUpOperationIssues, stepUpRuleIssues } from '../authorize/step-up.js';
import { RESERVED_PROVIDERS } from '../admin/areas.js';
import { ConfigError } from './errors.js';
import { optionKeys, refuseUnknownKeys } from '../options.js';
import { mergeIssues, schemaIssues } from '../schema.js';
import { DEFAULT_MAX_BODY_BYTES } from '../record/schema.js';
import { CLIENT_SECRET_ENV_PREFIX, TOKEN_POLICY_KEYS, TokenPolicySchema } from '../token/policy-schema.js';
import { GatewayConfigSchema, type GatewayConfigDocument } from './schema.js';
import { tokenPolicyIssues } from './token-policy.js';
import { compilePathTemplate } from '../url/template.js';
import type { ConfigIssue } from './errors.js';
import { resolvedTrafficControl, resolvedTrafficPolicies, trafficRules } from './traffic.js';
import { listenerRules } from './listener.js';
import type { GatewayConfig, ResolvedApi, ResolvedConfig, ResolvedTokenPolicy, TokenForwardConfig } from './types.js';

export { CLIENT_SECRET_ENV_PREFIX };

type Obj = Record<string, unknown>;
type ApiDocument = GatewayConfigDocument['apis'][number];

function isObj(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** The members and items a path goes through (`apis[0].requiredClaims["a b"]` → apis, 0, requiredClaims, a b). */
function segmentsOf(path: string): Array<string | number> {
  const segments: Array<string | number> = [];
  for (const m of path.matchAll(/\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    segments.push(m[1] ?? (m[2] === undefined ? (JSON.parse(m[3]!) as string) : Number(m[2])));
  }
  return segments;
}

/** Where a path is in the document, as the positions of its members: issues are reported in document order. */
function positionOf(document: unknown, path: string): number[] {
  const position: number[] = [];
  let value = document;
  for (const segment of segmentsOf(path)) {
    if (typeof segment === 'number' || !isObj(value)) position.push(typeof segment === 'number' ? segment : 0);
    else {
      const index = Object.keys(value).indexOf(segment);
      // A missing member (a required one) comes after those given.
      position.push(index === -1 ? Object.keys(value).length : index);
    }
    value = isObj(value) || Array.isArray(value) ? (value as Record<string | number, unknown>)[segment] : undefined;
  }
  return position;
}

function inDocumentOrder(document: unknown, issues: ConfigIssue[]): ConfigIssue[] {
  const positions = new Map(issues.map((issue) => [issue, positionOf(document, issue.path)]));
  const compare = (a: number[], b: number[]): number => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return a.length - b.length;
  };
  return [...issues].sort((a, b) => compare(positions.get(a)!, positions.get(b)!));
}

/** The client secret of a token policy: given in the file, or read from the environment variable it names. */
function secretOf(policy: Obj, at: string, issues: RuleIssue[]): string | undefined {
  if (policy.clientSecret !== undefined && policy.clientSecretEnv !== undefined) {
    issues.push({ path: `${at}.clientSecretEnv`, message: 'give clientSecret or clientSecretEnv, not both' });
    return undefined;
  }
  if (policy.clientSecretEnv === undefined) {
    if (policy.clientSecret === undefined) issues.push({ path: `${at}.clientSecret`, message: 'is required' });
    return typeof policy.clientSecret === 'string' ? policy.clientSecret : undefined;
  }
  const variable = policy.clientSecretEnv;
  if (typeof variable !== 'string' || !variable.startsWith(CLIENT_SECRET_ENV_PREFIX)) return undefined;
  const value = process.env[variable];
  // Name the variable, never its value.
  if (value === undefined || value === '')
    issues.push({ path: `${at}.clientSecretEnv`, message: `environment variable ${variable} is not set` });
  return value;
}

/** The rules of the token policies beside their schema: the secret's source, then the token policy's own rules. */
function tokenPolicyRules(tokenPolicies: unknown, issues: RuleIssue[]): Map<string, string> {
  const secrets = new Map<string, string>();
  if (!isObj(tokenPolicies)) return secrets;
  for (const [name, policy] of Object.entries(tokenPolicies)) {
    if (!isObj(policy)) continue;
    const at = memberPath('tokenPolicies', name);
    const secret = secretOf(policy, at, issues);
    if (secret !== undefined) secrets.set(name, secret);
    const { clientSecretEnv: _env, ...entry } = policy;
    for (const issue of tokenPolicyIssues(name, { ...entry, clientSecret: secret }))
      issues.push({ path: issuePath(at, issue.path), message: issue.message });
  }
  return secrets;
}

const NEEDS_TOKEN = 'needs token management enabled (the rules read the validated token)';

/** The rules of one API beside its schema. */
function apiRules(api: Obj, at: string, policies: ReadonlySet<string>, issues: RuleIssue[]): void {
  for (const issue of [...scopeRuleIssues(api), ...stepUpRuleIssues(api)])
    issues.push({ path: issuePath(at, issue.path), message: issue.message });
  if (typeof api.provider === 'string' && RESERVED_PROVIDERS.has(api.provider))
    issues.push({ path: `${at}.provider`, message: `"${api.provider}" is reserved for the gateway's own routes` });
  // RFC 8615's well-known URIs (the protected resource metadata is answered there).
  if (api.provider === '.well-known')
    issues.push({ path: `${at}.provider`, message: '".well-known" is reserved for well-known URIs (RFC 8615)' });
  if (isObj(api.backend) && typeof api.backend.url === 'string' && !isHttpUrl(api.backend.url))
    issues.push({ path: `${at}.backend.url`, message: 'must be an http(s) URL' });
  const tm = isObj(api.tokenManagement) ? api.tokenManagement : { enabled: false };
  const enabled = tm.enabled === true;
  if (enabled) {
    if (tm.policy === undefined) issues.push({ path: `${at}.tokenManagement.policy`, message: 'is required' });
    if (tm.jwtValidation !== true && tm.introspection === false)
      issues.push({ path: `${at}.tokenManagement`, message: 'an enabled token management needs introspection or jwtValidation' });
  }
  if (typeof tm.policy === 'string' && !policies.has(tm.policy)) {
    issues.push({
      path: `${at}.tokenManagement.policy`,
      message: `names no token policy (defined: ${[...policies].join(', ') || 'none'})`,
    });
  }
  if (isObj(api.authorization) && api.authorization.mode === 'xacml-Policy' && !enabled) {
    issues.push({
      path: `${at}.authorization.mode`,
      message: 'xacml-Policy needs token management enabled (the policy decides on token data)',
    });
  }
  const operations = Array.isArray(api.operations) ? api.operations : [];
  for (const issue of stepUpOperationIssues(operations)) issues.push({ path: issuePath(at, issue.path), message: issue.message });
  operations.forEach((op: unknown, i) => {
    if (!isObj(op)) return;
    const opAt = `${at}.operations[${i}]`;
    for (const issue of [...scopeRuleIssues(op), ...stepUpRuleIssues(op)])
      issues.push({ path: issuePath(opAt, issue.path), message: issue.message });
    // Scope, claim and step-up rules read the validated token: without token management there is none.
    if (!enabled && (op.requiredScopes !== undefined || op.scopeAlternatives !== undefined || op.requiredClaims !== undefined))
      issues.push({ path: opAt, message: `requiredScopes/scopeAlternatives/requiredClaims ${NEEDS_TOKEN.replace('needs', 'need')}` });
    if (!enabled && (op.requiredAcrValues !== undefined || op.maxAuthenticationAge !== undefined))
      issues.push({ path: opAt, message: `requiredAcrValues/maxAuthenticationAge ${NEEDS_TOKEN.replace('needs', 'need')}` });
  });
  if (!enabled) {
    for (const key of ['requiredScopes', 'scopeAlternatives', 'requiredClaims', 'requiredAcrValues', 'maxAuthenticationAge'] as const)
      if (api[key] !== undefined) issues.push({ path: `${at}.${key}`, message: NEEDS_TOKEN });
    if (api.protectedResourceMetadata === true)
      issues.push({
        path: `${at}.protectedResourceMetadata`,
        message: 'needs token management enabled (the metadata names its authorization server)',
      });
  }
}

/** Every issue of a configuration document: its schema's, then the rules beside it. */
function documentIssues(input: unknown): { issues: ConfigIssue[]; secrets: Map<string, string> } {
  const fromSchema = schemaIssues(GatewayConfigSchema, input);
  const fromRules: RuleIssue[] = [];
  if (!isObj(input)) return { issues: fromSchema, secrets: new Map() };
  if (input.applications !== undefined) {
    for (const issue of applicationIssues(input.applications))
      fromRules.push({ path: issuePath('applications', issue.path), message: issue.message });
  }
  const secrets = tokenPolicyRules(input.tokenPolicies, fromRules);
  const policyNames = new Set(Object.keys(isObj(input.tokenPolicies) ? input.tokenPolicies : {}));
  const seen = new Map<string, number>();
  (Array.isArray(input.apis) ? input.apis : []).forEach((api: unknown, i) => {
    if (!isObj(api)) return;
    apiRules(api, `apis[${i}]`, policyNames, fromRules);
    if (typeof api.provider !== 'string' || typeof api.name !== 'string' || typeof api.version !== 'number') return;
    const key = apiKey({ provider: api.provider, name: api.name, version: api.version });
    const first = seen.get(key);
    if (first !== undefined) fromRules.push({ path: `apis[${i}]`, message: `duplicates apis[${first}] (${key})` });
    else seen.set(key, i);
  });
  trafficRules(input, fromRules);
  listenerRules(input, fromRules);
  return { issues: inDocumentOrder(input, mergeIssues(fromSchema, fromRules)), secrets };
}

/** Token forwarding of a valid API, defaults applied. */
function tokenForwardOf(value: NonNullable<ApiDocument['tokenManagement']>['tokenForward']): TokenForwardConfig {
  if (value === undefined || value === false) return { enabled: false };
  if (value === true) return { enabled: true, mode: 'headers', originalToken: 'none' };
  const { originalToken = 'none' } = value;
  return {
    enabled: value.enabled ?? true,
    mode: value.mode ?? 'headers',
    originalToken: typeof originalToken === 'object' ? { header: originalToken.header } : originalToken,
  };
}

/** The structural part of an API, before its files are read. */
type CheckedApi = Omit<ResolvedApi, 'authorization'> & {
  authorization: { mode: 'none' } | { mode: 'xacml-Policy'; policy: string; references: string[] };
};

/** A valid API with its defaults applied (a copy: later edits of the document wait for a reload). */
function checkedApi(api: ApiDocument): CheckedApi {
  const tm = api.tokenManagement;
  const tokenManagement: ResolvedApi['tokenManagement'] =
    tm?.enabled === true && tm.policy !== undefined
      ? {
          enabled: true,
          policy: tm.policy,
          jwtValidation: tm.jwtValidation ?? false,
          introspection: tm.introspection ?? true,
          userInfo: tm.userInfo ?? false,
          tokenForward: tokenForwardOf(tm.tokenForward),
        }
      : { enabled: false };
  const auth = api.authorization;
  const r = api.recording ?? {};
  return {
    provider: api.provider,
    name: api.name,
    version: api.version,
    backend: { url: api.backend.url, timeoutMs: api.backend.timeoutMs ?? 30_000 },
    operations: api.operations?.map(({ requiredScopes, scopeAlternatives, requiredClaims, requiredAcrValues, ...op }) => ({
      ...op,
      pattern: compilePathTemplate(op.path),
      ...(requiredScopes === undefined ? {} : { requiredScopes: [...requiredScopes] }),
      ...(scopeAlternatives === undefined ? {} : { scopeAlternatives: scopeAlternatives.map((way) => [...way]) }),
      ...(requiredClaims === undefined ? {} : { requiredClaims: structuredClone(requiredClaims) }),
      ...(requiredAcrValues === undefined ? {} : { requiredAcrValues: [...requiredAcrValues] }),
    })),
    tokenManagement,
    authorization:
      auth === undefined || auth.mode === 'none'
        ? { mode: 'none' }
        : { mode: 'xacml-Policy', policy: auth.policy, references: [...(auth.references ?? [])] },
    recording: {
      incomingHeaders: r.incomingHeaders ?? false,
      outgoingHeaders: r.outgoingHeaders ?? false,
      requestBody: r.requestBody ?? false,
      responseBody: r.responseBody ?? false,
      maxBodyBytes: r.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      xacmlRequests: r.xacmlRequests ?? 'denied',
    },
    trafficControl: { policies: resolvedTrafficPolicies(api.trafficControl?.policies) },
    protectedResourceMetadata: api.protectedResourceMetadata ?? false,
    requiredScopes: [...(api.requiredScopes ?? [])],
    ...(api.scopeAlternatives === undefined ? {} : { scopeAlternatives: api.scopeAlternatives.map((way) => [...way]) }),
    requiredClaims: structuredClone(api.requiredClaims ?? {}),
    requiredAcrValues: api.requiredAcrValues === undefined ? undefined : [...api.requiredAcrValues],
    maxAuthenticationAge: api.maxAuthenticationAge,
  };
}

/**
 * Checks a configuration document and applies defaults. Throws a {@link ConfigError} naming every
 * bad field. Does not read files: see {@link resolveConfig}.
 */
export function checkConfig(
  input: unknown,
  source?: string,
): {
  tokenPolicies: Record<string, ResolvedTokenPolicy>;
  apis: CheckedApi[];
  applications: Record<string, ClientApplication>;
  trafficControl: ResolvedConfig['trafficControl'];
  listener: ResolvedConfig['listener'];
} {
  const { issues, secrets } = documentIssues(input);
  if (issues.length > 0) throw new ConfigError(issues, source);
  const document = input as GatewayConfigDocument;
  const tokenPolicies: Record<string, ResolvedTokenPolicy> = {};
  for (const [name, policy] of Object.entries(document.tokenPolicies ?? {})) {
    const known = Object.fromEntries(
      Object.entries(policy).filter(([key]) => key !== 'clientSecretEnv' && (TOKEN_POLICY_KEYS as readonly string[]).includes(key)),
    );
    tokenPolicies[name] = {
      ...structuredClone(known),
      name,
      issuer: policy.issuer,
      clientId: policy.clientId,
      clientSecret: secrets.get(name)!,
      cacheTtlSeconds: policy.cacheTtlSeconds ?? (TokenPolicySchema.properties.cacheTtlSeconds.default as number),
      timeoutMs: policy.timeoutMs ?? (TokenPolicySchema.properties.timeoutMs.default as number),
    };
  }
  const applications = Object.fromEntries(
    Object.entries(document.applications ?? {}).map(([id, a]) => [id, { ...a, ...(a.roles === undefined ? {} : { roles: [...a.roles] }) }]),
  );
  return {
    tokenPolicies,
    apis: document.apis.map(checkedApi),
    applications,
    trafficControl: resolvedTrafficControl(document.trafficControl),
    listener: {
      trustProxy: document.trustProxy === undefined ? undefined : structuredClone(document.trustProxy),
      publicBaseUrl: document.publicBaseUrl?.replace(/\/$/, ''),
      clientCertificateHeader: document.clientCertificateHeader,
    },
  };
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
  const { tokenPolicies, apis, applications, trafficControl, listener } = checkConfig(input, options.source);
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
  return { tokenPolicies, apis: resolved, applications, trafficControl, listener };
}
