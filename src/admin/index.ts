/**
 * What every router of the admin listener shares: credentials, the guard (throttle, CSRF,
 * credentials), the login throttle, the pages' security headers, problem answers.
 *
 * @module
 */
export type { BasicCredentials, ConsoleAuthenticate } from './credentials.js';
export type { AdminAuthOptions } from './gate.js';
export { CONSOLE_REQUEST_HEADER } from './guard.js';
export type { LoginThrottleOptions } from './throttle.js';
