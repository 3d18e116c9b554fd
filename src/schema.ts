/**
 * The features' schemas and how a value is checked against one. Each feature keeps its schema
 * beside its code (`token/policy-schema.ts`, `token/forward/schema.ts`, `authorize/schema.ts`,
 * `record/schema.ts`, `config/schema.ts`); they are TypeBox schemas, that is JSON Schema, so the
 * published schema of the configuration file is these checks by construction. A check reports
 * every problem at once, each with its path (`apis[0].backend.url`) and a message in the
 * project's words: `errorMessage` on a schema (also shown by editors) or one said from the schema.
 * Rules a schema cannot say (one field given with another, environment variables, files) stay as
 * code beside the schema, run after it. Checks run at creation and load, never on a request.
 *
 * @module
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { Errors, ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { memberPath, type RuleIssue } from './issues.js';
import { nearestKey } from './options.js';

/** A string of at least one character. */
export function NonEmptyString(options: { description?: string } = {}) {
  return Type.String({ minLength: 1, ...options });
}

/** A whole number above 0. */
export function PositiveInteger(options: { description?: string; maximum?: number } = {}) {
  return Type.Integer({ exclusiveMinimum: 0, ...options });
}

/** A number above 0. */
export function PositiveNumber(options: { description?: string } = {}) {
  return Type.Number({ exclusiveMinimum: 0, ...options });
}

/** One of the given strings. */
export function OneOf<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Union(
    values.map((value) => Type.Literal(value as T[number])),
    { ...options, errorMessage: `must be one of ${values.join(', ')}` },
  );
}

/** The message of a failed schema node, said from the schema when it gives none. */
function messageOf(error: ValueError): string {
  const schema = error.schema as Record<string, unknown>;
  if (error.type === ValueErrorType.ObjectRequiredProperty) return 'is required';
  if (typeof schema.errorMessage === 'string') return schema.errorMessage;
  switch (schema.type) {
    case 'string':
      return schema.minLength === 1 ? 'must be a non-empty string' : 'must be a string';
    case 'boolean':
      return 'must be a boolean';
    case 'object':
      return 'must be an object';
    case 'array':
      return schema.minItems === 1 ? 'must be a non-empty array' : 'must be an array';
    case 'integer':
    case 'number':
      return numberMessage(schema, error.value);
    default:
      return error.message;
  }
}

function numberMessage(schema: Record<string, unknown>, value: unknown): string {
  const what = schema.type === 'integer' ? 'integer' : 'number';
  if (typeof value === 'number' && typeof schema.maximum === 'number' && value > schema.maximum) return `must be at most ${schema.maximum}`;
  if (schema.exclusiveMinimum === 0) return `must be a positive ${what}`;
  if (schema.minimum === 0) return `must be a non-negative ${what}`;
  return `must be a${what === 'integer' ? 'n' : ''} ${what}`;
}

/** `apis[0].backend.url` for the JSON pointer `/apis/0/backend/url`, below `base`. */
function pathOf(base: string, pointer: string): string {
  let at = base;
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    at = /^\d+$/.test(part) ? `${at}[${part}]` : memberPath(at, part);
  }
  return at;
}

/** The kind of JSON value a schema (or a value) is, to pick the variant of a union a value meant. */
function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return typeof value === 'number' ? 'number' : typeof value;
}

function schemaKind(schema: Record<string, unknown>): string | undefined {
  if ('const' in schema) return kindOf(schema.const);
  if (schema.type === 'integer') return 'number';
  return typeof schema.type === 'string' ? schema.type : undefined;
}

/**
 * The variant of a union whose problems to report: the only one of the value's kind, or the one
 * whose constant members (such as `mode`) the value matches; `undefined` when none stands out.
 */
function meantVariant(union: Record<string, unknown>, value: unknown): TSchema | undefined {
  const variants = (union.anyOf as TSchema[] | undefined) ?? [];
  const sameKind = variants.filter((v) => schemaKind(v as Record<string, unknown>) === kindOf(value));
  // A constant or a string of the wrong value says nothing a variant could say better.
  if (kindOf(value) !== 'object' && kindOf(value) !== 'array') return undefined;
  if (sameKind.length === 1) return sameKind[0];
  if (kindOf(value) !== 'object') return undefined;
  const given = value as Record<string, unknown>;
  return sameKind.find((variant) => {
    const properties = (variant as { properties?: Record<string, { const?: unknown }> }).properties ?? {};
    return Object.entries(properties).some(([key, p]) => 'const' in p && given[key] === p.const);
  });
}

/**
 * The member that tells the object variants of a union apart (`mode`), when the value is an object
 * matching none of them: the problem is that member's value.
 */
function discriminatorOf(union: Record<string, unknown>, value: unknown): { key: string; values: unknown[] } | undefined {
  if (kindOf(value) !== 'object') return undefined;
  const variants = ((union.anyOf as Array<{ properties?: Record<string, { const?: unknown }> }> | undefined) ?? []).filter(
    (v) => v.properties !== undefined,
  );
  const first = variants[0]?.properties ?? {};
  const key = Object.keys(first).find((k) => variants.every((v) => v.properties?.[k] !== undefined && 'const' in v.properties[k]!));
  return key === undefined ? undefined : { key, values: variants.map((v) => v.properties![key]!.const) };
}

/** Every problem of `value` against `schema`, one per path (the first found), paths below `base`. */
export function schemaIssues(schema: TSchema, value: unknown, base = ''): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const seen = new Set<string>();
  const add = (path: string, message: string): void => {
    if (seen.has(path)) return;
    seen.add(path);
    issues.push({ path, message });
  };
  for (const error of Errors(schema, value)) {
    const at = pathOf(base, error.path);
    if (error.type === ValueErrorType.ObjectAdditionalProperties) {
      const known = Object.keys((error.schema as { properties?: object }).properties ?? {});
      const key = error.path.slice(error.path.lastIndexOf('/') + 1);
      const nearest = nearestKey(key, known);
      add(at, `unknown field (${nearest === undefined ? `allowed: ${known.join(', ')}` : `did you mean "${nearest}"?`})`);
      continue;
    }
    if (error.type === ValueErrorType.Union) {
      const union = error.schema as Record<string, unknown>;
      const variant = meantVariant(union, error.value);
      if (variant !== undefined) {
        for (const issue of schemaIssues(variant, error.value, at)) add(issue.path, issue.message);
        continue;
      }
      const discriminator = discriminatorOf(union, error.value);
      if (discriminator !== undefined) {
        add(memberPath(at, discriminator.key), `must be ${discriminator.values.map((v) => JSON.stringify(v)).join(' or ')}`);
        continue;
      }
    }
    add(at, messageOf(error));
  }
  return issues;
}

/** Whether an issue at `path` lies at or below one of `reported` (so it says nothing new). */
export function coveredBy(path: string, reported: Iterable<string>): boolean {
  for (const at of reported) {
    if (at === '' || path === at || path.startsWith(`${at}.`) || path.startsWith(`${at}[`)) return true;
  }
  return false;
}
