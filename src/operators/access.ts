/**
 * Operator access to the admin listener: who a request is (a session cookie, or HTTP Basic for
 * scripts), what its role lets it do, the CSRF token of a session's changes, and the audit trail
 * of the admin routes.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { optionChecks, optionKeys } from '../options.js';
import { credentialBased, type BasicCredentials, type ConsoleAuthenticate } from '../admin/credentials.js';
import { throttleFor, type LoginThrottle } from '../admin/throttle.js';
import type { AdminAuthOptions } from '../admin/gate.js';
import { auditDetailOf } from '../admin/audit-detail.js';
import { MemoryAuditLog, watchedAuditLog, type AuditInput, type AuditLog, type AuditResult } from './audit.js';
import { addressOf } from './http.js';
import { RefusalAggregator } from './refusals.js';
import { roleAllows, type OperatorRole } from './roles.js';
import { SessionCookie } from './session-cookie.js';
import { csrfMatches, SessionStore, type Session, type SessionOptions } from './sessions.js';
import type { TrustFunction } from '../trust-proxy.js';
import { UserDirectory, type OperatorIdentity, type OperatorUser } from './users.js';

/** Operators of the admin listener: users with roles, sessions, the audit log. */
export interface OperatorsOptions {
  /**
   * A users file, `{ "users": [ { "username", "role", "passwordHash" } ] }` (hashes written by
   * `express-access-gateway users add` or `hashPassword`), read at creation and again when it
   * changes. The `admin.basicAuth` user (`ADMIN_PASSWORD`) is an `admin` beside them.
   */
  usersFile?: string;
  /** Users given in code (same shape as the file's). */
  users?: OperatorUser[];
  /** Where operator actions are logged. Default: a `MemoryAuditLog` (with `auditFile`, appended to it). */
  audit?: AuditLog;
  /** A JSON-lines file the default audit log appends every entry to. */
  auditFile?: string;
  /** Session lifetimes and cookie. */
  sessions?: SessionOptions;
  /**
   * Refusals of requests without valid credentials (failed sign-ins, anonymous changes) are not
   * logged one by one: the first of an address in `windowSeconds` is, then one entry at the end of
   * the window says how many followed (`refused-requests`). At most `maxAddresses` addresses are
   * counted apart; past them, the others share one count. Defaults: `60` s, `1000` addresses.
   */
  anonymousRefusals?: {
    /** The window from an address's first refusal, in seconds. Default `60`. */
    windowSeconds?: number;
    /** Most addresses counted apart within a window. Default `1000`. */
    maxAddresses?: number;
  };
}

/** What the audit trail did not write one by one, for the metrics. */
export interface AuditStats {
  /** Refusals of nobody counted into a summary entry instead of written one by one. */
  readonly aggregated: number;
  /** Entries the audit file did not receive, by reason (the default audit log only). */
  readonly dropped: Readonly<Record<string, number>>;
}

/** A request's operator: who, with which role, and how they proved it. */
export interface Operator extends OperatorIdentity {
  /** `session`: the sign-in cookie; `basic`: HTTP Basic (scripts); `custom`: the host's `admin.authenticate`. */
  readonly via: 'session' | 'basic' | 'custom';
  /** The session, when `via` is `session`. */
  readonly session?: Session;
}

const SAFE: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const operators = new WeakMap<Request, Operator>();
/** Requests an audit entry was made for (or counted): the trails add none of their own. */
const audited = new WeakSet<Request>();

/** The operator a request was authenticated as (by {@link OperatorAccess.authenticate}). */
export function operatorOf(req: Request): Operator | undefined {
  return operators.get(req);
}

const OPERATORS_KEYS = optionKeys<OperatorsOptions>({
  usersFile: true,
  users: true,
  audit: true,
  auditFile: true,
  sessions: true,
  anonymousRefusals: true,
});
const SESSION_KEYS = optionKeys<SessionOptions>({
  idleMinutes: true,
  maxHours: true,
  maxSessions: true,
  maxPerUser: true,
  secureCookie: true,
  secret: true,
  revocations: true,
});

/** The pieces the admin listener's routers share. */
export class OperatorAccess {
  /** The users. */
  readonly users: UserDirectory;
  /** The sessions. */
  readonly sessions: SessionStore;
  /** The audit log. */
  readonly audit: AuditLog;
  /** The failed-login throttle shared by every router of the listener. */
  readonly throttle: LoginThrottle;
  /** Realm of Basic challenges. */
  readonly realm: string;
  /** The check every router of the listener uses: a session, else Basic credentials, else the host's own check. */
  readonly authenticate: ConsoleAuthenticate;
  /** Whether a host's own `authenticate` decides (then a request without credentials counts as a failed login). */
  readonly custom: boolean;
  readonly #refusals: RefusalAggregator;
  /** The audit log itself (its counters), under the watch. */
  readonly #inner: AuditLog;

  /**
   * @param listener - the admin listener's base path (the cookie's scope) and whose
   *   `X-Forwarded-Proto` tells that a request came over TLS (`trustProxy`).
   */
  /**
   * @param watch - told of every entry the audit log receives (the gateway's structured log of
   *   sign-ins, refusals and actions); never fails an action.
   */
  constructor(
    admin: AdminAuthOptions,
    options: OperatorsOptions,
    listener: { basePath: string; trustProxy: TrustFunction },
    name: string,
    watch?: (entry: AuditInput) => void,
  ) {
    const check = optionChecks(name);
    check.known(check.object(options, 'operators', {}), 'operators', OPERATORS_KEYS);
    const sessions = check.known(
      check.object<SessionOptions>(options.sessions, 'operators.sessions', {}),
      'operators.sessions',
      SESSION_KEYS,
    );
    const secureCookie = sessions.secureCookie ?? 'auto';
    if (secureCookie !== 'auto' && typeof secureCookie !== 'boolean')
      check.fail('operators.sessions.secureCookie', 'must be true, false or "auto"');
    if (sessions.secret !== undefined && (typeof sessions.secret !== 'string' || sessions.secret.length < 32))
      check.fail('operators.sessions.secret', 'must be a string of at least 32 characters');
    const revocations = sessions.revocations;
    if (
      revocations !== undefined &&
      (revocations === null ||
        typeof revocations !== 'object' ||
        typeof revocations.publish !== 'function' ||
        typeof revocations.subscribe !== 'function')
    ) {
      check.fail('operators.sessions.revocations', 'must have publish(id, until) and subscribe(listener)');
    }
    if (revocations?.forget !== undefined && typeof revocations.forget !== 'function')
      check.fail('operators.sessions.revocations.forget', 'must be a function');
    if (revocations !== undefined && sessions.secret === undefined)
      check.fail('operators.sessions.revocations', 'needs operators.sessions.secret (only signed sessions are shared)');
    if (options.usersFile !== undefined) check.string(options.usersFile, 'operators.usersFile');
    if (options.users !== undefined && !Array.isArray(options.users))
      check.fail('operators.users', 'must be an array of { username, role, passwordHash }');
    this.users = new UserDirectory({
      ...(options.usersFile === undefined ? {} : { file: options.usersFile }),
      ...(options.users === undefined ? {} : { users: options.users }),
      ...(admin.basicAuth === undefined ? {} : { fixedAdmin: admin.basicAuth }),
    });
    const directory = this.users;
    this.sessions = new SessionStore(
      {
        idleMinutes: check.positive(sessions.idleMinutes, 'operators.sessions.idleMinutes', 30),
        maxHours: check.positive(sessions.maxHours, 'operators.sessions.maxHours', 12),
        maxPerUser: check.positive(sessions.maxPerUser, 'operators.sessions.maxPerUser', 10, true),
        ...(sessions.maxSessions === undefined
          ? {}
          : { maxSessions: check.positive(sessions.maxSessions, 'operators.sessions.maxSessions', 0, true) }),
        ...(sessions.secret === undefined ? {} : { secret: sessions.secret }),
      },
      new SessionCookie(listener.basePath, secureCookie, listener.trustProxy),
      (username) => directory.identityOf(username),
    );
    if (revocations !== undefined) this.sessions.share(revocations);
    const store = this.sessions;
    directory.onCredentialsChanged((username) => store.endAll(username));
    const audit = options.audit;
    if (
      audit !== undefined &&
      (audit === null || typeof audit !== 'object' || typeof audit.append !== 'function' || typeof audit.list !== 'function')
    ) {
      check.fail('operators.audit', 'must implement AuditLog (append, list)');
    }
    const inner =
      audit ?? new MemoryAuditLog(options.auditFile === undefined ? {} : { file: check.string(options.auditFile, 'operators.auditFile') });
    this.#inner = inner;
    this.audit = watch === undefined ? inner : watchedAuditLog(inner, watch);
    const refusals = check.object<{ windowSeconds?: number; maxAddresses?: number }>(
      options.anonymousRefusals,
      'operators.anonymousRefusals',
      {},
    );
    const log = this.audit;
    this.#refusals = new RefusalAggregator(
      {
        windowMs: check.positive(refusals.windowSeconds, 'operators.anonymousRefusals.windowSeconds', 60) * 1000,
        maxAddresses: check.positive(refusals.maxAddresses, 'operators.anonymousRefusals.maxAddresses', 1000, true),
      },
      (input) => void log.append(input).catch(() => undefined),
    );
    this.realm = admin.realm ?? 'Gateway admin';
    const own = admin.authenticate;
    this.custom = own !== undefined;
    const users = this.users;
    const authenticate: ConsoleAuthenticate = async (req: Request, credentials: BasicCredentials | undefined) => {
      const session = await this.sessionOf(req);
      if (session !== undefined) {
        operators.set(req, { username: session.username, role: session.role, via: 'session', session });
        return true;
      }
      if (own !== undefined) {
        // The host's own check admits admins: it knows no roles.
        if ((await own(req, credentials)) !== true) return false;
        operators.set(req, { username: credentials?.username ?? 'admin', role: 'admin', via: 'custom' });
        return true;
      }
      if (credentials === undefined) return false;
      const identity = await users.verify(credentials.username, credentials.password);
      if (identity === undefined) return false;
      operators.set(req, { ...identity, via: 'basic' });
      return true;
    };
    // Without a host check, a request without credentials is a browser's first visit, not a guess.
    this.authenticate = own === undefined ? credentialBased(authenticate) : authenticate;
    this.throttle = throttleFor(this.authenticate, admin.loginThrottle, `${name}: options.admin.loginThrottle`);
  }

  /** The request's session, its user and role as the users file says now (read again if it changed). */
  async sessionOf(req: Request): Promise<Session | undefined> {
    await this.users.refresh();
    return this.sessions.of(req);
  }

  /**
   * Whether the request's operator has at least `needed`, and, for a change made with a session,
   * sent the session's CSRF token.
   */
  allows(req: Request, needed: OperatorRole): boolean {
    const operator = operatorOf(req);
    if (operator === undefined || !roleAllows(operator.role, needed)) return false;
    if (SAFE.has(req.method) || operator.via !== 'session') return true;
    return csrfMatches(req, operator.session!);
  }

  /** The admin routes' rule: reading (status, metrics) for every role, changes (reset, forget) for operators. */
  readonly adminAuthorize = (req: Request): boolean => this.allows(req, SAFE.has(req.method) ? 'viewer' : 'operator');

  /** The options the admin router and the console are built with. */
  routerOptions(): AdminAuthOptions & { authenticate: ConsoleAuthenticate } {
    return { authenticate: this.authenticate, realm: this.realm, authorize: this.adminAuthorize };
  }

  /**
   * Middleware in front of routes whose changes must be audited (the admin routes): every
   * state-changing request, and every refused Basic login, is logged when its answer ends.
   */
  auditTrail(area: string): RequestHandler {
    return this.#trail(area, true);
  }

  /**
   * Middleware in front of routes that audit their own changes (the console, the operators' and
   * the configuration's routes): every refused Basic login (401 or 429 to a request with an
   * `Authorization` header), whatever its method, is logged when its answer ends, once.
   */
  signInTrail(area: string): RequestHandler {
    return this.#trail(area, false);
  }

  #trail(area: string, changesToo: boolean): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      const changes = changesToo && !SAFE.has(req.method);
      const credentials = req.headers.authorization !== undefined;
      if (!changes && !credentials) return next();
      // Read now, below the mount: when the answer ends, Express may have given req.url back whole.
      const path = req.path;
      const target = `${area}${path === '/' ? '' : path}`;
      res.on('finish', () => {
        // A route that audited the request itself (a sign-in's own refusal) said it already.
        if (audited.has(req)) return;
        const operator = operatorOf(req);
        if (!changes && !(res.statusCode === 401 || res.statusCode === 429)) return;
        const action = changes && operator !== undefined ? path.replace(/^\/+|\/+$/g, '') || area : 'sign-in';
        void this.record(req, {
          action,
          target,
          result: resultOf(res.statusCode),
          status: res.statusCode,
          ...(operator === undefined ? { detail: `${req.method} ${target} without valid credentials` } : detailOf(res)),
        }).catch(() => undefined);
      });
      next();
    };
  }

  /**
   * Appends an audit entry for the request's operator, or, for nobody, counts it with the other
   * refusals of its address (the first of a window written at once, a summary at its end).
   */
  record(
    req: Request,
    entry: { action: string; target?: string; result: AuditResult; status?: number; detail?: string; actor?: string | null },
  ): Promise<unknown> {
    audited.add(req);
    const operator = operatorOf(req);
    const input: AuditInput = {
      actor: entry.actor !== undefined ? entry.actor : (operator?.username ?? null),
      ...(operator === undefined ? {} : { role: operator.role }),
      address: addressOf(req),
      action: entry.action,
      ...(entry.target === undefined ? {} : { target: entry.target }),
      result: entry.result,
      ...(entry.status === undefined ? {} : { status: entry.status }),
      ...(entry.detail === undefined ? {} : { detail: entry.detail }),
    };
    if (input.actor !== null) return this.audit.append(input);
    this.#refusals.add(input);
    return Promise.resolve();
  }

  /** What the audit trail counted instead of writing, for `gateway_audit_events_*`. */
  auditStats(): AuditStats {
    const dropped = this.#inner instanceof MemoryAuditLog ? this.#inner.dropped : {};
    return { aggregated: this.#refusals.aggregated, dropped };
  }

  /** Writes the pending summaries and waits for the audit log to write what it holds. */
  async close(): Promise<void> {
    this.#refusals.close();
    await this.audit.close?.();
  }
}

/** The detail a route set for the audit entry of the request `res` answered (a failure's cause), if any. */
function detailOf(res: Response): { detail?: string } {
  const detail = auditDetailOf(res);
  return detail === undefined ? {} : { detail };
}

/** The audit result of an HTTP status. */
export function resultOf(status: number): AuditResult {
  if (status < 400) return 'ok';
  return status === 401 || status === 403 || status === 429 ? 'refused' : 'failed';
}
