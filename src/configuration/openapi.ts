/**
 * Operations from an OpenAPI 3 document: every path × method becomes an operation named after its
 * `operationId`, its path template kept. The document is parsed (JSON or YAML), refused when it
 * points outside itself (an external `$ref` would make the gateway fetch a URL or read a file),
 * validated against the OpenAPI 3.0/3.1 schema by `@readme/openapi-parser`, and read with its
 * internal references resolved. Nothing is fetched: an upload is all there is.
 *
 * @module
 */
import type { HttpMethod, OperationConfig } from '../config/types.js';
import { OperationOrder } from './operation-order.js';

/** One operation read from the document, and where in it. */
export interface ImportedOperation extends OperationConfig {
  /** Where it is in the document: `paths./pet/{petId}.get`. */
  readonly from: string;
  /**
   * Whether the document says what the operation needs (its own `security`, else the document's):
   * then its scope rule (`requiredScopes` or `scopeAlternatives`, or none when a requirement
   * names no scope) replaces the API's rule of the operation on import; else the API's stays.
   */
  readonly security?: true;
}

/** A problem of an OpenAPI document: where in it, and what. */
export interface OpenApiIssue {
  /** Where: `paths./pet.get.operationId`, `$ref` places, or `''` for the whole document. */
  readonly path: string;
  /** What is wrong. */
  readonly message: string;
}

/** What an OpenAPI document gives: its operations, what was left out and why, or its problems. */
export interface OpenApiImport {
  /** `info.title` and `info.version`, when the document has them. */
  readonly title?: string;
  readonly version?: string;
  /** The operations, in the document's order (paths, then get, put, post, delete, options, head, patch). */
  readonly operations: ImportedOperation[];
  /** Operations the gateway cannot relay as such (TRACE), with why. */
  readonly skipped: OpenApiIssue[];
  /** Problems: when there is one, `operations` is empty and nothing may be imported. */
  readonly issues: OpenApiIssue[];
}

/** Largest document read unless the caller says (the configuration API: `operatorWork.maxOpenApiBytes`). */
export const MAX_OPENAPI_BYTES = 2 * 1024 * 1024;
/** Most values a document may hold once YAML aliases are expanded (a few thousand for a large API). */
const MAX_NODES = 200_000;
/** Most YAML aliases (`*name`): reuse is fine, a billion laughs is not. */
const MAX_ALIASES = 100;
/** Longest time the parser may spend resolving the document's own references. */
const PARSER_TIMEOUT_MS = 5_000;

/** OpenAPI's methods in its own order, and how the gateway names them (`trace`: not relayed). */
const METHODS: ReadonlyArray<[string, HttpMethod | undefined]> = [
  ['get', 'GET'],
  ['put', 'PUT'],
  ['post', 'POST'],
  ['delete', 'DELETE'],
  ['options', 'OPTIONS'],
  ['head', 'HEAD'],
  ['patch', 'PATCH'],
  ['trace', undefined],
];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Security schemes whose requirements list scopes the token must hold; others list roles the gateway does not check. */
const SCOPED_SCHEMES: ReadonlySet<string> = new Set(['oauth2', 'openIdConnect']);

/** The scope rule of a `security` list: one way → `requiredScopes`, several → `scopeAlternatives`, an empty way → none. */
type ScopeRule = Pick<OperationConfig, 'requiredScopes' | 'scopeAlternatives'>;

/**
 * The scope rule of a list of security requirements (`at`: where the list is). A requirement is
 * an alternative; its scopes are those its `oauth2` and `openIdConnect` schemes list, together
 * (`http`, `apiKey` and `mutualTLS` schemes ask only for the token the gateway always requires).
 * A requirement that names no scope (`{}`, or only schemes without scopes) lets any valid token
 * through, so the whole list asks for no scope. A scheme not in `components.securitySchemes` is
 * an issue.
 */
function scopeRuleOf(requirements: Json, schemes: Record<string, Json>, at: string, issues: OpenApiIssue[]): ScopeRule {
  if (!Array.isArray(requirements)) return {};
  const ways: string[][] = [];
  requirements.forEach((requirement, i) => {
    if (requirement === null || typeof requirement !== 'object' || Array.isArray(requirement)) return;
    const way = new Set<string>();
    for (const [name, scopes] of Object.entries(requirement)) {
      const scheme = Object.hasOwn(schemes, name) ? schemes[name] : undefined;
      if (scheme === undefined || scheme === null || typeof scheme !== 'object' || Array.isArray(scheme)) {
        issues.push({
          path: child(child(child(at, 'security'), i), name),
          message: `names no security scheme of components.securitySchemes (defined: ${Object.keys(schemes).join(', ') || 'none'})`,
        });
        continue;
      }
      if (!SCOPED_SCHEMES.has(String(scheme['type'])) || !Array.isArray(scopes)) continue;
      for (const scope of scopes) if (typeof scope === 'string') way.add(scope);
    }
    ways.push([...way]);
  });
  if (ways.length === 0 || ways.some((way) => way.length === 0)) return {};
  // The same alternative written twice (in another order) is one: the first as written.
  const byKey = new Map<string, string[]>();
  for (const way of ways) {
    const key = [...way].sort().join(' ');
    if (!byKey.has(key)) byKey.set(key, way);
  }
  const distinct = [...byKey.values()];
  return distinct.length === 1 ? { requiredScopes: distinct[0]! } : { scopeAlternatives: distinct };
}

function failed(path: string, message: string): OpenApiImport {
  return { operations: [], skipped: [], issues: [{ path, message }] };
}

/** A path below `at` in the document's notation (`paths./pet.get`). */
function child(at: string, key: string | number): string {
  return at === '' ? String(key) : `${at}.${String(key)}`;
}

/** The document's text as data: JSON when it looks like JSON, else YAML (which JSON also is). */
async function parseText(text: string): Promise<{ document: unknown } | { issue: OpenApiIssue }> {
  const trimmed = text.replace(/^\uFEFF/, '').trimStart();
  if (trimmed.startsWith('{')) {
    try {
      return { document: JSON.parse(trimmed) };
    } catch (err) {
      return { issue: { path: '', message: `not valid JSON: ${(err as Error).message}` } };
    }
  }
  const yaml = await import('js-yaml');
  try {
    return { document: yaml.load(trimmed, { maxAliases: MAX_ALIASES }) };
  } catch (err) {
    // js-yaml's message ends with an excerpt of the text around the problem: keep its first line.
    const message = String((err as Error)?.message ?? err).split('\n')[0]!;
    return { issue: { path: '', message: `not valid YAML or JSON: ${message}` } };
  }
}

/**
 * Every `$ref` that is not a reference inside the document (`#/...`), with where it is; counts the
 * values on the way (aliases counted each time they are reached) and stops past the bound.
 */
function outsideReferences(document: unknown): { refs: OpenApiIssue[]; tooLarge: boolean } {
  const refs: OpenApiIssue[] = [];
  let nodes = 0;
  const stack: Array<[unknown, string]> = [[document, '']];
  while (stack.length > 0) {
    const [value, at] = stack.pop()!;
    if (++nodes > MAX_NODES) return { refs, tooLarge: true };
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], child(at, i)]);
      continue;
    }
    const ref = (value as Record<string, unknown>)['$ref'];
    if (Object.hasOwn(value, '$ref') && (typeof ref !== 'string' || !ref.startsWith('#'))) {
      refs.push({
        path: child(at, '$ref'),
        message: `${JSON.stringify(ref)} points outside the document: the import fetches and reads nothing, give one document with its references inside (#/components/...)`,
      });
    }
    const keys = Object.keys(value);
    for (let i = keys.length - 1; i >= 0; i--) stack.push([(value as Record<string, unknown>)[keys[i]!], child(at, keys[i]!)]);
  }
  return { refs, tooLarge: false };
}

/** The parser's messages without their code frame of the JSON form (which is not the upload's text). */
function parserIssues(errors: Array<{ message: string }>): OpenApiIssue[] {
  return errors.map((e) => {
    const lines = String(e.message).split('\n');
    const where = lines.find((line) => /^\s*\|?\s*\^/.test(line) || /^\s+\|\s+\^/.test(line));
    const head = lines[0]!.trim();
    const hint = where === undefined ? '' : where.replace(/^[\s|]*\^\s*/, '').trim();
    return { path: '', message: hint === '' || hint === head ? head : `${head} (${hint})` };
  });
}

/**
 * Reads the operations of an OpenAPI 3.0 or 3.1 document (the text of a `.json`, `.yaml` or
 * `.yml` file) of at most `maxBytes`. Never throws for a bad document: its problems are in `issues`.
 */
export async function operationsFromOpenApi(text: string, maxBytes = MAX_OPENAPI_BYTES): Promise<OpenApiImport> {
  if (typeof text !== 'string' || text.trim() === '') return failed('', 'the document is empty');
  if (Buffer.byteLength(text, 'utf8') > maxBytes) return failed('', `the document is larger than ${maxBytes} bytes`);
  const parsed = await parseText(text);
  if ('issue' in parsed) return { operations: [], skipped: [], issues: [parsed.issue] };
  const document = parsed.document;
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    return failed('', 'not an OpenAPI document: an object with openapi, info and paths was expected');
  const root = document as Record<string, unknown>;
  if (typeof root['swagger'] === 'string')
    return failed('swagger', `Swagger ${root['swagger']} is not imported: convert it to OpenAPI 3 first`);
  if (typeof root['openapi'] !== 'string' || !/^3\.[01]\.\d+$/.test(root['openapi'])) {
    return failed('openapi', `must be an OpenAPI 3.0 or 3.1 version (3.0.x, 3.1.x), got ${JSON.stringify(root['openapi'] ?? null)}`);
  }
  const { refs, tooLarge } = outsideReferences(document);
  if (tooLarge) return failed('', `the document holds more than ${MAX_NODES} values (YAML aliases expanded)`);
  if (refs.length > 0) return { operations: [], skipped: [], issues: refs };

  const parser = await import('@readme/openapi-parser');
  // Nothing outside the document is resolved (its references were checked above, and the parser is
  // told so too); the parser works on copies, the document stays as read.
  const options = { resolve: { external: false, file: false }, timeoutMs: PARSER_TIMEOUT_MS } as const;
  let dereferenced: Record<string, unknown>;
  try {
    const result = await parser.validate(structuredClone(document) as never, options);
    if (!result.valid) return { operations: [], skipped: [], issues: parserIssues(result.errors) };
    dereferenced = (await parser.dereference(structuredClone(document) as never, options)) as unknown as Record<string, unknown>;
  } catch (err) {
    return failed('', `not a valid OpenAPI document: ${String((err as Error)?.message ?? err).split('\n')[0]}`);
  }

  const operations: ImportedOperation[] = [];
  const skipped: OpenApiIssue[] = [];
  const issues: OpenApiIssue[] = [];
  const names = new Map<string, string>();
  const paths = (dereferenced['paths'] ?? {}) as Record<string, Json>;
  const components = (dereferenced['components'] ?? {}) as Record<string, Json>;
  const schemes = (components['securitySchemes'] ?? {}) as Record<string, Json>;
  // The document's own security, read once: its issues are reported at its place, once.
  const documentSecurity = dereferenced['security'] as Json | undefined;
  const documentRule = scopeRuleOf(documentSecurity ?? null, schemes, '', issues);
  for (const template of Object.keys(paths)) {
    const item = paths[template];
    if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
    const at = child('paths', template);
    for (const [method, gatewayMethod] of METHODS) {
      const op = (item as Record<string, Json>)[method];
      if (op === undefined || op === null || typeof op !== 'object' || Array.isArray(op)) continue;
      const from = child(at, method);
      if (gatewayMethod === undefined) {
        skipped.push({ path: from, message: 'TRACE is not relayed by the gateway' });
        continue;
      }
      const id = (op as Record<string, Json>)['operationId'];
      if (typeof id !== 'string' || id.trim() === '') {
        issues.push({
          path: child(from, 'operationId'),
          message: 'is missing: the gateway names each operation after it (the XACML action-id)',
        });
        continue;
      }
      const earlier = names.get(id);
      if (earlier !== undefined) {
        issues.push({ path: child(from, 'operationId'), message: `${id} is also the operationId of ${earlier}` });
        continue;
      }
      names.set(id, from);
      const own = (op as Record<string, Json>)['security'];
      const rule = own === undefined ? documentRule : scopeRuleOf(own, schemes, from, issues);
      const declared = Array.isArray(own) || Array.isArray(documentSecurity);
      operations.push({ name: id, method: gatewayMethod, path: template, ...rule, from, ...(declared ? { security: true } : {}) });
    }
  }
  if (issues.length === 0 && operations.length === 0) issues.push({ path: 'paths', message: 'has no operation the gateway can relay' });
  const info = (dereferenced['info'] ?? {}) as Record<string, unknown>;
  return {
    ...(typeof info['title'] === 'string' ? { title: info['title'] } : {}),
    ...(typeof info['version'] === 'string' ? { version: info['version'] } : {}),
    operations: issues.length > 0 ? [] : operations,
    skipped,
    issues,
  };
}

/** How imported operations meet an API's own. */
export type ImportMode = 'merge' | 'replace';

/** What an import changes in an API's operations, by name. */
export interface OperationChanges {
  added: string[];
  changed: string[];
  unchanged: string[];
  /** With `replace`: the API's operations the document does not have. */
  removed: string[];
}

/** An operation's scope rule as one text, to compare. */
function ruleText(op: Pick<OperationConfig, 'requiredScopes' | 'scopeAlternatives'> | undefined): string {
  return JSON.stringify([op?.requiredScopes ?? null, op?.scopeAlternatives ?? null]);
}

/**
 * The API's operations after an import: `merge` keeps the API's own and adds or updates the
 * document's by name; `replace` keeps only the document's. An operation's scope rule
 * (`requiredScopes`, `scopeAlternatives`) is the document's when the document declares `security`
 * for it (its own or the document's), none when that security names no scope; otherwise an
 * operation the API already had keeps its own. Its `requiredClaims`, `requiredAcrValues` and
 * `maxAuthenticationAge` stay (the gateway's rules: OpenAPI has none of them). An operation whose
 * method, path or scope rule changes is `changed`. A new
 * operation goes before one whose template would take its requests, as OpenAPI matches concrete
 * paths before templated ones. Throws `OperationOrderError` when the templates overlap too much to
 * be ordered in bounded time.
 */
export function mergeOperations(
  existing: readonly OperationConfig[] | undefined,
  imported: readonly ImportedOperation[],
  mode: ImportMode,
): { operations: OperationConfig[]; changes: OperationChanges } {
  const own = new Map((existing ?? []).map((op) => [op.name, op]));
  const changes: OperationChanges = { added: [], changed: [], unchanged: [], removed: [] };
  const fromDocument = new Map<string, OperationConfig>();
  for (const { from: _from, security, ...op } of imported) {
    const before = own.get(op.name);
    const next: OperationConfig = { ...op };
    if (security !== true) {
      if (before?.requiredScopes !== undefined) next.requiredScopes = before.requiredScopes;
      if (before?.scopeAlternatives !== undefined) next.scopeAlternatives = before.scopeAlternatives;
    }
    if (before?.requiredClaims !== undefined) next.requiredClaims = before.requiredClaims;
    if (before?.requiredAcrValues !== undefined) next.requiredAcrValues = before.requiredAcrValues;
    if (before?.maxAuthenticationAge !== undefined) next.maxAuthenticationAge = before.maxAuthenticationAge;
    if (before === undefined) changes.added.push(op.name);
    else if (before.method === op.method && before.path === op.path && ruleText(before) === ruleText(next)) changes.unchanged.push(op.name);
    else changes.changed.push(op.name);
    fromDocument.set(op.name, next);
  }
  if (mode === 'replace') {
    for (const op of existing ?? []) if (!fromDocument.has(op.name)) changes.removed.push(op.name);
    const order = new OperationOrder();
    for (const op of fromDocument.values()) order.place(op);
    return { operations: order.operations, changes };
  }
  // merge: the API's own stay where they are (updated in place), the new ones are placed.
  const order = new OperationOrder((existing ?? []).map((op) => fromDocument.get(op.name) ?? op));
  for (const op of fromDocument.values()) if (!own.has(op.name)) order.place(op);
  return { operations: order.operations, changes };
}
