/**
 * The console page's files (`page/`: `console.html`, `console.css`, `console.js`, the message
 * table `texts.json`), read once when this module is loaded and filled with what only the server
 * knows: the page's language, the outcome labels and groups, the texts, the export columns, the
 * console's header. The icon is the one both consoles share (`page-assets/icon.svg`).
 *
 * @module
 */
import { outcomeLabels } from '../errors.js';
import { fillPlaceholders, moduleFile, PAGE_ICON, readPageFile } from '../page-assets/files.js';
import { readPageTexts, type PageLanguage } from '../page-assets/texts.js';
import { outcomeGroups } from '../record/outcome-groups.js';
import { DEFAULT_EXPORT_COLUMNS, EXPORT_COLUMNS } from './export.js';
import { CONSOLE_REQUEST_HEADER } from '../admin/guard.js';

const file = (name: string): string => readPageFile(moduleFile(`monitoring/page/${name}`));

/** The console's icon (`GET <mount>/favicon.svg`). */
export const CONSOLE_ICON = PAGE_ICON;

/** The console page's CSS (`GET <mount>/console.css`). */
export const CONSOLE_CSS = file('console.css');

/** The console page's JavaScript (`GET <mount>/console.js`), with the outcome labels, groups and texts built in. */
export const CONSOLE_JS = fillPlaceholders(
  file('console.js'),
  {
    OUTCOME_LABELS: JSON.stringify(outcomeLabels),
    OUTCOME_GROUPS: JSON.stringify(outcomeGroups),
    TEXTS: JSON.stringify(readPageTexts(moduleFile('monitoring/page/texts.json'))),
    EXPORT_COLUMNS: JSON.stringify(Object.keys(EXPORT_COLUMNS)),
    DEFAULT_COLUMNS: JSON.stringify(DEFAULT_EXPORT_COLUMNS),
    CONSOLE_HEADER: CONSOLE_REQUEST_HEADER,
  },
  'console.js',
);

const html = file('console.html');

/** The console page (`GET <mount>/`) in `language` (the default of the page's language switch). */
export function consoleHtml(language: PageLanguage): string {
  return fillPlaceholders(html, { LANGUAGE: language }, 'console.html');
}
