/**
 * What src/ cites, it cites inside the repository. A comment or string that leans on documented
 * behaviour names a guide, `docs/<page>.md`, and when useful a section of it in quotes right after:
 * `(docs/gateway.md, "What a request goes through")` or `docs/console.md ("Diagnostics")`. This
 * test fails on a citation of a document the repository does not hold ("spec 4.2", "the spec's",
 * DESIGN), on a page of docs/ that does not exist, and on a section that is not a heading of its
 * page (compared without backticks, so "apis[]" is the heading `apis[]`).
 */
import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = path.join(ROOT, 'src');
const DOCS = path.join(ROOT, 'docs');

/** Citations of a document kept outside the repository: numbered sections, "the spec", DESIGN. */
const OUTSIDE: ReadonlyArray<readonly [what: string, pattern: RegExp]> = [
  ['a numbered section of a spec', /\bspec\s+\d+(?:\.\d+)*/gi],
  ['"the spec"', /\bthe spec(?![\w-])/gi],
  ['"spec\'s"', /\bspec's/gi],
  ['DESIGN as a document', /\bDESIGN\b/g],
];

/** `docs/<page>.md`, then optionally `, "Section"` or ` ("Section")`. */
const DOCS_CITATION = /(?<![\w./-])docs\/([\w.-]+\.md)`?(?:(?:,\s*|\s+\(\s*)"([^"]+)")?/g;

interface SourceFile {
  /** Relative to the repository, with `/`. */
  name: string;
  text: string;
}

async function sourceFiles(dir: string): Promise<SourceFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map(async (e): Promise<SourceFile[]> => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return sourceFiles(full);
      const text = await readFile(full, 'utf8');
      // Binary files (images, fonts) cite nothing.
      return text.includes('\u0000') ? [] : [{ name: path.relative(ROOT, full).split(path.sep).join('/'), text }];
    }),
  );
  return nested.flat();
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/** A comment's lines as one line: a citation broken over two comment lines is read whole. */
function joinCommentLines(text: string): string {
  return text.replace(/[ \t]*\r?\n[ \t]*(?:\*(?!\/)|\/\/)?[ \t]*/g, ' ');
}

/** Headings and quoted sections compare without backticks and with single spaces. */
function normalized(heading: string): string {
  return heading.replaceAll('`', '').replace(/\s+/g, ' ').trim();
}

/** The headings of a Markdown page, outside fenced code blocks (where `#` starts a shell comment). */
function headings(markdown: string): Set<string> {
  const found = new Set<string>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0];
      else if (marker[0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) found.add(normalized(heading));
  }
  return found;
}

describe('architecture: citations in src/', () => {
  let files: SourceFile[];
  const pages = new Map<string, Set<string> | undefined>();

  /** The headings of docs/<page>, or `undefined` when there is no such page. */
  async function pageHeadings(page: string): Promise<Set<string> | undefined> {
    if (!pages.has(page)) {
      const text = await readFile(path.join(DOCS, page), 'utf8').catch(() => undefined);
      pages.set(page, text === undefined ? undefined : headings(text));
    }
    return pages.get(page);
  }

  before(async () => {
    files = await sourceFiles(SRC);
    expect(files.length, 'files under src/').to.be.greaterThan(100);
  });

  it('cite no document outside the repository ("spec 4.2", "the spec\'s", DESIGN)', () => {
    const found: string[] = [];
    for (const { name, text } of files) {
      for (const [what, pattern] of OUTSIDE) {
        for (const m of text.matchAll(pattern)) found.push(`${name}:${lineOf(text, m.index)}: ${what}: "${m[0]}"`);
      }
    }
    expect(found, 'cite the guide under docs/ that states it, or say it in the comment').to.deep.equal([]);
  });

  it('name pages of docs/ that exist, and sections that are headings of those pages', async () => {
    const broken: string[] = [];
    let citations = 0;
    let sections = 0;
    for (const { name, text } of files) {
      for (const m of joinCommentLines(text).matchAll(DOCS_CITATION)) {
        citations++;
        const [citation, page, section] = m as unknown as [string, string, string | undefined];
        const known = await pageHeadings(page);
        if (known === undefined) broken.push(`${name}: ${citation}: no such page`);
        else if (section !== undefined) {
          sections++;
          if (!known.has(normalized(section))) broken.push(`${name}: ${citation}: no heading "${section}" in docs/${page}`);
        }
      }
    }
    expect(broken).to.deep.equal([]);
    // The patterns still find what src/ cites (a pattern that matched nothing would pass on anything).
    expect(citations, 'citations of docs/ pages').to.be.greaterThan(20);
    expect(sections, 'citations of a section').to.be.greaterThan(10);
  });
});
