/**
 * `monitoringConsole`: the console's router (web page, its script and style, JSON API).
 *
 * @module
 */
import express from 'express';
import type { NextFunction, Request, Response, Router } from 'express';
import { countsWithoutCredentials, credentialCheck, type BasicCredentials, type ConsoleAuthenticate } from '../admin/credentials.js';
import { checkRealm, guard } from '../admin/guard.js';
import { setPageHeaders } from '../admin/headers.js';
import { throttleFor, type LoginThrottleOptions } from '../admin/throttle.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import type { TransactionStore } from '../record/types.js';
import { CONSOLE_CSS, CONSOLE_ICON, CONSOLE_JS, consoleHtml } from './page.js';
import { apiRoutes } from './api.js';

const log = logger('console');

/** Options of {@link monitoringConsole}. One of `authenticate` and `basicAuth` is required. */
export interface MonitoringConsoleOptions {
  /** The store to read, usually `recordTransaction(...).store`. */
  store: TransactionStore;
  /** One user allowed in with HTTP Basic (compared in constant time). */
  basicAuth?: BasicCredentials;
  /** Your own check (sessions, SSO, several users...). Used instead of `basicAuth` when both are given. */
  authenticate?: ConsoleAuthenticate;
  /** Realm of the `WWW-Authenticate: Basic` challenge. Default `Gateway monitoring console`. */
  realm?: string;
  /**
   * Throttle of failed logins per client address (429 with `Retry-After` past `maxFailures`).
   * Routers protected by the same `basicAuth` object or `authenticate` function share one throttle
   * (as the admin router and the console of `createGateway` do): without this option the console
   * joins the one already made for its credentials, or makes a default one.
   */
  loginThrottle?: LoginThrottleOptions;
  /**
   * Language the page opens in, `it` (default, as the gateway's default message set) or `en`; the
   * page has a switch, and remembers an operator's choice in the browser.
   */
  language?: 'it' | 'en';
}

/** Paths of the page and its assets (lower case, without trailing slash), as the routes below match them. */
const PAGE_PATHS: ReadonlySet<string> = new Set(['', '/console.js', '/console.css', '/favicon.svg']);

const CONSOLE_KEYS = optionKeys<MonitoringConsoleOptions>({
  store: true,
  basicAuth: true,
  authenticate: true,
  realm: true,
  loginThrottle: true,
  language: true,
});

/**
 * The monitoring console: an Express router to mount where you want it (`createGateway` puts it
 * at `<basePath>/console` on `gateway.adminRouter`). Every route requires credentials.
 *
 * Serve it on an origin of its own (its own port or host): a page relayed through an API on the
 * same origin runs with the console's origin and an operator's cached credentials. Mounted in an app
 * that serves other content anyway, its JSON routes require the `X-Gateway-Console` header
 * ({@link CONSOLE_REQUEST_HEADER}), which the console page sends and a form or a page of another
 * origin cannot; failed logins are throttled per client address (see `loginThrottle`).
 *
 * - `GET /`: the web page (table with filters and auto-refresh, outcome chart, transaction detail),
 *   served with a strict Content-Security-Policy; its script and style are `GET /console.js` and
 *   `GET /console.css`. No build step, no external requests.
 * - `GET /api/transactions`: records newest first, `{ items, next }`; query parameters `from`, `to`,
 *   `outcome`, `api`, `subject`, `clientId`, `status`, `limit`, `cursor` (the previous page's `next`).
 * - `GET /api/stats`: the store's {@link TransactionStore.stats} over a window (`from`, `to`,
 *   default the last hour; `bucketMs`) with the list's filters: counts by bucket and outcome,
 *   totals, mean and p95 duration, top APIs, operations, clients, statuses and `gateway_status`.
 *   501 problem+json when the store has no `stats`.
 * - `GET /api/export`: the records of the list's filters and window, newest first, streamed as CSV
 *   (`format=csv`, `columns`) or JSON Lines (`format=jsonl`), at most `limit` rows (default 10,000,
 *   at most 100,000).
 * - `GET /api/find/:id`: what the search box opens: `{ transaction?, messageIds }`, the record with
 *   that transaction id and the ids of the records with that message id (at most 20).
 * - `GET /api/transactions/:id`: one record, or 404 problem+json.
 *
 * Answers 403 problem+json (`ERR_ADMIN_ORIGIN_REFUSED`) to an API call without the header, and 429
 * (`ERR_TOO_MANY_REQUESTS`, `Retry-After`) to an address with too many failed logins.
 *
 * @throws InvalidOptionError (a `TypeError`, code `ERR_INVALID_OPTION`) at creation when `store` is missing, neither `authenticate` nor `basicAuth`
 * is given (the console has no open default), or an option is malformed.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { MemoryTransactionStore, monitoringConsole, recordTransaction } from 'express-access-gateway';
 *
 * const store = new MemoryTransactionStore();
 * const app = express();
 * app.use('/console', monitoringConsole({ store, basicAuth: { username: 'admin', password: process.env.ADMIN_PASSWORD ?? '' } }));
 * app.use(recordTransaction({ store }));
 * ```
 */
export function monitoringConsole(options: MonitoringConsoleOptions): Router {
  const checks = optionChecks('monitoringConsole');
  checks.object(options, '');
  checks.known(options, '', CONSOLE_KEYS);
  const { store } = options;
  if (store === null || typeof store !== 'object' || typeof store.get !== 'function' || typeof store.query !== 'function') {
    checks.fail('store', 'must implement TransactionStore (get, query)');
  }
  const check = credentialCheck(options, 'monitoringConsole: options');
  const realm = checkRealm(options.realm ?? 'Gateway monitoring console', 'monitoringConsole: options.realm');
  const credentials = (options.authenticate ?? options.basicAuth) as object;
  const throttle = throttleFor(credentials, options.loginThrottle, 'monitoringConsole: options.loginThrottle');
  const language = options.language ?? 'it';
  if (language !== 'it' && language !== 'en') checks.fail('language', "must be 'it' or 'en'");
  const html = consoleHtml(language);
  const gate = guard({
    check,
    countsWithoutCredentials: countsWithoutCredentials(options),
    realm,
    throttle,
    // Everything but the page and its assets (navigations: no header possible; they hold no data).
    isJson: (req) => !PAGE_PATHS.has(req.path.toLowerCase().replace(/\/+$/, '')),
    log,
  });

  const router = express.Router();

  router.use((req: Request, res: Response, next: NextFunction) => {
    setPageHeaders(res);
    gate(req, res, next);
  });

  router.get('/', (req: Request, res: Response) => {
    // The page loads its assets and API by relative URLs: it must be addressed with a trailing slash.
    const path = (req.originalUrl ?? req.url).split('?')[0] ?? '';
    if (!path.endsWith('/')) {
      const last = path.slice(path.lastIndexOf('/') + 1);
      const search = (req.originalUrl ?? req.url).slice(path.length);
      res.redirect(301, `${last}/${search}`);
      return;
    }
    res.type('html').send(html);
  });
  router.get('/console.js', (_req: Request, res: Response) => {
    res.type('text/javascript').send(CONSOLE_JS);
  });
  router.get('/console.css', (_req: Request, res: Response) => {
    res.type('text/css').send(CONSOLE_CSS);
  });
  router.get('/favicon.svg', (_req: Request, res: Response) => {
    res.type('image/svg+xml').send(CONSOLE_ICON);
  });

  apiRoutes(router, store, log);

  return router;
}
