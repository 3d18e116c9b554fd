/**
 * The console page's assets, embedded as strings so that the package needs no copy step and
 * the host no build step.
 *
 * @module
 */
export { CONSOLE_HTML, CONSOLE_ICON, consoleHtml, type ConsoleLanguage } from './page-html.js';
export { CONSOLE_CSS } from './page-css.js';
export { CONSOLE_JS } from './page-js.js';
