/**
 * Importing operations from an OpenAPI 3 document through the configuration API, on the example
 * gateway: a dry run answers what would change and saves nothing, an import is a version (in force
 * after ResetAllCaches: requests are taken for the new operation), operations merged or replaced with their
 * scope rules kept, every operation validated as the file's (naming where in the document it came
 * from), a document pointing outside itself refused, a viewer refused.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { AuditEntry } from '../../src/operators/audit.js';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore.yaml');
const API = '/gateway/configuration/api';
const IMPORT = `${API}/apis/Ente/PetStore/1/operations/openapi`;

interface Changes {
  added: string[];
  changed: string[];
  unchanged: string[];
  removed: string[];
}

describe('configuration API: operations from an OpenAPI 3 document', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let vera: OperatorClient;
  let yaml: string;

  before(async () => {
    [pet, yaml] = await Promise.all([startPetstore(), readFile(FIXTURE, 'utf8')]);
    ada = new OperatorClient(pet.server.adminUrl!);
    vera = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
    await vera.signIn('vera', PASSWORDS.vera);
  });
  after(() => pet?.stop());

  const versions = async () => (await readdir(`${pet.copy.configFile}.versions`)).length;
  /** The operation the gateway recorded for GET /pet/findByStatus. */
  const findByStatus = async (): Promise<string | undefined> => {
    const token = await pet.as.issueToken('client1', 'client1-secret');
    const res = await fetch(`${pet.api}/pet/findByStatus?status=available`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    const id = res.headers.get('gateway-transaction-id')!;
    for (let i = 0; i < 50; i++) {
      const record = await pet.server.gateway.store.get(id);
      if (record !== undefined) return record.operation;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`no record ${id}`);
  };

  it('a dry run answers what would change, and saves nothing', async () => {
    await ada.fetch(`${API}/config`);
    const before = await versions();
    const res = await ada.json(IMPORT, 'POST', { text: yaml, dryRun: true });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as {
      dryRun: boolean;
      baseVersion: number;
      changes: Changes;
      operations: Array<{ name: string; from: string }>;
      skipped: unknown[];
    };
    expect(body.dryRun).to.equal(true);
    expect(body.changes).to.deep.equal({
      added: ['findPetsByStatus'],
      changed: [],
      unchanged: ['updatePet', 'addPet', 'getPetById', 'deletePet'],
      removed: [],
    });
    expect(body.operations.find((o) => o.name === 'findPetsByStatus')).to.include({ from: 'paths./pet/findByStatus.get' });
    expect(await versions()).to.equal(before);
    expect((await pet.onDisk()).apis[0]!.operations!.map((o) => o.name)).not.to.include('findPetsByStatus');
  });

  it('imports: a new version, the operation in force after ResetAllCaches (not before), the import in the audit log', async () => {
    // Before: the request is taken for getPetById (/pet/{petId}).
    expect(await findByStatus()).to.equal('getPetById');
    const before = await versions();
    const res = await ada.json(IMPORT, 'POST', { text: yaml, comment: 'from the petstore document' });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { version: { version: number; comment: string }; inForce: boolean; changes: Changes };
    expect(body.inForce).to.equal(false);
    expect(body.version.comment).to.equal('from the petstore document');
    expect(body.changes.added).to.deep.equal(['findPetsByStatus']);
    expect(await versions()).to.equal(before + 1);
    const operations = (await pet.onDisk()).apis[0]!.operations!;
    // Before getPetById, whose /pet/{petId} would take its requests: the gateway takes the first match.
    expect(operations.map((o) => o.name)).to.deep.equal(['addPet', 'updatePet', 'findPetsByStatus', 'getPetById', 'deletePet']);
    expect(operations[2]).to.deep.equal({ name: 'findPetsByStatus', method: 'GET', path: '/pet/findByStatus' });
    // Saved, not yet in force.
    expect(await findByStatus()).to.equal('getPetById');
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);
    expect(await findByStatus()).to.equal('findPetsByStatus');
    const audit = (await (await ada.fetch('/gateway/operators/audit?limit=5')).json()) as { items: AuditEntry[] };
    expect(audit.items[1]).to.include({ action: 'operations.import', target: 'Ente/PetStore/v1 operations', result: 'ok' });
    // Without a comment, the version says what was imported.
    const again = (await (await ada.json(IMPORT, 'POST', { text: yaml })).json()) as { version: { comment: string } };
    expect(again.version.comment).to.equal('operations imported from OpenAPI PetStore 1.0.0: no change');
  });

  it('replaces the operations when asked, keeping the scope rules of those it had', async () => {
    const config = (await (await ada.fetch(`${API}/config`)).json()) as {
      document: { apis: Array<{ operations: Array<Record<string, unknown>> }> };
    };
    const api = config.document.apis[0]!;
    api.operations.find((o) => o['name'] === 'updatePet')!['requiredScopes'] = ['pets:write'];
    expect((await ada.json(`${API}/apis/Ente/PetStore/1`, 'PUT', { api })).status).to.equal(200);
    const withoutDelete = yaml.replace(/ {4}delete:\n(?: {6}.*\n)+/, '');
    const res = await ada.json(IMPORT, 'POST', { text: withoutDelete, mode: 'replace' });
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { changes: Changes }).changes.removed).to.deep.equal(['deletePet']);
    const operations = (await pet.onDisk()).apis[0]!.operations!;
    expect(operations.map((o) => o.name)).to.deep.equal(['updatePet', 'addPet', 'findPetsByStatus', 'getPetById']);
    expect(operations.find((o) => o.name === 'updatePet')).to.deep.equal({
      name: 'updatePet',
      method: 'PUT',
      path: '/pet',
      requiredScopes: ['pets:write'],
    });
    expect((await ada.json(IMPORT, 'POST', { text: yaml, mode: 'all' })).status).to.equal(400);
  });

  it('validates the operations as the file does, naming where in the document each came from; saves nothing', async () => {
    const before = await versions();
    const bad = yaml.replace('  /pet/findByStatus:', '  /pet/find by status:');
    const res = await ada.json(IMPORT, 'POST', { text: bad });
    expect(res.status).to.equal(422);
    const body = (await res.json()) as { issues: Array<{ path: string; message: string }> };
    expect(body.issues).to.have.length(1);
    expect(body.issues[0]!.path).to.match(/^apis\[0\]\.operations\[\d+\]\.path$/);
    expect(body.issues[0]!.message).to.match(
      /^must be a path starting with "\/".* \(from paths\.\/pet\/find by status\.get of the OpenAPI document\)$/,
    );
    expect(await versions()).to.equal(before);
  });

  it('refuses a document pointing outside itself (422, where, nothing saved, the refusal audited)', async () => {
    const before = await versions();
    const outside = yaml.replace("$ref: '#/components/schemas/Tag'", "$ref: 'http://127.0.0.1:9/tag.json'");
    const res = await ada.json(IMPORT, 'POST', { text: outside });
    expect(res.status).to.equal(422);
    const body = (await res.json()) as { issues: Array<{ path: string; message: string; file: string }> };
    expect(body.issues).to.deep.equal([
      {
        path: 'components.schemas.Pet.properties.tags.items.$ref',
        file: 'OpenAPI document',
        message:
          '"http://127.0.0.1:9/tag.json" points outside the document: the import fetches and reads nothing, give one document with its references inside (#/components/...)',
      },
    ]);
    expect(await versions()).to.equal(before);
    const audit = (await (await ada.fetch('/gateway/operators/audit?limit=5')).json()) as { items: AuditEntry[] };
    expect(audit.items[0]).to.include({ action: 'operations.import', result: 'refused', status: 422 });
    expect((await ada.json(IMPORT, 'POST', { text: 42 })).status).to.equal(400);
    expect((await ada.json(`${API}/apis/Ente/Nope/1/operations/openapi`, 'POST', { text: yaml })).status).to.equal(404);
  });

  it('a viewer may not import, not even a dry run (403)', async () => {
    expect((await vera.json(IMPORT, 'POST', { text: yaml, dryRun: true })).status).to.equal(403);
    expect((await vera.json(IMPORT, 'POST', { text: yaml })).status).to.equal(403);
  });
});
