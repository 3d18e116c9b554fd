/**
 * The admin listener under a host name of its own: operators' pages, sign-in and admin routes
 * answer only when the request names that host, so that the session cookie, which browsers scope
 * by host, belongs to a name that serves no API.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TrustFunction } from '../trust-proxy.js';
import { endProblem } from './problem.js';

/** A DNS host name (or an IPv4 address): labels of letters, digits and inner `-`, joined by `.`. */
export const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The host a request names, lower case, without port or final dot; `undefined` when it names none. */
function hostOf(value: string | string[] | undefined): string | undefined {
  const first = (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim().toLowerCase();
  if (first === undefined || first === '') return undefined;
  const name = first.startsWith('[') ? first.slice(0, first.indexOf(']') + 1) : first.replace(/:\d*$/, '');
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/**
 * Middleware answering 421 Misdirected Request (problem+json) unless the request's host is
 * `hostName`: its `Host`, or the `X-Forwarded-Host` of a proxy `trust` trusts.
 */
export function adminHostCheck(
  hostName: string,
  trust: TrustFunction,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  const expected = hostName.toLowerCase();
  return (req, res, next) => {
    const peer = req.socket.remoteAddress;
    const forwarded = peer !== undefined && trust(peer, 0) ? req.headers['x-forwarded-host'] : undefined;
    if (hostOf(forwarded ?? req.headers.host) === expected) return next();
    endProblem(res, 421, 'Misdirected Request', 'the admin listener answers under its own host name only');
  };
}
