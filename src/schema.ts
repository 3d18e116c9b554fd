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
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Errors, ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { memberPath, type RuleIssue } from './issues.js';
import { nearestKey, unknownOptionMessage } from './options.js';

/** What the helpers below take besides their own bounds: a description for editors, a default, a message. */
interface Annotations<T> {
  description?: string;
  /** The value used when none is given (said in the JSON Schema; applied by the feature's code). */
  default?: T;
  /** What a bad value is told, instead of the message said from the schema. */
  errorMessage?: string;
}

/** A string of at least one character. */
export function NonEmptyString(options: Annotations<string> = {}) {
  return Type.String({ minLength: 1, ...options });
}

/** A whole number above 0. */
export function PositiveInteger(options: Annotations<number> & { maximum?: number } = {}) {
  return Type.Integer({ exclusiveMinimum: 0, ...options });
}

/** A number above 0. */
export function PositiveNumber(options: Annotations<number> = {}) {
  return Type.Number({ exclusiveMinimum: 0, ...options });
}

/** A number of 0 or more. */
export function NonNegativeNumber(options: Annotations<number> = {}) {
  return Type.Number({ minimum: 0, ...options });
}

/** One of the given strings. */
export function OneOf<const T extends readonly string[]>(values: T, options: Annotations<T[number]> = {}) {
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

/**
 * What a check calls a key of an object: a `field` of the configuration file (an unknown one is
 * `unknown field (...)`), or an `option` of a factory (`is not an option (...)`, as every factory
 * says it, see `refuseUnknownKeys`).
 */
export type KeyWording = 'field' | 'option';

function unknownKeyMessage(key: string, known: readonly string[], wording: KeyWording): string {
  if (wording === 'option') return unknownOptionMessage(key, known);
  const nearest = nearestKey(key, known);
  return `unknown field (${nearest === undefined ? `allowed: ${known.join(', ')}` : `did you mean "${nearest}"?`})`;
}

/** Every problem of `value` against `schema`, one per path (the first found), paths below `base`. */
export function schemaIssues(schema: TSchema, value: unknown, base = '', wording: KeyWording = 'field'): RuleIssue[] {
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
      add(at, unknownKeyMessage(key, known, wording));
      continue;
    }
    if (error.type === ValueErrorType.Union) {
      const union = error.schema as Record<string, unknown>;
      const variant = meantVariant(union, error.value);
      if (variant !== undefined) {
        for (const issue of schemaIssues(variant, error.value, at, wording)) add(issue.path, issue.message);
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

/**
 * The issues of a schema and of the rules beside it, merged: one per path (the schema's first),
 * none below a path the schema already refused, and a rule's issue about a whole list in place of
 * the schema's issues about its items (`jwtTypes` rather than `jwtTypes[1]`).
 */
export function mergeIssues(fromSchema: readonly RuleIssue[], fromRules: readonly RuleIssue[]): RuleIssue[] {
  let issues: RuleIssue[] = [...fromSchema];
  const refused = fromSchema.map((i) => i.path);
  for (const issue of fromRules) {
    if (coveredBy(issue.path, refused)) continue;
    issues = issues.filter((i) => !i.path.startsWith(`${issue.path}[`));
    issues.push(issue);
  }
  return issues;
}

/**
 * The members of an object schema's value: each one given, else the schema's default (for a
 * section whose members all have one, such as a cache's bounds).
 */
export function withDefaults<T extends TObject>(schema: T, value: Readonly<Partial<Static<T>>> | undefined): Required<Static<T>> {
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(schema.properties)) {
    out[key] = (value as Record<string, unknown> | undefined)?.[key] ?? (member as { default?: unknown }).default;
  }
  return out as Required<Static<T>>;
}
