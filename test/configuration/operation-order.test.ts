/**
 * Where imported operations go: before the first operation whose template would take their
 * requests. The index gives the order the pairwise rule gives, on generated lists; a vendor
 * document of 6,000 operations is ordered without comparing every pair; a document written so
 * that thousands of templates overlap is refused instead of comparing them all.
 */
import { expect } from 'chai';
import type { OperationConfig } from '../../src/config/types.js';
import { mergeOperations } from '../../src/configuration/openapi.js';
import { MAX_ORDERING_WORK, OperationOrder, OperationOrderError } from '../../src/configuration/operation-order.js';
import { compilePathTemplate } from '../../src/url/template.js';

/** The rule as written once: every pair compared, first shadowing operation in list order. */
function pairwise(initial: OperationConfig[], placed: OperationConfig[]): string[] {
  const list = [...initial];
  const shadows = (a: OperationConfig, b: OperationConfig) =>
    a.method === b.method && compilePathTemplate(a.path).test(b.path) && !compilePathTemplate(b.path).test(a.path);
  for (const op of placed) {
    const index = list.findIndex((other) => shadows(other, op));
    if (index === -1) list.push(op);
    else list.splice(index, 0, op);
  }
  return list.map((op) => op.name);
}

const ops = (n: number, path: (i: number) => string, method: (i: number) => OperationConfig['method'] = () => 'GET'): OperationConfig[] =>
  Array.from({ length: n }, (_, i) => ({ name: `op${i}`, method: method(i), path: path(i) }));

describe('the order of imported operations', () => {
  it('places each as comparing every pair would, on generated lists (trailing slashes, equal templates, several methods)', () => {
    let seed = 11;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const segments = ['pet', '{id}', '{x}', 'a-{y}', '{a}-{b}', 'find', 'a-b', '', '{p}.json', 'x.json'];
    const generate = (n: number, prefix: string): OperationConfig[] =>
      Array.from({ length: n }, (_, i) => ({
        name: `${prefix}${i}`,
        method: random(3) === 0 ? 'POST' : 'GET',
        path: `/${Array.from({ length: 1 + random(3) }, () => segments[random(segments.length)]).join('/')}`,
      }));
    let moved = 0;
    for (let round = 0; round < 300; round++) {
      const initial = generate(random(6), 'own');
      const placed = generate(1 + random(12), 'new');
      const order = new OperationOrder(initial);
      for (const op of placed) order.place(op);
      const expected = pairwise(initial, placed);
      expect(
        order.operations.map((op) => op.name),
        JSON.stringify([...initial, ...placed].map((op) => `${op.method} ${op.path}`)),
      ).to.deep.equal(expected);
      if (expected.join() !== [...initial, ...placed].map((op) => op.name).join()) moved++;
    }
    // The generator is not vacuous: many rounds put an operation before another.
    expect(moved).to.be.above(50);
  });

  it('orders a vendor document of 6,000 operations, each concrete path before the template that would take it', function () {
    // Comparing every pair took 27 s here (a regular expression compiled twice per pair).
    this.timeout(10_000);
    const imported = Array.from({ length: 2000 }, (_, i) => [
      { name: `get${i}`, method: 'GET' as const, path: `/resource${i}/{id}`, from: '' },
      { name: `delete${i}`, method: 'DELETE' as const, path: `/resource${i}/{id}`, from: '' },
      { name: `search${i}`, method: 'GET' as const, path: `/resource${i}/search`, from: '' },
    ]).flat();
    const { operations, changes } = mergeOperations([], imported, 'replace');
    expect(changes.added).to.have.length(6000);
    const names = operations.map((op) => op.name);
    expect(names.slice(0, 6)).to.deep.equal(['search0', 'get0', 'delete0', 'search1', 'get1', 'delete1']);
    for (let i = 0; i < 2000; i++) expect(names.indexOf(`search${i}`), `search${i}`).to.be.below(names.indexOf(`get${i}`));
  });

  it('refuses a document of thousands of overlapping templates rather than compare them all', function () {
    this.timeout(10_000);
    for (const hostile of [ops(20_000, (i) => `/a{x}${i}`), ops(20_000, (i) => `/{p${i}}`), ops(20_000, (i) => `/{a}/{b}-{c}${i}`)]) {
      expect(() =>
        mergeOperations(
          [],
          hostile.map((op) => ({ ...op, from: '' })),
          'replace',
        ),
      )
        .to.throw(OperationOrderError)
        .with.property('code', 'ERR_OPERATIONS_OVERLAP');
    }
    // The bound is far above what an API with the usual shapes needs.
    expect(MAX_ORDERING_WORK).to.be.at.least(1_000_000);
  });

  it("keeps an API's own operations in their order in a merge, and places before the first that would take the requests", () => {
    const own = [
      { name: 'any', method: 'GET' as const, path: '/{anything}' },
      { name: 'pets', method: 'GET' as const, path: '/pets/{id}' },
    ];
    const imported = [
      { name: 'find', method: 'GET' as const, path: '/pets/find', from: '' },
      { name: 'root', method: 'GET' as const, path: '/health', from: '' },
      { name: 'slash', method: 'GET' as const, path: '/pets/find/', from: '' },
    ];
    expect(mergeOperations(own, imported, 'merge').operations.map((op) => op.name)).to.deep.equal(['root', 'any', 'slash', 'find', 'pets']);
  });
});
