/**
 * Operations read from an OpenAPI 3 document (the petstore's, under test/fixtures/openapi): every
 * path × method an operation named after its operationId, path templates kept, JSON or YAML; a
 * document pointing outside itself refused without a fetch; invalid documents refused with where;
 * and how imported operations meet an API's own.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { load } from 'js-yaml';
import { mergeOperations, operationsFromOpenApi } from '../../src/configuration/openapi.js';
import { close, listen } from '../gateway/helpers.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore.yaml');

const PETSTORE_OPERATIONS = [
  { name: 'addPet', method: 'POST', path: '/pet', from: 'paths./pet.post' },
  { name: 'updatePet', method: 'PUT', path: '/pet', from: 'paths./pet.put' },
  { name: 'findPetsByStatus', method: 'GET', path: '/pet/findByStatus', from: 'paths./pet/findByStatus.get' },
  { name: 'getPetById', method: 'GET', path: '/pet/{petId}', from: 'paths./pet/{petId}.get' },
  { name: 'deletePet', method: 'DELETE', path: '/pet/{petId}', from: 'paths./pet/{petId}.delete' },
];

/** A minimal valid OpenAPI 3.1 document with the given paths. */
function document(paths: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ openapi: '3.1.0', info: { title: 'T', version: '1' }, paths, ...extra });
}
const ok = { responses: { '200': { description: 'ok' } } };

describe('operations from an OpenAPI 3 document', () => {
  let yaml: string;
  before(async () => {
    yaml = await readFile(FIXTURE, 'utf8');
  });

  it("reads the petstore's YAML: every path × method an operation named after its operationId, templates kept, in the document's order", async () => {
    const read = await operationsFromOpenApi(yaml);
    expect(read.issues).to.deep.equal([]);
    expect(read).to.include({ title: 'PetStore', version: '1.0.0' });
    // Within a path, OpenAPI's method order (get, put, post, delete, ...).
    expect(read.operations).to.deep.equal([PETSTORE_OPERATIONS[1], PETSTORE_OPERATIONS[0], ...PETSTORE_OPERATIONS.slice(2)]);
    expect(read.skipped).to.deep.equal([]);
  });

  it('reads the same document as JSON', async () => {
    const json = JSON.stringify(load(yaml));
    const read = await operationsFromOpenApi(json);
    expect(read.operations.map((o) => o.name)).to.deep.equal(['updatePet', 'addPet', 'findPetsByStatus', 'getPetById', 'deletePet']);
  });

  describe('refuses a reference outside the document, and fetches nothing', () => {
    let server: Server;
    let hits = 0;
    let url: string;
    before(async () => {
      server = createServer((_req, res) => {
        hits++;
        res.setHeader('content-type', 'application/json');
        res.end('{"type":"object"}');
      });
      url = await listen(server);
    });
    after(() => close(server));

    for (const [what, ref] of [
      ['a URL', () => `${url}/tag.json`],
      ['a file beside it', () => './tag.yaml#/Tag'],
      ['an absolute file', () => 'file:///etc/passwd'],
    ] as const) {
      it(what, async () => {
        const text = yaml.replace("$ref: '#/components/schemas/Tag'", `$ref: '${ref()}'`);
        const read = await operationsFromOpenApi(text);
        expect(read.operations).to.deep.equal([]);
        expect(read.issues).to.deep.equal([
          {
            path: 'components.schemas.Pet.properties.tags.items.$ref',
            message: `${JSON.stringify(ref())} points outside the document: the import fetches and reads nothing, give one document with its references inside (#/components/...)`,
          },
        ]);
        expect(hits).to.equal(0);
      });
    }
  });

  it('refuses what is not an OpenAPI 3 document, saying why', async () => {
    const issue = async (text: string) => (await operationsFromOpenApi(text)).issues;
    expect(await issue('')).to.deep.equal([{ path: '', message: 'the document is empty' }]);
    expect((await issue('paths: [')).map((i) => i.message)[0]).to.match(/^not valid YAML or JSON: /);
    expect((await issue('{"openapi": '))[0]!.message).to.match(/^not valid JSON: /);
    expect(await issue('- a list')).to.deep.equal([
      { path: '', message: 'not an OpenAPI document: an object with openapi, info and paths was expected' },
    ]);
    expect(await issue('{"swagger":"2.0","info":{"title":"x","version":"1"},"paths":{}}')).to.deep.equal([
      { path: 'swagger', message: 'Swagger 2.0 is not imported: convert it to OpenAPI 3 first' },
    ]);
    expect(await issue('{"openapi":"4.0.0"}')).to.deep.equal([
      { path: 'openapi', message: 'must be an OpenAPI 3.0 or 3.1 version (3.0.x, 3.1.x), got "4.0.0"' },
    ]);
    // The OpenAPI schema's own checks, by the parser.
    const invalid = await issue(yaml.replace('  version: 1.0.0\n', ''));
    expect(invalid).to.have.length(1);
    expect(invalid[0]!.message).to.include("must have required property 'version'");
    const duplicate = await issue(yaml.replace('operationId: deletePet', 'operationId: addPet'));
    expect(duplicate[0]!.message).to.include('addPet');
    expect(duplicate[0]!.message).to.include('unique');
  });

  it('needs an operationId for every operation, leaves TRACE out, and refuses a document with nothing to relay', async () => {
    const missing = await operationsFromOpenApi(document({ '/a': { get: ok, post: { ...ok, operationId: 'b' } } }));
    expect(missing.operations).to.deep.equal([]);
    expect(missing.issues).to.deep.equal([
      { path: 'paths./a.get.operationId', message: 'is missing: the gateway names each operation after it (the XACML action-id)' },
    ]);
    const trace = await operationsFromOpenApi(document({ '/a': { get: { ...ok, operationId: 'a' }, trace: { ...ok, operationId: 't' } } }));
    expect(trace.operations).to.deep.equal([{ name: 'a', method: 'GET', path: '/a', from: 'paths./a.get' }]);
    expect(trace.skipped).to.deep.equal([{ path: 'paths./a.trace', message: 'TRACE is not relayed by the gateway' }]);
    const onlyTrace = await operationsFromOpenApi(document({ '/a': { trace: { ...ok, operationId: 't' } } }));
    expect(onlyTrace.issues).to.deep.equal([{ path: 'paths', message: 'has no operation the gateway can relay' }]);
  });

  it('resolves path items and parameters referenced inside the document (OpenAPI 3.1 components.pathItems)', async () => {
    const text = document(
      { '/pets/{id}': { $ref: '#/components/pathItems/Pet' } },
      {
        components: {
          pathItems: {
            Pet: {
              get: { ...ok, operationId: 'showPet', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }] },
            },
          },
        },
      },
    );
    const read = await operationsFromOpenApi(text);
    expect(read.issues).to.deep.equal([]);
    expect(read.operations).to.deep.equal([{ name: 'showPet', method: 'GET', path: '/pets/{id}', from: 'paths./pets/{id}.get' }]);
  });

  it('refuses a YAML alias bomb and a document over 2 MiB without expanding them', async () => {
    const lines = ['openapi: 3.0.3', 'info: {title: t, version: "1"}', 'paths: {}', 'x0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]'];
    for (let i = 1; i < 9; i++) lines.push(`x${i}: &a${i} [${Array.from({ length: 10 }, () => `*a${i - 1}`).join(', ')}]`);
    const bomb = await operationsFromOpenApi(lines.join('\n'));
    expect(bomb.issues).to.have.length(1);
    expect(bomb.issues[0]!.message).to.match(/maxAliases|more than 200000 values/);
    const wide = ['openapi: 3.0.3', 'info: {title: t, version: "1"}', 'paths: {}', 'x0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]'];
    for (let i = 1; i < 6; i++) wide.push(`x${i}: &a${i} [${Array.from({ length: 10 }, () => `*a${i - 1}`).join(', ')}]`);
    // 55 aliases, 10^5 values once expanded: within the alias bound, past the values bound.
    expect((await operationsFromOpenApi(wide.join('\n'))).issues).to.deep.equal([
      { path: '', message: 'the document holds more than 200000 values (YAML aliases expanded)' },
    ]);
    const large = await operationsFromOpenApi(`${yaml}\n# ${'x'.repeat(2 * 1024 * 1024)}`);
    expect(large.issues).to.deep.equal([{ path: '', message: 'the document is larger than 2097152 bytes' }]);
  });

  it("merges into an API's operations by name (keeping its scope and step-up rules), or replaces them, concrete paths before templated ones", () => {
    const own = [
      { name: 'addPet', method: 'POST' as const, path: '/pet', requiredScopes: ['pets:write'] },
      { name: 'legacy', method: 'GET' as const, path: '/old' },
      { name: 'getPetById', method: 'GET' as const, path: '/pets/{id}', requiredAcrValues: ['gold'], maxAuthenticationAge: 300 },
    ];
    const imported = PETSTORE_OPERATIONS as Parameters<typeof mergeOperations>[1];
    const merged = mergeOperations(own, imported, 'merge');
    expect(merged.changes).to.deep.equal({
      added: ['updatePet', 'findPetsByStatus', 'deletePet'],
      changed: ['getPetById'],
      unchanged: ['addPet'],
      removed: [],
    });
    // The API's own in place; a new one before the operation whose template would take its requests.
    expect(merged.operations).to.deep.equal([
      { name: 'addPet', method: 'POST', path: '/pet', requiredScopes: ['pets:write'] },
      { name: 'legacy', method: 'GET', path: '/old' },
      { name: 'findPetsByStatus', method: 'GET', path: '/pet/findByStatus' },
      { name: 'getPetById', method: 'GET', path: '/pet/{petId}', requiredAcrValues: ['gold'], maxAuthenticationAge: 300 },
      { name: 'updatePet', method: 'PUT', path: '/pet' },
      { name: 'deletePet', method: 'DELETE', path: '/pet/{petId}' },
    ]);
    const replaced = mergeOperations(own, imported, 'replace');
    expect(replaced.changes.removed).to.deep.equal(['legacy']);
    expect(replaced.operations.map((o) => o.name)).to.deep.equal(['addPet', 'updatePet', 'findPetsByStatus', 'getPetById', 'deletePet']);
    // Whatever the document's order: the concrete path first.
    const templatedFirst = [imported[3]!, imported[4]!, imported[2]!];
    expect(mergeOperations([], templatedFirst, 'replace').operations.map((o) => o.name)).to.deep.equal([
      'findPetsByStatus',
      'getPetById',
      'deletePet',
    ]);
    expect(mergeOperations(undefined, imported, 'merge').operations).to.have.length(5);
  });

  describe("scope rules from the document's security", () => {
    const FIXTURES = path.dirname(FIXTURE);

    it("OpenAPI 3.0: each operation its own security, else the document's; alternatives kept; a requirement naming no scope lets any token through", async () => {
      const read = await operationsFromOpenApi(await readFile(path.join(FIXTURES, 'petstore-scopes-3.0.yaml'), 'utf8'));
      expect(read.issues).to.deep.equal([]);
      expect(read.operations).to.deep.equal([
        // The document's security: read, or write.
        {
          name: 'getPetById',
          method: 'GET',
          path: '/pet/{petId}',
          scopeAlternatives: [['read'], ['write']],
          from: 'paths./pet/{petId}.get',
          security: true,
        },
        {
          name: 'deletePet',
          method: 'DELETE',
          path: '/pet/{petId}',
          scopeAlternatives: [['write'], ['admin']],
          from: 'paths./pet/{petId}.delete',
          security: true,
        },
        // Two schemes in one requirement: the scopes of both.
        { name: 'updatePet', method: 'PUT', path: '/pet', requiredScopes: ['write', 'openid'], from: 'paths./pet.put', security: true },
        // An API key names no scope: that way any valid token passes.
        { name: 'addPet', method: 'POST', path: '/pet', from: 'paths./pet.post', security: true },
        // security: [] — no scope; the gateway still requires a valid token.
        { name: 'getInventory', method: 'GET', path: '/store/inventory', from: 'paths./store/inventory.get', security: true },
      ]);
    });

    it("OpenAPI 3.1: {} among the requirements needs no scope, roles of an http scheme are not scopes, the same alternative twice is one, no security at all keeps the API's rule", async () => {
      const read = await operationsFromOpenApi(await readFile(path.join(FIXTURES, 'petstore-scopes-3.1.json'), 'utf8'));
      expect(read.issues).to.deep.equal([]);
      expect(
        read.operations.map(({ name, requiredScopes, scopeAlternatives, security }) => ({
          name,
          requiredScopes,
          scopeAlternatives,
          security,
        })),
      ).to.deep.equal([
        { name: 'listPets', requiredScopes: undefined, scopeAlternatives: [['read'], ['write']], security: true },
        { name: 'createPet', requiredScopes: ['write'], scopeAlternatives: undefined, security: true },
        { name: 'showPet', requiredScopes: undefined, scopeAlternatives: undefined, security: true },
        { name: 'removePet', requiredScopes: undefined, scopeAlternatives: [['write', 'openid'], ['admin']], security: true },
        { name: 'health', requiredScopes: undefined, scopeAlternatives: undefined, security: undefined },
      ]);
    });

    it('a requirement naming a scheme not in components.securitySchemes is an issue at its place, nothing imported', async () => {
      const oauth = { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://idp.example/token', scopes: {} } } };
      const read = await operationsFromOpenApi(
        document(
          {
            '/a': { get: { operationId: 'a', security: [{ auth: ['x'] }, { missing: ['y'] }], ...ok } },
            '/b': { get: { operationId: 'b', ...ok } },
          },
          { security: [{ gone: [] }], components: { securitySchemes: { auth: oauth } } },
        ),
      );
      expect(read.operations).to.deep.equal([]);
      expect(read.issues).to.deep.equal([
        { path: 'security.0.gone', message: 'names no security scheme of components.securitySchemes (defined: auth)' },
        { path: 'paths./a.get.security.1.missing', message: 'names no security scheme of components.securitySchemes (defined: auth)' },
      ]);
    });

    it("merging: the document's scope rule replaces the operation's when the document declares security, else the API's stays; claims stay", () => {
      const own = [
        { name: 'getPetById', method: 'GET' as const, path: '/pet/{petId}', requiredScopes: ['old'], requiredClaims: { tenant: ['acme'] } },
        { name: 'health', method: 'GET' as const, path: '/health', requiredScopes: ['ops'] },
        { name: 'addPet', method: 'POST' as const, path: '/pet', scopeAlternatives: [['a'], ['b']] },
      ];
      const merged = mergeOperations(
        own,
        [
          { name: 'getPetById', method: 'GET', path: '/pet/{petId}', scopeAlternatives: [['read'], ['write']], from: 'x', security: true },
          { name: 'health', method: 'GET', path: '/health', from: 'y' },
          { name: 'addPet', method: 'POST', path: '/pet', from: 'z', security: true },
        ],
        'merge',
      );
      expect(merged.operations).to.deep.equal([
        {
          name: 'getPetById',
          method: 'GET',
          path: '/pet/{petId}',
          scopeAlternatives: [['read'], ['write']],
          requiredClaims: { tenant: ['acme'] },
        },
        { name: 'health', method: 'GET', path: '/health', requiredScopes: ['ops'] },
        { name: 'addPet', method: 'POST', path: '/pet' },
      ]);
      expect(merged.changes).to.deep.equal({ added: [], changed: ['getPetById', 'addPet'], unchanged: ['health'], removed: [] });
    });
  });
});
