/**
 * The consoles' page files as the server reads them: every text key the HTML and the scripts use
 * has its text in both languages, every outcome its colours in the style sheet, and a placeholder
 * or a text missing fails at start-up rather than in the browser.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { outcomeLabels } from '../../src/errors.js';
import { fillPlaceholders } from '../../src/page-assets/files.js';
import { readPageTexts } from '../../src/page-assets/texts.js';

const SRC = new URL('../../src/', import.meta.url);
const PAGES = [
  { folder: 'monitoring/page/', html: 'console.html', script: 'console.js' },
  { folder: 'configuration/page/', html: 'configuration.html', script: 'configuration.js' },
];

describe("the consoles' page files", () => {
  for (const page of PAGES) {
    it(`${page.folder}: every key of ${page.html} and ${page.script} has its text in Italian and English`, async () => {
      const texts = readPageTexts(new URL(`${page.folder}texts.json`, SRC));
      const html = await readFile(new URL(`${page.folder}${page.html}`, SRC), 'utf8');
      const script = await readFile(new URL(`${page.folder}${page.script}`, SRC), 'utf8');
      const keys = [
        ...[...html.matchAll(/data-i18n(?:-label)?="([^"]+)"/g)].map((m) => m[1]!),
        ...[...script.matchAll(/\bt\('([A-Za-z0-9_]+)'[,)]/g)].map((m) => m[1]!),
        'title',
      ];
      expect(keys.length).to.be.greaterThan(50);
      expect(keys.filter((key) => !(key in texts.it) || !(key in texts.en))).to.deep.equal([]);
    });
  }

  it('console.css colours every outcome of the catalogue: chart, badge and swatch', async () => {
    const css = await readFile(new URL('monitoring/page/console.css', SRC), 'utf8');
    for (const code of Object.keys(outcomeLabels)) {
      for (const rule of [`.o-${code}{fill:`, `.badge.o-${code}{`, `.swatch.o-${code}{`]) expect(css, rule).to.include(rule);
    }
  });

  it('fills placeholders once, and refuses one without a value or a value without its placeholder', () => {
    expect(fillPlaceholders("var A = __A__; h['__HEADER_NAME__'] = __A__;", { A: '{"x":"__B__"}', HEADER_NAME: 'X-H' }, 'p.js')).to.equal(
      'var A = {"x":"__B__"}; h[\'X-H\'] = {"x":"__B__"};',
    );
    expect(() => fillPlaceholders('var A = __A__;', {}, 'p.js')).to.throw('p.js: no value for the placeholder __A__');
    expect(() => fillPlaceholders('var A = 1;', { A: '1' }, 'p.js')).to.throw('p.js: no placeholder __A__');
  });

  it('refuses a message table with a text missing in one language', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'eag-texts-'));
    try {
      const file = path.join(dir, 'texts.json');
      await writeFile(file, JSON.stringify({ it: { a: 'A', b: 'B' }, en: { a: 'A', c: '' } }));
      expect(() => readPageTexts(pathToFileURL(file))).to.throw('no it text for c');
      await writeFile(file, JSON.stringify({ it: { a: 'A' } }));
      expect(() => readPageTexts(pathToFileURL(file))).to.throw('the languages must be it and en');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
