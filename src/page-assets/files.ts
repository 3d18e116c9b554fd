/**
 * The files of the consoles' pages (HTML, CSS, browser scripts, icon): read once, when the module
 * serving them is loaded (never per request), from a path relative to that module, so that the
 * same code reads them from `src/` under tsx and from `dist/` in the package (the build copies
 * every file of `src/` that is not TypeScript into `dist/`).
 *
 * A page file may hold placeholders, `__NAME__` (capital letters, digits, `_`), filled once by
 * {@link fillPlaceholders} with what only the server knows (the page's language, a header's name,
 * the outcome catalogue). In a script a placeholder stands for a value (`var TEXTS = __TEXTS__;`,
 * filled with JSON) or sits inside a string (`'__CONSOLE_HEADER__'`, filled with text).
 *
 * @module
 */
import { readFileSync } from 'node:fs';

/**
 * A file of the built package (or of the sources, under tsx) named from its root, `dist/` (or
 * `src/`): `moduleFile('monitoring/page/console.css')`. Resolved from this module, one folder
 * deep, so that the name holds in the modules and in the bundled command (dist/server/cli.js, one
 * folder deep too): never `./` from a module of another depth.
 */
export function moduleFile(path: string): URL {
  return new URL(`../${path}`, import.meta.url);
}

/** The text of a page file, e.g. `readPageFile(moduleFile('monitoring/page/console.css'))`. */
export function readPageFile(url: URL): string {
  return readFileSync(url, 'utf8');
}

const PLACEHOLDER = /__([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)__/g;

/**
 * `text` with every placeholder `__NAME__` replaced by `values[NAME]`, as given (JSON for a value,
 * plain text inside a string). Throws when the text holds a placeholder `values` does not fill, or
 * `values` names one the text does not hold: a renamed placeholder fails at start-up, not in the
 * browser.
 */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string>>, name: string): string {
  const used = new Set<string>();
  const filled = text.replace(PLACEHOLDER, (whole, key: string) => {
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    if (value === undefined) throw new Error(`${name}: no value for the placeholder ${whole}`);
    used.add(key);
    return value;
  });
  const unused = Object.keys(values).filter((key) => !used.has(key));
  if (unused.length > 0) throw new Error(`${name}: no placeholder __${unused.join('__, __')}__`);
  return filled;
}

/** The consoles' icon (`favicon.svg` of each page): a shield, so the browser asks the host for no `/favicon.ico`. */
export const PAGE_ICON = readPageFile(moduleFile('page-assets/icon.svg'));
