/**
 * The scope what-if's check (the worker's part): recorded calls routed to the operations after an
 * import as the gateway routes them, and their token's scopes checked against the API's rule and
 * the operation's; the resource path read from a recorded URL.
 */
import { expect } from 'chai';
import { resourcePathOf, scopeWhatIf, type ScopeWhatIfRows } from '../../src/configuration/scope-what-if.js';
import type { OperationConfig } from '../../src/config/types.js';

interface Call {
  id: string;
  method: string;
  path: string;
  scopes: string;
  status?: number;
  errorCode?: string;
  operation?: string;
  clientId?: string;
}

/** Calls in the compact form `readScopeWhatIfRecords` writes. */
function rows(calls: Call[]): ScopeWhatIfRows {
  const strings: string[] = [];
  const n = (value: string | undefined): number => {
    if (value === undefined) return -1;
    const at = strings.indexOf(value);
    return at === -1 ? strings.push(value) - 1 : at;
  };
  const numbers = calls.flatMap((c, i) => [
    1_000 + i,
    c.status ?? Number.NaN,
    n(c.id),
    n(c.method),
    n(c.path),
    n(c.operation),
    -1,
    n(c.clientId),
    n(c.scopes),
    n(c.errorCode),
  ]);
  return { strings, rows: Float64Array.from(numbers) };
}

const operations: OperationConfig[] = [
  { name: 'findPets', method: 'GET', path: '/pet/findByStatus' },
  { name: 'getPet', method: 'GET', path: '/pet/{id}', scopeAlternatives: [['read'], ['admin']] },
  { name: 'deletePet', method: 'DELETE', path: '/pet/{id}', requiredScopes: ['write'] },
];

describe('scope what-if', () => {
  it('routes each call as the gateway does (HEAD to GET, concrete before templated) and counts the refusals by operation', () => {
    const report = scopeWhatIf({ requiredScopes: ['api'] }, operations, {
      ...rows([
        { id: 'a', method: 'GET', path: '/pet/1', scopes: 'api read', status: 200 },
        { id: 'b', method: 'HEAD', path: '/pet/1', scopes: 'api', status: 200, clientId: 'c2' },
        { id: 'c', method: 'GET', path: '/pet/2', scopes: 'api', status: 403, errorCode: 'ERR_INSUFFICIENT_SCOPE' },
        { id: 'd', method: 'GET', path: '/pet/findByStatus', scopes: '', status: 200 },
        { id: 'e', method: 'DELETE', path: '/pet/3', scopes: 'api write', status: 204 },
        { id: 'f', method: 'POST', path: '/pet', scopes: 'api', status: 200 },
      ]),
    });
    expect(report).to.include({ checked: 5, refused: 3, newlyRefused: 2, noOperation: 1 });
    expect(report.operations.map((o) => [o.operation, o.checked, o.refused, o.newlyRefused])).to.deep.equal([
      ['findPets', 1, 1, 1],
      ['getPet', 3, 2, 1],
    ]);
    const getPet = report.operations[1]!;
    expect(getPet.ways).to.deep.equal([
      ['api', 'read'],
      ['api', 'admin'],
    ]);
    expect(getPet.sample).to.deep.equal([
      { id: 'b', time: 1001, method: 'HEAD', path: '/pet/1', clientId: 'c2', scopes: ['api'], status: 200 },
      { id: 'c', time: 1002, method: 'GET', path: '/pet/2', scopes: ['api'], status: 403 },
    ]);
    expect(report.operations[0]!.ways).to.deep.equal([['api']]);
  });

  it('an API without operations: every call is checked against the API rule; a rule with an empty alternative refuses none', () => {
    const calls = rows([
      { id: 'a', method: 'PATCH', path: '/x', scopes: 'b' },
      { id: 'b', method: 'GET', path: '/', scopes: 'a' },
    ]);
    const report = scopeWhatIf({ scopeAlternatives: [['a'], ['c']] }, undefined, calls);
    expect(report).to.include({ checked: 2, refused: 1, noOperation: 0 });
    expect(report.operations).to.have.length(1);
    expect(report.operations[0]).to.not.have.property('operation');
    expect(report.operations[0]!.sample[0]).to.include({ id: 'a', status: null });
    expect(scopeWhatIf({ scopeAlternatives: [['a'], []] }, undefined, calls)).to.include({ checked: 2, refused: 0 });
  });

  it('keeps at most 5 calls of each operation as its sample, the newest first', () => {
    const calls = rows(Array.from({ length: 8 }, (_, i) => ({ id: `c${i}`, method: 'DELETE', path: `/pet/${i}`, scopes: '' })));
    const report = scopeWhatIf({}, operations, calls);
    expect(report.operations[0]!.refused).to.equal(8);
    expect(report.operations[0]!.sample.map((s) => s.id)).to.deep.equal(['c0', 'c1', 'c2', 'c3', 'c4']);
  });

  it('reads the resource path of a recorded URL below its API, query left out', () => {
    const api = { provider: 'Ente', name: 'PetStore', version: 1 };
    expect(resourcePathOf('/gateway/Ente/PetStore/v1/pet/1?x=1', api)).to.equal('/pet/1');
    expect(resourcePathOf('/gateway/Ente/PetStore/v1', api)).to.equal('/');
    expect(resourcePathOf('/gateway/Ente/PetStore/v1?q', api)).to.equal('/');
    // v10 is another API; the path is found past it.
    expect(resourcePathOf('/Ente/PetStore/v10/Ente/PetStore/v1/a', api)).to.equal('/a');
    expect(resourcePathOf('/gateway/Ente/PetStore/v10/pet', api)).to.equal(undefined);
  });
});
