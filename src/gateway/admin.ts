/**
 * The admin router: the runtime tool ResetAllCaches over HTTP, behind credentials.
 *
 * @module
 */
import { Router, type Request, type Response, type NextFunction } from 'express';
import { credentialCheck, type BasicCredentials, type ConsoleAuthenticate } from '../record/console/auth.js';
import { checkRealm, guard } from '../record/console/guard.js';
import { LoginThrottle, throttleFor, type LoginThrottleOptions } from '../record/console/throttle.js';
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
  /**
   * Throttle of failed logins per client address: past `maxFailures` within `windowMs`, 429 with
   * `Retry-After` without looking at the credentials. Shared by the admin routes and the console
   * protected by the same `basicAuth` (or `authenticate`). Default 5 failures per 60 s.
   */
  loginThrottle?: LoginThrottleOptions;
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

/**
 * Turns {@link AdminAuthOptions} into one check, validating every option (credentials, realm,
 * throttle); throws `TypeError` naming the option, and when no credentials are given.
 */
export function adminAuthenticator(options: AdminAuthOptions, name: string): ConsoleAuthenticate {
  const check = credentialCheck(options, name);
  if (options.realm !== undefined) checkRealm(options.realm, `${name}.realm`);
  // Validated here so that createGateway fails at start on a bad throttle setting.
  if (options.loginThrottle !== undefined) new LoginThrottle(options.loginThrottle, `${name}.loginThrottle`);
  return check;
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
 * Every route requires credentials (401 with a Basic challenge otherwise) and the
 * `X-Gateway-Console` header; `POST` also an `Origin` equal to the router's own and
 * `Sec-Fetch-Site: same-origin` when the browser sends them (403 `ERR_ADMIN_ORIGIN_REFUSED`
 * otherwise): a form or a script of another page, same site included, cannot make a logged-in
 * browser reset the caches. Failed logins are throttled per client address (429
 * `ERR_TOO_MANY_REQUESTS`). Serve it on an origin of its own (`gateway.adminRouter` on its own
 * listener): see docs/security.md.
 */
export function adminRouter(target: AdminTarget, options: AdminAuthOptions): Router {
  const check = adminAuthenticator(options, 'adminRouter: options');
  const realm = options.realm ?? 'Gateway admin';
  const credentials = (options.authenticate ?? options.basicAuth) as object;
  const gate = guard({
    check,
    countsWithoutCredentials: options.authenticate !== undefined,
    realm,
    throttle: throttleFor(credentials, options.loginThrottle, 'adminRouter: options.loginThrottle'),
    // Every admin route answers JSON.
    isJson: () => true,
    log,
  });
  const router = Router();
  router.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', 'no-store');
    gate(req, res, next);
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
