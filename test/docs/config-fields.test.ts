/**
 * The tables of docs/gateway.md "The configuration file" and of docs/traffic-control.md name
 * exactly the fields of the schemas the file is checked against: a field added to a schema without a row, or a row left for a field
 * that is gone, fails here. (The rows' words are the page's; the schema's descriptions are for
 * editors.)
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type { TSchema } from '@sinclair/typebox';
import { ClientApplicationSchema } from '../../src/authorize/schema.js';
import { ApiSchema } from '../../src/config/schema.js';
import { TokenPolicySchema } from '../../src/token/policy-schema.js';
import { TrafficControlSchema, TrafficPolicySchema } from '../../src/traffic/schema.js';

const PAGE = new URL('../../docs/gateway.md', import.meta.url);
const TRAFFIC_PAGE = new URL('../../docs/traffic-control.md', import.meta.url);

/** The field names of the table under `heading`: `a`, `a.b`, and `a.b / c` as `a.b` and `a.c`. */
async function documentedFields(heading: string, page = PAGE): Promise<string[]> {
  const text = await readFile(page, 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, heading).to.be.greaterThan(-1);
  const section = text.slice(start + heading.length + 2).split(/\n#{2,4} /)[0]!;
  const fields: string[] = [];
  for (const line of section.split('\n')) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (cell === undefined || !cell.startsWith('`')) continue;
    const names = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const parent = names[0]!.includes('.') ? names[0]!.slice(0, names[0]!.lastIndexOf('.') + 1) : '';
    for (const name of names) fields.push(name.includes('.') ? name : `${parent}${name}`);
  }
  return fields;
}

function properties(schema: TSchema): Record<string, TSchema> {
  return (schema as { properties?: Record<string, TSchema> }).properties ?? {};
}

/** The schema's fields at the depth the page documents them: `key`, or `key.member` for each member when the page goes into it. */
function schemaFields(schema: TSchema, documented: readonly string[], prefix = ''): string[] {
  const fields: string[] = [];
  for (const [key, value] of Object.entries(properties(schema))) {
    const name = `${prefix}${key}`;
    const members = properties(value);
    if (Object.keys(members).length > 0 && documented.some((d) => d.startsWith(`${name}.`)))
      fields.push(...Object.keys(members).map((m) => `${name}.${m}`));
    else fields.push(name);
  }
  return fields;
}

describe('docs/gateway.md: the configuration file, field by field', () => {
  it('tokenPolicies.<name>: one row per field of the token policy schema', async () => {
    const documented = await documentedFields('### `tokenPolicies.<name>`');
    expect(documented).to.have.members(schemaFields(TokenPolicySchema, documented));
  });

  it('apis[]: one row per field of the API schema (backend, tokenManagement and recording member by member)', async () => {
    const documented = await documentedFields('### `apis[]`');
    expect(documented).to.have.members(schemaFields(ApiSchema, documented));
  });

  it('applications: one row per field of a client application', async () => {
    const documented = await documentedFields('### `applications`');
    expect(documented).to.have.members(schemaFields(ClientApplicationSchema, documented, '<clientId>.'));
  });
});

describe('docs/traffic-control.md: traffic control, field by field', () => {
  it('trafficControl: one row per field of the top-level section', async () => {
    const documented = await documentedFields('### `trafficControl`', TRAFFIC_PAGE);
    expect(documented).to.have.members(schemaFields(TrafficControlSchema, documented));
  });

  it('policies: one row per field of a policy', async () => {
    const documented = await documentedFields('### Policies', TRAFFIC_PAGE);
    expect(documented).to.have.members(schemaFields(TrafficPolicySchema, documented));
  });
});
