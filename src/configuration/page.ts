/**
 * The configuration console page's router: the page, its script, style and icon, public (they
 * hold no data: the script signs in and reads everything through the API) and under the strict
 * CSP of every answer of the admin listener's pages.
 *
 * @module
 */
import { Router, type Request, type Response } from 'express';
import { CONSOLE_ICON } from '../record/console/page.js';
import { pageHeaders } from '../operators/http.js';
import { CONFIGURATION_CSS } from './page-css.js';
import { CONFIGURATION_HTML } from './page-html.js';
import { CONFIGURATION_JS } from './page-js.js';

/** The page router, mounted at `<basePath>/configuration`. */
export function configurationPage(): Router {
  const router = Router();
  router.use(pageHeaders);
  router.get('/', (req: Request, res: Response) => {
    // The page loads its assets and API by relative URLs: it must be addressed with a trailing slash.
    const path = (req.originalUrl ?? req.url).split('?')[0] ?? '';
    if (!path.endsWith('/')) {
      res.redirect(301, `${path.slice(path.lastIndexOf('/') + 1)}/`);
      return;
    }
    res.type('html').send(CONFIGURATION_HTML);
  });
  router.get('/configuration.js', (_req: Request, res: Response) => void res.type('text/javascript').send(CONFIGURATION_JS));
  router.get('/configuration.css', (_req: Request, res: Response) => void res.type('text/css').send(CONFIGURATION_CSS));
  router.get('/favicon.svg', (_req: Request, res: Response) => void res.type('image/svg+xml').send(CONSOLE_ICON));
  return router;
}
