import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { canonicalDataType, dataTypes } from '../../../src/xacml/datatypes/index.js';
import { EVALUATOR_FUNCTIONS, functions } from '../../../src/xacml/functions/index.js';

interface Manifest {
  cases: { id: string; functions: string[]; datatypes: string[] }[];
}

const manifest = JSON.parse(readFileSync(new URL('../../fixtures/xacml2-conformance/manifest.json', import.meta.url), 'utf8')) as Manifest;

describe('xacml library registries', () => {
  it('cover every function the conformance suite uses (or leave it to the evaluator)', () => {
    const used = new Set(manifest.cases.flatMap((c) => c.functions));
    const missing = [...used].filter((f) => !functions.has(f) && !EVALUATOR_FUNCTIONS.has(f));
    assert.deepEqual(missing, []);
    assert.ok(used.size > 100);
  });

  it('cover every data type the conformance suite uses', () => {
    const used = new Set(manifest.cases.flatMap((c) => c.datatypes));
    assert.deepEqual(
      [...used].filter((d) => !dataTypes.has(d)),
      [],
    );
  });

  it('key each data type by its canonical URI and its aliases', () => {
    const alias = 'http://www.w3.org/2001/XMLSchema#dayTimeDuration';
    const canonical = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration';
    assert.equal(canonicalDataType(alias), canonical);
    assert.equal(dataTypes.get(alias), dataTypes.get(canonical));
    assert.equal(dataTypes.get(alias)!.id, canonical);
    assert.equal(canonicalDataType('urn:x'), 'urn:x');
    assert.equal(dataTypes.size, 18);
  });

  it('declare each function under its own id with consistent arity', () => {
    for (const [id, f] of functions) {
      assert.equal(f.id, id);
      assert.ok(f.minArgs >= (f.variadic ? 0 : f.params.length));
      if (!f.variadic) assert.equal(f.minArgs, f.params.length);
      for (const p of [...f.params, f.returns, ...(f.variadic ? [f.variadic] : [])]) {
        assert.equal(dataTypes.get(p.dataType)?.id, p.dataType, `${id} uses ${p.dataType}`);
      }
    }
  });
});
