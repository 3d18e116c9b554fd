/**
 * The operators' routes on the admin listener (`<basePath>/operators`): sign-in to a session,
 * who is signed in (with the session's CSRF token), sign-out, and the audit log.
 *
 * @module
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { logger } from '../log.js';
import { countsWithoutCredentials } from '../admin/credentials.js';
import { csrfRefusal, guard } from '../admin/guard.js';
import { pageHeaders } from '../admin/headers.js';
import { problem } from '../admin/problem.js';
import { operatorOf, type OperatorAccess } from './access.js';
import type { AuditEntry } from './audit.js';
import { addressOf, BodyError, readJson } from './http.js';
import { MAX_PASSWORD_LENGTH } from './passwords.js';
import type { OperatorRole } from './roles.js';
import { USERNAME } from './users.js';

const log = logger('operators');

/** What `GET <basePath>/operators/session` answers. */
export interface SessionAnswer {
  /** Whether a session is open. */
  signedIn: boolean;
  /** The user name, when signed in. */
  username?: string;
  /** The role, when signed in. */
  role?: OperatorRole;
  /** The token every change of this session must carry in `X-CSRF-Token`. */
  csrfToken?: string;
}

/**
 * A guard in front of routes that need an operator: the shared throttle, the CSRF defence of the
 * admin routes, the credentials (session or Basic), then the role (403 otherwise, and for a
 * session's change without its CSRF token).
 */
export function operatorGate(
  access: OperatorAccess,
  needed: (req: Request) => OperatorRole,
): (req: Request, res: Response, next: NextFunction) => void {
  const gate = guard({
    check: access.authenticate,
    countsWithoutCredentials: countsWithoutCredentials({ authenticate: access.authenticate }),
    realm: access.realm,
    throttle: access.throttle,
    isJson: () => true,
    log,
  });
  return (req, res, next) =>
    gate(req, res, () => {
      if (!access.allows(req, needed(req))) {
        const operator = operatorOf(req);
        const why =
          operator !== undefined && operator.via === 'session' && req.method !== 'GET' && req.method !== 'HEAD'
            ? 'your role does not allow this, or the X-CSRF-Token header is missing'
            : 'your role does not allow this';
        problem(res, 403, 'Forbidden', why);
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          void access
            .record(req, {
              action: 'forbidden',
              target: `${req.method} ${req.baseUrl}${req.path}`,
              result: 'refused',
              status: 403,
              detail: why,
            })
            .catch(() => undefined);
        }
        return;
      }
      next();
    });
}

function auditCsv(entries: AuditEntry[]): string {
  const cell = (v: unknown): string => {
    const s = v === undefined || v === null ? '' : String(v);
    // A leading =, +, - or @ would be a formula in a spreadsheet.
    const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
    return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  const head = ['id', 'time', 'actor', 'role', 'address', 'action', 'target', 'result', 'status', 'detail'] as const;
  return [head.join(','), ...entries.map((e) => head.map((k) => cell(e[k])).join(','))].join('\r\n') + '\r\n';
}

/**
 * The operators' router:
 *
 * - `POST /session` `{ "username", "password" }`: signs in; sets the session cookie (`HttpOnly`,
 *   `SameSite=Strict`, `Secure` over TLS) and answers `{ username, role, csrfToken }`; 401 for
 *   wrong credentials (throttled per client address and per account like every login of the
 *   listener, 429 past it).
 * - `GET /session`: `{ signedIn, username?, role?, csrfToken? }`.
 * - `DELETE /session`: signs out (with the session's `X-CSRF-Token`).
 * - `GET /audit?limit=&before=`: audit entries newest first (`operator` and `admin`).
 * - `GET /audit/export?format=json|csv`: the audit log as a download.
 *
 * Every call needs the `X-Gateway-Console` header (and a same-origin `Origin` on changes), as the
 * admin routes do.
 */
export function operatorsRouter(access: OperatorAccess): Router {
  const router = Router();
  router.use(pageHeaders);

  router.post('/session', (req: Request, res: Response) => {
    const address = addressOf(req);
    const wait = access.throttle.blockedFor(address);
    if (wait > 0) {
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil(wait / 1000))));
      problem(res, 429, 'Too Many Requests', 'too many failed sign-ins: try again later');
      return;
    }
    const refusal = csrfRefusal(req, true);
    if (refusal !== undefined) {
      log('sign-in refused from %s: %s', address, refusal);
      problem(res, 403, 'Forbidden', 'request refused: send it from the configuration page or with the X-Gateway-Console header');
      return;
    }
    readJson(req, res, 4096)
      .then(async (body) => {
        const b = body as { username?: unknown; password?: unknown } | null;
        if (
          b === null ||
          typeof b !== 'object' ||
          typeof b.username !== 'string' ||
          typeof b.password !== 'string' ||
          b.password.length > MAX_PASSWORD_LENGTH
        ) {
          problem(res, 400, 'Bad Request', 'the body must be { "username": "...", "password": "..." }');
          return;
        }
        const tried = USERNAME.test(b.username) ? b.username : '(not a user name)';
        // The slot is taken before scrypt: concurrent guesses past the allowance are never verified.
        const attempt = access.throttle.reserve(address, b.username);
        if (typeof attempt === 'number') {
          res.setHeader('Retry-After', String(Math.max(1, Math.ceil(attempt / 1000))));
          problem(res, 429, 'Too Many Requests', 'too many failed sign-ins: try again later');
          return;
        }
        const identity = await access.users.verify(b.username, b.password);
        if (identity === undefined) {
          attempt.failed();
          log('failed sign-in from %s (%d of %d)', address, attempt.failures, access.throttle.maxFailures);
          await access.record(req, {
            actor: null,
            action: 'sign-in',
            target: tried,
            result: 'refused',
            status: 401,
            detail: 'wrong user name or password',
          });
          problem(res, 401, 'Unauthorized', 'wrong user name or password');
          return;
        }
        attempt.succeeded();
        const session = access.sessions.create(identity, req, res);
        await access.audit.append({ actor: identity.username, role: identity.role, address, action: 'sign-in', result: 'ok', status: 200 });
        const answer: SessionAnswer = { signedIn: true, username: session.username, role: session.role, csrfToken: session.csrfToken };
        res.status(200).json(answer);
      })
      .catch((err: unknown) => {
        if (err instanceof BodyError)
          return problem(
            res,
            err.status,
            err.status === 413 ? 'Content Too Large' : err.status === 415 ? 'Unsupported Media Type' : 'Bad Request',
            err.message,
          );
        log('sign-in failed: %s', (err as Error)?.message ?? String(err));
        if (!res.headersSent) problem(res, 500, 'Internal Server Error', 'sign-in failed');
      });
  });

  router.get('/session', (req: Request, res: Response) => {
    if (csrfRefusal(req, true) !== undefined) return problem(res, 403, 'Forbidden', 'send the X-Gateway-Console header');
    void access.sessionOf(req).then((session) => {
      const answer: SessionAnswer =
        session === undefined
          ? { signedIn: false }
          : { signedIn: true, username: session.username, role: session.role, csrfToken: session.csrfToken };
      res.status(200).json(answer);
    });
  });

  router.delete(
    '/session',
    operatorGate(access, () => 'viewer'),
    (req: Request, res: Response) => {
      access.sessions.destroy(req, res);
      void access.record(req, { action: 'sign-out', result: 'ok', status: 204 }).catch(() => undefined);
      res.status(204).end();
    },
  );

  const readers = operatorGate(access, () => 'operator');
  router.get('/audit', readers, (req: Request, res: Response) => {
    const limit = req.query['limit'] === undefined ? 100 : Number(req.query['limit']);
    const before = req.query['before'] === undefined ? undefined : Number(req.query['before']);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
      return problem(res, 400, 'Bad Request', 'limit must be a whole number from 1 to 1000');
    if (before !== undefined && (!Number.isSafeInteger(before) || before < 1))
      return problem(res, 400, 'Bad Request', 'before must be an entry id');
    access.audit.list({ limit, ...(before === undefined ? {} : { before }) }).then(
      (items) => res.status(200).json({ items }),
      (err: unknown) => {
        log('audit read failed: %s', (err as Error)?.message ?? String(err));
        problem(res, 500, 'Internal Server Error', 'the audit log could not be read');
      },
    );
  });
  router.get('/audit/export', readers, (req: Request, res: Response) => {
    const format = req.query['format'] ?? 'json';
    if (format !== 'json' && format !== 'csv') return problem(res, 400, 'Bad Request', 'format must be json or csv');
    access.audit.list({ limit: Number.MAX_SAFE_INTEGER }).then(
      (items) => {
        const stamp = new Date().toISOString().replace(/[:.]/g, '-');
        res.setHeader('Content-Disposition', `attachment; filename="gateway-audit-${stamp}.${format}"`);
        if (format === 'csv') res.status(200).type('text/csv').send(auditCsv(items));
        else
          res
            .status(200)
            .type('application/json')
            .send(JSON.stringify(items, null, 1));
      },
      (err: unknown) => {
        log('audit export failed: %s', (err as Error)?.message ?? String(err));
        problem(res, 500, 'Internal Server Error', 'the audit log could not be read');
      },
    );
  });
  return router;
}
