/**
 * The configuration console page's router: the page, its script, style and icon, public (they
 * hold no data: the script signs in and reads everything through the API) and under the strict
 * CSP of every answer of the admin listener's pages.
 *
 * The page's files (`page/`: `configuration.html`, `configuration.css`, `configuration.js`, the
 * message table `texts.json`) are read once, when this module is loaded. Its style sheet is the
 * monitoring console's followed by its own rules; its icon is the one both consoles share
 * (`page-assets/icon.svg`).
 *
 * @module
 */
import { Router, type Request, type Response } from 'express';
import { fillPlaceholders, moduleFile, PAGE_ICON, readPageFile } from '../page-assets/files.js';
import { readPageTexts, type PageLanguage } from '../page-assets/texts.js';
import { CONSOLE_CSS } from '../monitoring/page.js';
import { CONSOLE_REQUEST_HEADER } from '../admin/guard.js';
import { pageHeaders } from '../admin/headers.js';
import { CSRF_HEADER } from '../operators/sessions.js';

const file = (name: string): string => readPageFile(moduleFile(`configuration/page/${name}`));

const CONFIGURATION_HTML = file('configuration.html');
const CONFIGURATION_CSS = `${CONSOLE_CSS}\n${file('configuration.css')}`;
const CONFIGURATION_JS = fillPlaceholders(
  file('configuration.js'),
  {
    TEXTS: JSON.stringify(readPageTexts(moduleFile('configuration/page/texts.json'))),
    CONSOLE_HEADER: CONSOLE_REQUEST_HEADER,
    CSRF_HEADER,
  },
  'configuration.js',
);

/**
 * The page router, mounted at `<basePath>/configuration`. `language` is the gateway's message
 * language: the page opens in it when the browser asks for neither Italian nor English (the
 * monitoring console's rule).
 */
export function configurationPage(language: PageLanguage): Router {
  const html = fillPlaceholders(CONFIGURATION_HTML, { LANGUAGE: language }, 'configuration.html');
  const router = Router();
  router.use(pageHeaders);
  router.get('/', (req: Request, res: Response) => {
    // The page loads its assets and API by relative URLs: it must be addressed with a trailing slash.
    const path = (req.originalUrl ?? req.url).split('?')[0] ?? '';
    if (!path.endsWith('/')) {
      res.redirect(301, `${path.slice(path.lastIndexOf('/') + 1)}/`);
      return;
    }
    res.type('html').send(html);
  });
  router.get('/configuration.js', (_req: Request, res: Response) => void res.type('text/javascript').send(CONFIGURATION_JS));
  router.get('/configuration.css', (_req: Request, res: Response) => void res.type('text/css').send(CONFIGURATION_CSS));
  router.get('/favicon.svg', (_req: Request, res: Response) => void res.type('image/svg+xml').send(PAGE_ICON));
  return router;
}
