/**
 * The texts of the consoles' pages: one message table per page (`page/texts.json`, beside the
 * page's script), `{ "it": { key: text }, "en": { key: text } }` with the same keys in both
 * languages. The server fills the page's script with it (`var TEXTS = __TEXTS__;`); the script
 * looks a key up in the page's language, then in English, puts the texts on the elements marked
 * `data-i18n` (text) and `data-i18n-label` (`aria-label`), and fills `{name}` parameters. The
 * HTML's own texts are the English ones, what a page without script shows.
 *
 * @module
 */
import { readPageFile } from './files.js';

/** Languages of the consoles' pages. */
export type PageLanguage = 'it' | 'en';

/** A page's message table: its texts by language, then by key. */
export type PageTexts = Readonly<Record<PageLanguage, Readonly<Record<string, string>>>>;

const LANGUAGES: readonly PageLanguage[] = ['it', 'en'];

/**
 * The message table in the JSON file at `url`, checked: both languages, the same keys, every text
 * a non-empty string. Throws naming what is wrong (a key missing in one language fails at start-up).
 */
export function readPageTexts(url: URL): PageTexts {
  const name = url.pathname.split('/').slice(-3).join('/');
  const table = JSON.parse(readPageFile(url)) as unknown;
  if (table === null || typeof table !== 'object' || Array.isArray(table)) throw new Error(`${name}: not an object`);
  const languages = Object.keys(table);
  if (languages.length !== LANGUAGES.length || !LANGUAGES.every((language) => languages.includes(language))) {
    throw new Error(`${name}: the languages must be ${LANGUAGES.join(' and ')}, not ${languages.join(', ')}`);
  }
  const texts = table as Record<PageLanguage, Record<string, unknown>>;
  for (const language of LANGUAGES) {
    const entries = texts[language] as unknown;
    if (entries === null || typeof entries !== 'object' || Array.isArray(entries)) throw new Error(`${name}: ${language} is not an object`);
  }
  const keys = new Set(LANGUAGES.flatMap((language) => Object.keys(texts[language])));
  for (const language of LANGUAGES) {
    const missing = [...keys].filter((key) => typeof texts[language][key] !== 'string' || texts[language][key] === '');
    if (missing.length > 0) throw new Error(`${name}: no ${language} text for ${missing.join(', ')}`);
  }
  return texts as PageTexts;
}
