/**
 * The table of docs/token-policies.md "Options of `createTokenPolicy`" names exactly the options
 * of the token policy's schema, each section member by member, with the schema's default (a row
 * states one in backticks exactly when the schema has one) and the configuration file's key the
 * file's schema gives it. A field added to the schema without a row, a row left for a field that
 * is gone, or a default changed on one side only fails here.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { TSchema } from '@sinclair/typebox';
import { FLATTENED_FILE_KEYS, TokenPolicyOptionsSchema, TokenPolicySchema } from '../../src/token/policy-schema.js';

const PAGE = new URL('../../docs/token-policies.md', import.meta.url);
const HEADING = '## Options of `createTokenPolicy`';

interface Row {
  option: string;
  file: string;
  default: string;
}

/** The rows of the table under the heading (the option's name without its backticks). */
async function documentedRows(): Promise<Row[]> {
  const text = await readFile(PAGE, 'utf8');
  const start = text.indexOf(`\n${HEADING}\n`);
  expect(start, HEADING).to.be.greaterThan(-1);
  const section = text.slice(start + HEADING.length + 2).split(/\n#{2,4} /)[0]!;
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    // No cell of this table holds a "|".
    const [option, file, fallback] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const name = /^`([^`]+)`$/.exec(option ?? '')?.[1];
    if (name !== undefined) rows.push({ option: name, file: file!, default: fallback! });
  }
  return rows;
}

/** The values a cell states in backticks. */
function quoted(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** The object a section takes (`cache`: false or an object), when it is one of fixed members. */
function sectionObject(schema: TSchema): Record<string, TSchema> | undefined {
  const s = schema as { properties?: Record<string, TSchema>; additionalProperties?: unknown; anyOf?: TSchema[] };
  if (s.properties !== undefined && s.additionalProperties === false) return s.properties;
  return s.anyOf?.map(sectionObject).find((members) => members !== undefined);
}

/** Every option of the schema with its own schema: `key`, and `key.member` for each member of a section. */
function schemaOptions(): Map<string, TSchema> {
  const options = new Map<string, TSchema>();
  for (const [key, schema] of Object.entries(TokenPolicyOptionsSchema.properties as Record<string, TSchema>)) {
    options.set(key, schema);
    for (const [member, memberSchema] of Object.entries(sectionObject(schema) ?? {})) options.set(`${key}.${member}`, memberSchema);
  }
  return options;
}

/** The file's key of an option, by the file's schema: the same name, a member of the same section, or a flattened key. */
function fileKeyOf(option: string): string | undefined {
  const file = TokenPolicySchema.properties as Record<string, TSchema>;
  const flattened = Object.entries(FLATTENED_FILE_KEYS).find(([, path]) => path.join('.') === option);
  if (flattened !== undefined) return flattened[0];
  const [key, member] = option.split('.');
  if (!Object.hasOwn(file, key!)) return undefined;
  if (member === undefined) return key;
  return Object.hasOwn(sectionObject(file[key!]!) ?? {}, member) ? option : undefined;
}

describe('docs/token-policies.md: the options of createTokenPolicy, one row each', () => {
  it('names every option of the schema, sections member by member, and no other', async () => {
    const rows = await documentedRows();
    expect(rows.map((r) => r.option)).to.have.members([...schemaOptions().keys()]);
  });

  it("states the schema's default, and a default only where the schema has one", async () => {
    const options = schemaOptions();
    for (const row of await documentedRows()) {
      const fallback = (options.get(row.option) as { default?: unknown } | undefined)?.default;
      const stated = quoted(row.default);
      if (fallback === undefined) expect(stated, `${row.option}: the schema has no default`).to.deep.equal([]);
      else if (Array.isArray(fallback)) expect(stated, row.option).to.deep.equal(fallback.map(String));
      else expect(stated[0], row.option).to.equal(String(fallback));
    }
  });

  it("names the configuration file's key of each option the file has, and none for the others", async () => {
    for (const row of await documentedRows()) {
      const key = fileKeyOf(row.option);
      if (key === undefined) expect(row.file, `${row.option}: not in the file`).to.not.match(/^`/);
      else expect(quoted(row.file)[0], row.option).to.equal(key);
    }
  });
});
