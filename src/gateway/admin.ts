/**
 * The admin router: the runtime tool ResetAllCaches over HTTP, behind credentials.
 *
 * @module
 */
import { Router, type Request, type Response, type NextFunction } from 'express';
import { basicCredentials, fixedCredentials, type BasicCredentials, type ConsoleAuthenticate } from '../record/console/auth.js';
import { logger } from '../log.js';
import { ConfigError } from './config/errors.js';
import type { ConfigCacheState } from './config/cache.js';

const log = logger('gateway');

/** How admin (and console) requests are authenticated. There is no open default. */
export interface AdminAuthOptions {
  /** One user allowed in with HTTP Basic (compared in constant time). */
  basicAuth?: BasicCredentials;
  /** Your own check, used instead of `basicAuth` when both are given. */
  authenticate?: ConsoleAuthenticate;
  /** Realm of the `WWW-Authenticate: Basic` challenge. Default `Gateway admin`. */
  realm?: string;
}

/** What a successful ResetAllCaches reports. */
export interface ResetResult {
  /** Epoch ms of the configuration now in force. */
  loadedAt: number;
  /** Epoch ms at which it expires. */
  expiresAt?: number;
  /** The registered APIs now served, `<provider>/<api>/v<version>`. */
  apis: string[];
  /** Token results forgotten. */
  tokenResultsCleared: number;
}

/** The configuration cache's state plus the APIs it serves. */
export interface GatewayConfigState extends ConfigCacheState {
  /** The registered APIs now served, `<provider>/<api>/v<version>`. */
  apis: string[];
}

/** What the admin router needs from the gateway. */
export interface AdminTarget {
  /** Runs ResetAllCaches: reloads the configuration and clears compiled policies and token results. */
  resetAllCaches(): Promise<ResetResult>;
  /** The configuration cache's state, for `GET <admin>/status`. */
  readonly configState: GatewayConfigState;
}

/** Turns {@link AdminAuthOptions} into one check; throws `TypeError` when none is given. */
export function adminAuthenticator(options: AdminAuthOptions, name: string): ConsoleAuthenticate {
  if (options === null || typeof options !== 'object') throw new TypeError(`${name} must be an object`);
  if (options.authenticate !== undefined) {
    if (typeof options.authenticate !== 'function') throw new TypeError(`${name}.authenticate must be a function`);
    return options.authenticate;
  }
  const basic = options.basicAuth;
  if (basic === undefined) throw new TypeError(`${name} needs basicAuth or authenticate (the admin routes have no open default)`);
  if (typeof basic?.username !== 'string' || basic.username === '' || typeof basic.password !== 'string' || basic.password === '') {
    throw new TypeError(`${name}.basicAuth must have a non-empty username and password`);
  }
  return fixedCredentials(basic);
}

function problem(res: Response, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): void {
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ type: `https://httpstatuses.com/${status}`, title, status, detail, ...extra }));
}

/**
 * The admin router (mounted by `createGateway` at `<basePath>/admin`):
 *
 * - `POST /reset-caches`: ResetAllCaches. 200 with a {@link ResetResult}; 422 problem+json with the
 *   configuration's `issues` when the new configuration is invalid (the previous one stays in force).
 * - `GET /status`: when the configuration in force was loaded, when it expires, its APIs and the
 *   last load failure.
 *
 * Every route requires credentials (401 with a Basic challenge otherwise). Cross-site requests
 * (`Sec-Fetch-Site: cross-site`) are refused, so a page elsewhere cannot make a logged-in browser
 * reset the caches.
 */
export function adminRouter(target: AdminTarget, options: AdminAuthOptions): Router {
  const authenticate = adminAuthenticator(options, 'admin');
  const realm = options.realm ?? 'Gateway admin';
  const router = Router();
  router.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', 'no-store');
    if (req.headers['sec-fetch-site'] === 'cross-site') {
      problem(res, 403, 'Forbidden', 'cross-site requests to the admin routes are refused');
      return;
    }
    Promise.resolve()
      .then(() => authenticate(req, basicCredentials(req)))
      .then(
        (ok) => {
          if (ok === true) return next();
          res.setHeader('WWW-Authenticate', `Basic realm="${realm.replace(/["\\]/g, '')}", charset="UTF-8"`);
          problem(res, 401, 'Unauthorized', 'credentials required');
        },
        (err: unknown) => {
          log('admin authenticate failed: %s', (err as Error)?.message ?? String(err));
          problem(res, 500, 'Internal Server Error', 'authentication failed');
        },
      );
  });
  router.post('/reset-caches', (_req: Request, res: Response) => {
    target.resetAllCaches().then(
      (result) => res.status(200).json(result),
      (err: unknown) => {
        if (err instanceof ConfigError) {
          problem(res, 422, 'Unprocessable Content', `${err.message}; the previous configuration stays in force`, { issues: err.issues });
          return;
        }
        log('reset failed: %s', (err as Error)?.message ?? String(err));
        problem(res, 500, 'Internal Server Error', 'reset failed');
      },
    );
  });
  router.get('/status', (_req: Request, res: Response) => {
    const state = target.configState;
    res.status(200).json({
      loadedAt: state.loadedAt,
      expiresAt: state.expiresAt,
      apis: state.apis,
      lastError: state.lastError === undefined ? undefined : { message: state.lastError.message, issues: state.lastError.issues },
    });
  });
  return router;
}
