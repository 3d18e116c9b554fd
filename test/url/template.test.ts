/**
 * Operation path templates matched segment by segment, without backtracking: what matches, how a
 * segment of several parameters splits, the edge cases (dot values, empty values, trailing `/`,
 * braces that are not parameters), and the same answers as an exhaustive search over every split
 * on generated templates and paths.
 */
import { expect } from 'chai';
import { compilePathTemplate } from '../../src/url/template.js';

/** Every way of splitting `text` by the template's segment: the reference the matcher must agree with. */
function exhaustive(template: string, path: string): boolean {
  const match = (t: string, p: string): boolean => {
    const ts = t.slice(1).split('/');
    const ps = p.slice(1).split('/');
    return p.startsWith('/') && ts.length === ps.length && ts.every((segment, i) => segmentMatches(segment, ps[i]!));
  };
  return (
    template.startsWith('/') && (match(template, path) || (path.length > 1 && path.endsWith('/') && match(template, path.slice(0, -1))))
  );
}

function segmentMatches(segment: string, text: string): boolean {
  // Pieces: literal texts and parameters, as the template syntax reads them.
  const pieces = segment.split(/(\{[^}/]+\})/).map((piece) => (/^\{[^}/]+\}$/.test(piece) ? null : piece));
  const go = (i: number, at: number): boolean => {
    if (i === pieces.length) return at === text.length;
    const piece = pieces[i];
    if (piece !== null) return text.startsWith(piece!, at) && go(i + 1, at + piece!.length);
    for (let end = at + 1; end <= text.length; end++) {
      const value = text.slice(at, end);
      if (value !== '.' && value !== '..' && go(i + 1, end)) return true;
    }
    return false;
  };
  return go(0, 0);
}

describe('operation path templates', () => {
  it('a literal template matches its path, with or without one trailing slash, case-sensitively', () => {
    const pet = compilePathTemplate('/pet');
    expect(['/pet', '/pet/'].map((p) => pet.test(p))).to.deep.equal([true, true]);
    expect(['/pets', '/pet/x', '/Pet', '/pe', '/pet//', 'pet', ''].map((p) => pet.test(p))).to.deep.equal([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('a parameter takes one whole segment, never an empty value, `.` or `..`', () => {
    const byId = compilePathTemplate('/pet/{petId}');
    expect(byId.values('/pet/10')).to.deep.equal(['10']);
    expect(byId.values('/pet/10/')).to.deep.equal(['10']);
    expect(byId.values('/pet/...')).to.deep.equal(['...']);
    expect(byId.values('/pet/.x')).to.deep.equal(['.x']);
    for (const path of ['/pet', '/pet/', '/pet//', '/pet/.', '/pet/..', '/pet/../', '/pet/10/x', '/pet/a/b'])
      expect(byId.test(path), path).to.equal(false);
  });

  it('splits `{year}-{month}-{day}`: each parameter but the last takes the shortest value, the last the rest', () => {
    const days = compilePathTemplate('/days/{year}-{month}-{day}');
    expect(days.values('/days/2024-01-02')).to.deep.equal(['2024', '01', '02']);
    expect(days.values('/days/2024-01-02-03')).to.deep.equal(['2024', '01', '02-03']);
    expect(days.values('/days/-----')).to.deep.equal(['-', '-', '-']);
    // `..` is no value: the first place of `-` that leaves a valid year is taken instead.
    expect(days.values('/days/..-x-01-02')).to.deep.equal(['..-x', '01', '02']);
    for (const path of [
      '/days/2024-01',
      '/days/2024--02',
      '/days/-01-02',
      '/days/2024-01-',
      '/days/---',
      '/days/..-01-02',
      '/days/2024-./-02',
    ]) {
      expect(days.test(path), path).to.equal(false);
    }
  });

  it('literal text before, between and after parameters; adjacent parameters; braces that are not parameters are literal', () => {
    expect(compilePathTemplate('/files/{name}.json').values('/files/a.b.json')).to.deep.equal(['a.b']);
    expect(compilePathTemplate('/files/{name}.json').test('/files/.json')).to.equal(false);
    expect(compilePathTemplate('/v{version}/items').values('/v2/items')).to.deep.equal(['2']);
    expect(compilePathTemplate('/v{version}/items').test('/v/items')).to.equal(false);
    expect(compilePathTemplate('/{a}{b}').values('/xyz')).to.deep.equal(['x', 'yz']);
    expect(compilePathTemplate('/{a}{b}').values('/.yz')).to.deep.equal(['.y', 'z']);
    expect(compilePathTemplate('/{a}{b}').test('/x')).to.equal(false);
    expect(compilePathTemplate('/{a}-{b}').values('/a-b-c')).to.deep.equal(['a', 'b-c']);
    expect(compilePathTemplate('/x/{}').test('/x/{}')).to.equal(true);
    expect(compilePathTemplate('/x/{}').test('/x/a')).to.equal(false);
    expect(compilePathTemplate('/x/{a').test('/x/{a')).to.equal(true);
    expect(compilePathTemplate('/x/{{a}').values('/x/q')).to.deep.equal(['q']);
    expect(compilePathTemplate('/x/a}{b}').values('/x/a}q')).to.deep.equal(['q']);
    // Names do not change what matches.
    expect(compilePathTemplate('/x/{one}').test('/x/{two}')).to.equal(true);
  });

  it('the root template, a trailing-slash template, and a template that does not start with `/`', () => {
    const root = compilePathTemplate('/');
    expect(['/', '//'].map((p) => root.test(p))).to.deep.equal([true, true]);
    expect(root.test('/x')).to.equal(false);
    const slash = compilePathTemplate('/pets/');
    expect(['/pets/', '/pets//'].map((p) => slash.test(p))).to.deep.equal([true, true]);
    expect(slash.test('/pets')).to.equal(false);
    expect(compilePathTemplate('pets').test('pets')).to.equal(false);
    expect(compilePathTemplate('').test('/')).to.equal(false);
  });

  it('a path of thousands of `-` gets its answer: no match with a segment too many, a match with the right count', () => {
    const days = compilePathTemplate('/days/{year}-{month}-{day}');
    const dashes = '-'.repeat(100_000);
    expect(days.test(`/days/${dashes}/x`)).to.equal(false);
    expect(days.test(`/days/${dashes}x`)).to.equal(true);
    expect(days.values(`/days/${dashes}`)).to.deep.equal(['-', '-', '-'.repeat(100_000 - 4)]);
    expect(compilePathTemplate('/{a}-{b}-{c}-{d}-{e}!').test(`/${dashes}`)).to.equal(false);
    // A long literal between parameters, searched without rescanning.
    const literal = 'ab'.repeat(500);
    expect(compilePathTemplate(`/{a}${literal}c{b}`).test(`/${'ab'.repeat(50_000)}x`)).to.equal(false);
    expect(compilePathTemplate(`/{a}${literal}c{b}`).test(`/x${'ab'.repeat(50_000)}cx`)).to.equal(true);
  });

  it('answers as an exhaustive search over every split does, on generated templates and paths', () => {
    // A small alphabet that makes delimiters, dots and braces collide often.
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const templatePieces = ['{p}', '{q}', '-', '.', 'a', 'ab', '/', '{', '}'];
    const pathChars = ['-', '.', 'a', 'b', '/', '{', '}', 'p'];
    let matched = 0;
    for (let i = 0; i < 3000; i++) {
      const template = `/${Array.from({ length: 1 + random(5) }, () => templatePieces[random(templatePieces.length)]).join('')}`;
      const compiled = compilePathTemplate(template);
      const chars = (n: number, from = pathChars): string => Array.from({ length: n }, () => from[random(from.length)]).join('');
      for (let j = 0; j < 10; j++) {
        // Half the paths are the template with values put in (some of them then altered), half random.
        let path =
          j % 2 === 0
            ? template.replace(/\{[pq]\}/g, () =>
                chars(
                  1 + random(3),
                  pathChars.filter((c) => c !== '/'),
                ),
              )
            : `/${chars(random(8))}`;
        if (j % 4 === 2) path = `${path.slice(0, 1 + random(path.length))}${chars(1)}${path.slice(1 + random(path.length))}`;
        const expected = exhaustive(template, path);
        expect(compiled.test(path), `${template} on ${path}`).to.equal(expected);
        if (expected) matched++;
      }
    }
    // The generator is not vacuous: many pairs match.
    expect(matched).to.be.above(5000);
  });
});
