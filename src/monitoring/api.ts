/**
 * The monitoring console's JSON API, which its page reads: the records (a page of them, one, a
 * search by transaction or message id), their statistics and their export. Every route sits behind
 * the console's guard (see `monitoringConsole`).
 *
 * @module
 */
import type { Request, Response, Router } from 'express';
import { problem } from '../admin/problem.js';
import type { Logger } from '../log.js';
import type { TransactionStore } from '../record/types.js';
import { parseExportRequest, streamExport } from './export.js';
import { parseTransactionQuery, parseTransactionStatsQuery, QueryError } from './query.js';

/** Adds the API's routes (`/api/...`) to `router`, reading `store`; failures are logged on `log`. */
export function apiRoutes(router: Router, store: TransactionStore, log: Logger): void {
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
}
