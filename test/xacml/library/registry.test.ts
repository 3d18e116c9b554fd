import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { canonicalDataType, dataTypes } from '../../../src/xacml/datatypes/index.js';
import { EVALUATOR_FUNCTIONS, functions } from '../../../src/xacml/functions/index.js';

interface Manifest {
  cases: { id: string; functions: string[]; datatypes: string[] }[];
}

const manifest = JSON.parse(
  readFileSync(new URL('../../../../shared/xacml2-conformance/manifest.json', import.meta.url), 'utf8'),
) as Manifest;

describe('xacml library registries', () => {
  it('cover every function the conformance suite uses (or leave it to the evaluator)', () => {
    const used = new Set(manifest.cases.flatMap((c) => c.functions));
    const missing = [...used].filter((f) => !functions.has(f) && !EVALUATOR_FUNCTIONS.has(f));
    expect(missing).to.deep.equal([]);
    expect(used.size).to.be.greaterThan(100);
  });

  it('cover every data type the conformance suite uses', () => {
    const used = new Set(manifest.cases.flatMap((c) => c.datatypes));
    expect([...used].filter((d) => !dataTypes.has(d))).to.deep.equal([]);
  });

  it('key each data type by its canonical URI and its aliases', () => {
    const alias = 'http://www.w3.org/2001/XMLSchema#dayTimeDuration';
    const canonical = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration';
    expect(canonicalDataType(alias)).to.equal(canonical);
    expect(dataTypes.get(alias)).to.equal(dataTypes.get(canonical));
    expect(dataTypes.get(alias)!.id).to.equal(canonical);
    expect(canonicalDataType('urn:x')).to.equal('urn:x');
    expect(dataTypes.size).to.equal(18);
  });

  it('declare each function under its own id with consistent arity', () => {
    for (const [id, f] of functions) {
      expect(f.id).to.equal(id);
      expect(f.minArgs).to.be.at.least(f.variadic ? 0 : f.params.length);
      if (!f.variadic) expect(f.minArgs).to.equal(f.params.length);
      for (const p of [...f.params, f.returns, ...(f.variadic ? [f.variadic] : [])]) {
        expect(dataTypes.get(p.dataType)?.id, `${id} uses ${p.dataType}`).to.equal(p.dataType);
      }
    }
  });
});
