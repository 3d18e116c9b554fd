/**
 * The admin router: the runtime tool ResetAllCaches over HTTP, behind credentials.
 *
 * @module
 */
import { Router, type Request, type Response, type NextFunction } from 'express';
import { countsWithoutCredentials } from '../admin/credentials.js';
import { adminAuthenticator, type AdminAuthOptions } from '../admin/gate.js';
import { guard } from '../admin/guard.js';
import { problem } from '../admin/problem.js';
import { throttleFor } from '../admin/throttle.js';
import { logger } from '../log.js';
import type { ClusterResetResult } from '../cluster/reset.js';
import type { ClusterStatus } from '../cluster/cluster.js';
import type { DependencyState } from '../observability/dependencies.js';
import { setAuditDetail } from '../admin/audit-detail.js';
import { ConfigError } from '../config/errors.js';
import { operatorOf } from '../operators/access.js';
import type { ConfigCacheState } from '../config/cache.js';

const log = logger('gateway');

export type { AdminAuthOptions } from '../admin/gate.js';

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
  /**
   * With Redis: what every instance did, collected for up to 2 s (this one first), and the live
   * instances that did not answer.
   */
  cluster?: ClusterResetResult;
}

/** The configuration cache's state plus the APIs it serves. */
export interface GatewayConfigState extends ConfigCacheState {
  /** The registered APIs now served, `<provider>/<api>/v<version>`. */
  apis: string[];
}

/**
 * Whose cached token results `POST <admin>/forget` drops: exactly one of a subject or a client id.
 */
export type AdminForgetSelector =
  | {
      /** The token's subject (`sub`). */
      subject: string;
      /** Not with `subject`. */
      clientId?: undefined;
    }
  | {
      /** The token's client id (`azp`, else `client_id`). */
      clientId: string;
      /** Not with `clientId`. */
      subject?: undefined;
    };

/** What the admin router needs from the gateway. */
export interface AdminTarget {
  /** Runs ResetAllCaches: reloads the configuration and clears compiled policies and token results. */
  resetAllCaches(options?: { by?: string }): Promise<ResetResult>;
  /**
   * Forgets the cached token results (valid and refused) of one subject or one client id, in every
   * token policy, and says how many it dropped. Without it, `POST <admin>/forget` is not served.
   */
  forget?(selector: AdminForgetSelector): Promise<number> | number;
  /** The configuration cache's state, for `GET <admin>/status`. */
  readonly configState: GatewayConfigState;
  /** The instances of the gateway and their Redis, for `GET <admin>/status` (with Redis only). */
  clusterStatus?(): Promise<ClusterStatus | undefined>;
  /** Each dependency's state, for `GET <admin>/status`. */
  dependencies?(): Record<string, DependencyState>;
}

/** Longest `POST /forget` body read, in bytes: a selector is one short string. */
const MAX_FORGET_BODY = 4096;

/** Longest subject or client id accepted by `POST /forget`. */
const MAX_SELECTOR_LENGTH = 1024;

/** The body of `POST /forget`, as JSON text: at most {@link MAX_FORGET_BODY} bytes, else `undefined`. */
function readBody(req: Request): Promise<string | undefined> {
  // A host that mounted a JSON body parser before the router already read the stream.
  const parsed = req as Request & { _body?: boolean };
  if (parsed._body === true) return Promise.resolve(JSON.stringify(req.body));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (value: string | undefined): void => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORGET_BODY) {
        // Not read further: the answer closes the connection (see below).
        req.pause();
        settle(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => settle(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => settle(undefined));
  });
}

/** The selector of a `POST /forget` body, or why it is refused.  @internal */
export function parseForgetSelector(text: string): AdminForgetSelector | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object';
  const keys = Object.keys(body);
  if (keys.length !== 1 || (keys[0] !== 'subject' && keys[0] !== 'clientId'))
    return 'the body must have exactly one member, subject or clientId';
  const key = keys[0];
  const value = (body as Record<string, unknown>)[key];
  if (typeof value !== 'string' || value === '' || value.length > MAX_SELECTOR_LENGTH) {
    return `${key} must be a non-empty string of at most ${MAX_SELECTOR_LENGTH} characters`;
  }
  return key === 'subject' ? { subject: value } : { clientId: value };
}

/** The instances a cluster reset did not reach or could not apply on, for the audit entry; none: `undefined`. */
function clusterFailures(result: ResetResult): string | undefined {
  const cluster = result.cluster;
  if (cluster === undefined) return undefined;
  const parts = [
    ...cluster.nodes.filter((n) => !n.applied).map((n) => `${n.nodeId}: not applied${n.error === undefined ? '' : `: ${n.error}`}`),
    ...(cluster.missing.length > 0 ? [`no answer from ${cluster.missing.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/**
 * The admin router (mounted by `createGateway` at `<basePath>/admin`):
 *
 * - `POST /reset-caches`: ResetAllCaches. 200 with a {@link ResetResult}; 422 problem+json with the
 *   configuration's `issues` when the new configuration is invalid (the previous one stays in force).
 * - `POST /forget` (when the target has `forget`): forgets the cached token results of one caller,
 *   for an incident, without flushing everyone's. JSON body `{ "subject": "…" }` or
 *   `{ "clientId": "…" }` (`Content-Type: application/json`, at most 4 KiB); 200
 *   `{ "forgotten": <n> }`, 400 problem+json for any other body.
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
    countsWithoutCredentials: countsWithoutCredentials(options),
    realm,
    throttle: throttleFor(credentials, options.loginThrottle, 'adminRouter: options.loginThrottle'),
    // Every admin route answers JSON.
    isJson: () => true,
    log,
  });
  const router = Router();
  const authorize = options.authorize;
  router.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', 'no-store');
    gate(
      req,
      res,
      authorize === undefined ? next : () => (authorize(req) ? next() : problem(res, 403, 'Forbidden', 'your role does not allow this')),
    );
  });
  router.post('/reset-caches', (req: Request, res: Response) => {
    const by = operatorOf(req)?.username;
    target.resetAllCaches(by === undefined ? undefined : { by }).then(
      (result) => {
        const failed = clusterFailures(result);
        if (failed !== undefined) setAuditDetail(res, failed);
        res.status(200).json(result);
      },
      (err: unknown) => {
        if (err instanceof ConfigError) {
          // The audit entry says why, as the answer does: each issue's path and message (no value).
          setAuditDetail(res, `${err.message}; the previous configuration stays in force`);
          problem(res, 422, 'Unprocessable Content', `${err.message}; the previous configuration stays in force`, { issues: err.issues });
          return;
        }
        log('reset failed: %s', (err as Error)?.message ?? String(err));
        // An unexpected error's message may hold anything (a connection string): only its kind and code.
        const code = (err as { code?: unknown } | null)?.code;
        setAuditDetail(res, `reset failed: ${(err as Error)?.name ?? 'error'}${typeof code === 'string' ? ` ${code}` : ''}`);
        problem(res, 500, 'Internal Server Error', 'reset failed');
      },
    );
  });
  const forget = target.forget;
  if (forget !== undefined) {
    router.post('/forget', (req: Request, res: Response) => {
      const type = String(req.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (type !== 'application/json') {
        problem(res, 400, 'Bad Request', 'the body must be application/json: { "subject": "..." } or { "clientId": "..." }');
        return;
      }
      readBody(req)
        .then(async (text) => {
          if (text === undefined) {
            res.setHeader('Connection', 'close');
            problem(res, 400, 'Bad Request', `the body must be at most ${MAX_FORGET_BODY} bytes`);
            return;
          }
          const selector = parseForgetSelector(text);
          if (typeof selector === 'string') {
            problem(res, 400, 'Bad Request', selector);
            return;
          }
          const forgotten = await forget.call(target, selector);
          log('forgot %d cached token results of %s', forgotten, selector.subject !== undefined ? 'a subject' : 'a client id');
          res.status(200).json({ forgotten });
        })
        .catch((err: unknown) => {
          log('forget failed: %s', (err as Error)?.message ?? String(err));
          if (!res.headersSent) problem(res, 500, 'Internal Server Error', 'forget failed');
        });
    });
  }
  router.get('/status', (_req: Request, res: Response) => {
    const state = target.configState;
    const body = {
      loadedAt: state.loadedAt,
      expiresAt: state.expiresAt,
      apis: state.apis,
      lastError: state.lastError === undefined ? undefined : { message: state.lastError.message, issues: state.lastError.issues },
      ...(target.dependencies === undefined ? {} : { dependencies: target.dependencies() }),
    };
    if (target.clusterStatus === undefined) {
      res.status(200).json(body);
      return;
    }
    target.clusterStatus().then(
      (cluster) => res.status(200).json(cluster === undefined ? body : { ...body, cluster }),
      (err: unknown) => {
        log('cluster status failed: %s', (err as Error)?.message ?? String(err));
        res.status(200).json(body);
      },
    );
  });
  return router;
}
