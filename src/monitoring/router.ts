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
import { problem } from '../admin/problem.js';
import { throttleFor, type LoginThrottleOptions } from '../admin/throttle.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import type { TransactionStore } from '../record/types.js';
import { CONSOLE_CSS, CONSOLE_ICON, CONSOLE_JS, consoleHtml } from './page.js';
import { parseExportRequest, streamExport } from './export.js';
import { parseTransactionQuery, parseTransactionStatsQuery, QueryError } from './query.js';

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

const CONSOLE_KEYS = optionKeys<MonitoringConsoleOptions>({ store: true, basicAuth: true, authenticate: true, realm: true, loginThrottle: true, language: true });

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

  router.get('/api/transactions', (req: Request, res: Response) => {
    let query;
    try {
      query = parseTransactionQuery(req.query as Record<string, unknown>);
    } catch (error) {
      if (error instanceof QueryError) return problem(res, 400, 'Bad Request', error.message);
      throw error;
    }
    Promise.resolve()
      .then(() => store.query(query))
      .then(
        (page) => {
          res.json(page.next === undefined ? { items: page.items } : { items: page.items, next: page.next });
        },
        (error: unknown) => {
          // A store refuses a cursor it did not produce with a TypeError: the client's mistake.
          if (error instanceof TypeError) return problem(res, 400, 'Bad Request', 'Invalid cursor');
          log('query failed: %O', error);
          problem(res, 500, 'Internal Server Error', 'The transaction store could not be read');
        },
      );
  });

  router.get('/api/export', (req: Request, res: Response) => {
    let query;
    let request;
    try {
      const params = req.query as Record<string, unknown>;
      // The filters and window of the list (no paging of its own: the export pages itself).
      const { limit: _limit, cursor: _cursor, ...rest } = params;
      query = parseTransactionQuery(rest);
      request = parseExportRequest(params);
    } catch (error) {
      if (error instanceof QueryError) return problem(res, 400, 'Bad Request', error.message);
      throw error;
    }
    streamExport(res, store, query, request).catch((error: unknown) => {
      if (res.headersSent) {
        if (!res.destroyed) log('export cut short: %O', error);
        res.destroy();
        return;
      }
      if (error instanceof TypeError) return problem(res, 400, 'Bad Request', 'Invalid filter');
      log('export failed: %O', error);
      problem(res, 500, 'Internal Server Error', 'The transaction store could not be read');
    });
  });

  router.get('/api/stats', (req: Request, res: Response) => {
    if (typeof store.stats !== 'function') {
      return problem(res, 501, 'Not Implemented', 'This transaction store computes no statistics (it has no stats method)');
    }
    let query;
    try {
      query = parseTransactionStatsQuery(req.query as Record<string, unknown>);
    } catch (error) {
      if (error instanceof QueryError) return problem(res, 400, 'Bad Request', error.message);
      throw error;
    }
    Promise.resolve()
      .then(() => store.stats!(query))
      .then(
        (stats) => void res.json(stats),
        (error: unknown) => {
          // A store refuses a window it cannot compute (too many buckets) with a TypeError.
          if (error instanceof TypeError) return problem(res, 400, 'Bad Request', error.message);
          log('stats failed: %O', error);
          problem(res, 500, 'Internal Server Error', 'The transaction store could not be read');
        },
      );
  });

  // The page's search box: a transaction id, or a message id (whatever the time), in one call that
  // answers 200 either way: { transaction?, messageIds: transaction ids carrying that message id }.
  router.get('/api/find/:id', (req: Request, res: Response) => {
    const id = String(req.params['id']);
    Promise.resolve()
      .then(() => Promise.all([store.get(id), store.query({ messageId: id, limit: 20 })]))
      .then(
        ([record, page]) => {
          res.json({ ...(record === undefined ? {} : { transaction: record }), messageIds: page.items.map((r) => r.id) });
        },
        (error: unknown) => {
          log('find failed: %O', error);
          problem(res, 500, 'Internal Server Error', 'The transaction store could not be read');
        },
      );
  });

  router.get('/api/transactions/:id', (req: Request, res: Response) => {
    const id = String(req.params['id']);
    Promise.resolve()
      .then(() => store.get(id))
      .then(
        (record) => {
          if (record === undefined) return problem(res, 404, 'Not Found', 'No transaction with this id');
          res.json(record);
        },
        (error: unknown) => {
          log('get failed: %O', error);
          problem(res, 500, 'Internal Server Error', 'The transaction store could not be read');
        },
      );
  });

  return router;
}
