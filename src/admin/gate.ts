/**
 * The admin credentials as options (`createGateway`'s `admin`, `adminRouter`'s): checked once at
 * creation, then the gate of the routes a program calls.
 *
 * @module
 */
import type { Request, RequestHandler } from 'express';
import { logger } from '../log.js';
import { InvalidOptionError, optionKeys, refuseUnknownKeys } from '../options.js';
import { credentialCheck, type BasicCredentials, type ConsoleAuthenticate } from './credentials.js';
import { checkRealm, guard } from './guard.js';
import { LoginThrottle, throttleFor, type LoginThrottleOptions } from './throttle.js';

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
  /**
   * A permission check after authentication (operator roles): `false` answers 403 problem+json.
   * Default: whoever is authenticated may do everything.
   */
  authorize?: (req: Request) => boolean;
}

const ADMIN_AUTH_KEYS = optionKeys<AdminAuthOptions>({
  basicAuth: true,
  authenticate: true,
  realm: true,
  loginThrottle: true,
  authorize: true,
});

/**
 * Turns {@link AdminAuthOptions} into one check, validating every option (credentials, realm,
 * throttle); throws `TypeError` naming the option, and when no credentials are given.
 */
export function adminAuthenticator(options: AdminAuthOptions, name: string): ConsoleAuthenticate {
  const check = credentialCheck(options, name);
  refuseUnknownKeys(name, options, ADMIN_AUTH_KEYS);
  if (options.realm !== undefined) checkRealm(options.realm, `${name}.realm`);
  // Validated here so that createGateway fails at start on a bad throttle setting.
  if (options.loginThrottle !== undefined) new LoginThrottle(options.loginThrottle, `${name}.loginThrottle`);
  if (options.authorize !== undefined && typeof options.authorize !== 'function')
    throw new InvalidOptionError(`${name}.authorize`, 'must be a function');
  return check;
}

/**
 * The admin credentials in front of a read-only route that a program calls (`GET <basePath>/metrics`,
 * scraped by Prometheus with `basic_auth`): the same credentials and failed-login throttle as the
 * admin routes, without the console header (a GET that changes nothing, whose answer a page of
 * another origin cannot read).
 */
export function adminReadGate(options: AdminAuthOptions): RequestHandler {
  const check = adminAuthenticator(options, 'createGateway: options.admin');
  const credentials = (options.authenticate ?? options.basicAuth) as object;
  return guard({
    check,
    countsWithoutCredentials: options.authenticate !== undefined,
    realm: options.realm ?? 'Gateway admin',
    throttle: throttleFor(credentials, options.loginThrottle, 'adminRouter: options.loginThrottle'),
    isJson: () => false,
    log,
  });
}
