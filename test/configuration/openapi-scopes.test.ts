/**
 * Scope rules from an OpenAPI document's security, through the configuration API on the example
 * gateway (createGateway + serveGateway, the demo authorization server issuing the tokens, the
 * petstore backend behind): the import's dry run tells which recorded calls the imported rules
 * would refuse, by operation; once imported and in force, a token short of every alternative is
 * answered 403 insufficient_scope naming one way in its challenge and all of them in the body, and
 * a token holding either alternative reaches the backend.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { OperatorClient, PASSWORDS, startPetstore, type PetstoreGateway } from './helpers.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore-scopes-3.0.yaml');
const API = '/gateway/configuration/api';
const IMPORT = `${API}/apis/Ente/PetStore/1/operations/openapi`;
const DESCRIPTION = 'The request requires higher privileges than provided by the access token';

interface Refusals {
  operation?: string;
  ways: string[][];
  checked: number;
  refused: number;
  newlyRefused: number;
  sample: Array<{ id: string; method: string; path: string; clientId?: string; scopes: string[]; status: number | null }>;
}
interface ScopeWhatIf {
  window: { minutes: number; from: number; to: number };
  read: number;
  noToken: number;
  checked: number;
  refused: number;
  newlyRefused: number;
  noOperation: number;
  operations: Refusals[];
}

describe('configuration API: scope rules from an OpenAPI document', function () {
  this.timeout(60_000);
  let pet: PetstoreGateway;
  let ada: OperatorClient;
  let yaml: string;

  before(async () => {
    [pet, yaml] = await Promise.all([startPetstore(), readFile(FIXTURE, 'utf8')]);
    ada = new OperatorClient(pet.server.adminUrl!);
    await ada.signIn('ada', PASSWORDS.ada);
  });
  after(() => pet?.stop());

  /** A call with a token of `client` holding `scope` (none: no scope asked); resolves once it is recorded. */
  async function call(method: string, resource: string, client: 'client1' | 'client2', scope?: string) {
    const token = await pet.as.issueToken(client, `${client}-secret`, scope === undefined ? {} : { scope });
    const res = await fetch(`${pet.api}${resource}`, { method, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    const text = await res.text();
    const id = res.headers.get('gateway-transaction-id')!;
    for (let i = 0; i < 100 && (await pet.server.gateway.store.get(id)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    return { status: res.status, challenge: res.headers.get('www-authenticate'), text, id };
  }

  it('the dry run lists the recorded calls the imported rules would refuse, by operation, and saves nothing', async () => {
    const readOnly = await call('GET', '/pet/10', 'client1', 'read');
    const writeOnly = await call('GET', '/pet/10', 'client2', 'write');
    const noScope = await call('GET', '/pet/10', 'client2');
    const deleting = await call('DELETE', '/pet/424242', 'client1', 'read');
    expect([readOnly.status, writeOnly.status, noScope.status]).to.deep.equal([200, 200, 200]);

    const before = await pet.onDisk();
    const res = await ada.json(IMPORT, 'POST', { text: yaml, dryRun: true, whatIf: { minutes: 10 } });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { dryRun: boolean; operations: Array<Record<string, unknown>>; scopeWhatIf: ScopeWhatIf };
    expect(body.dryRun).to.equal(true);
    expect(body.operations.find((o) => o['name'] === 'getPetById')).to.deep.include({ scopeAlternatives: [['read'], ['write']] });
    const what = body.scopeWhatIf;
    expect(what.window.minutes).to.equal(10);
    expect(what).to.include({ read: 4, noToken: 0, checked: 4, refused: 2, newlyRefused: 2, noOperation: 0 });
    expect(what.operations.map((o) => [o.operation, o.checked, o.refused])).to.deep.equal([
      ['getPetById', 3, 1],
      ['deletePet', 1, 1],
    ]);
    const [get, del] = what.operations;
    expect(get!.ways).to.deep.equal([['read'], ['write']]);
    expect(get!.sample).to.have.length(1);
    expect(get!.sample[0]).to.include({ id: noScope.id, method: 'GET', path: '/pet/10', clientId: 'client2', status: 200 });
    expect(get!.sample[0]!.scopes).to.deep.equal([]);
    expect(del!.ways).to.deep.equal([['write'], ['admin']]);
    expect(del!.sample[0]).to.include({ id: deleting.id, method: 'DELETE', path: '/pet/424242' });
    expect(del!.sample[0]!.scopes).to.deep.equal(['read']);
    expect(await pet.onDisk()).to.deep.equal(before);

    expect((await ada.json(IMPORT, 'POST', { text: yaml, dryRun: true, whatIf: { minutes: 0 } })).status).to.equal(400);
    expect((await ada.json(IMPORT, 'POST', { text: yaml, dryRun: true, whatIf: 'yes' })).status).to.equal(400);
  });

  it("refuses a document whose rule is larger than a rule may be (422 naming the operation's field and where it came from), saving nothing", async () => {
    const before = await pet.onDisk();
    const many = Array.from({ length: 65 }, (_, i) => `s${i}`).join(', ');
    const large = yaml.replace('        - petstore_auth: [write]\n          oidc: [openid]', `        - petstore_auth: [${many}]`);
    expect(large).to.not.equal(yaml);
    const res = await ada.json(IMPORT, 'POST', { text: large });
    expect(res.status).to.equal(422);
    const body = (await res.json()) as { issues: Array<{ path: string; message: string }> };
    expect(body.issues.map((issue) => issue.path)).to.satisfy((paths: string[]) =>
      paths.some((path) => /^apis\[0\]\.operations\[\d+\]\.requiredScopes$/.test(path)),
    );
    expect(body.issues.find((issue) => issue.path.endsWith('.requiredScopes'))!.message).to.match(
      /^must be an array of at most 64 scopes \(from paths\.\/pet\.put of the OpenAPI document\)$/,
    );
    expect(await pet.onDisk()).to.deep.equal(before);
  });

  it('imported and in force: 403 insufficient_scope for a token short of both alternatives, 200 from the backend for either', async () => {
    const res = await ada.json(IMPORT, 'POST', { text: yaml });
    expect(res.status).to.equal(200);
    const saved = (await pet.onDisk()).apis[0]!.operations!;
    expect(saved.find((o) => o.name === 'getPetById')).to.deep.equal({
      name: 'getPetById',
      method: 'GET',
      path: '/pet/{petId}',
      scopeAlternatives: [['read'], ['write']],
    });
    expect(saved.find((o) => o.name === 'updatePet')).to.deep.include({ requiredScopes: ['write', 'openid'] });
    expect((await ada.fetch('/gateway/admin/reset-caches', { method: 'POST' })).status).to.equal(200);

    const refused = await call('GET', '/pet/10', 'client2');
    expect(refused.status).to.equal(403);
    expect(refused.challenge).to.equal(
      `Bearer realm="DemoIdP", error="insufficient_scope", scope="read", error_description="${DESCRIPTION}"`,
    );
    expect(JSON.parse(refused.text)).to.deep.include({
      gateway_status: 'protocol:GATEWAY-1368',
      scope_alternatives: [['read'], ['write']],
    });
    for (const scope of ['read', 'write', 'read write']) {
      const passed = await call('GET', '/pet/10', 'client1', scope);
      expect(passed.status, scope).to.equal(200);
      // The petstore backend's pet: the call went through.
      expect(JSON.parse(passed.text), scope).to.include({ id: 10, name: 'doggie' });
    }
    // The record of the refusal: outcome INSUFFICIENT_SCOPE.
    expect((await pet.server.gateway.store.get(refused.id))?.outcome.code).to.equal('INSUFFICIENT_SCOPE');
  });
});
