/**
 * The operators' session cookie: its name and scope, whether a request came over TLS, and which
 * cookies of a request are the gateway's own (so that the relay never hands them to a backend).
 *
 * Browsers scope cookies by host, not by port: a cookie of the admin listener is sent to the API
 * listener of the same host whenever its path matches. Over plain HTTP the cookie is therefore
 * `eag_session`, set once per admin area (`<basePath>/admin`, `/operators`, `/configuration`,
 * `/console`, `/metrics`), paths that no API can have (those providers are refused). Over TLS it is
 * `__Host-eag_session`: `Secure`, host-only, and no other origin of the site can set or shadow it,
 * but the prefix demands `Path=/`, so it reaches every path of the host; there the relay's
 * stripping ({@link withoutGatewayCookies}) keeps it from backends, and an admin host name of its
 * own (`adminHostName`) keeps it from the API listener altogether.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { ADMIN_AREAS } from '../admin/areas.js';
import type { TrustFunction } from '../trust-proxy.js';

/** The session cookie's name over plain HTTP. */
export const SESSION_COOKIE = 'eag_session';
/** The session cookie's name over TLS. */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

/**
 * Whether a cookie name is one the gateway issues, in any spelling a browser or a backend could
 * take for it: the prefixes `__Host-` and `__Secure-` and letter case are ignored.
 */
export function isGatewayCookie(name: string): boolean {
  let bare = name.trim().toLowerCase();
  if (bare.startsWith('__host-')) bare = bare.slice('__host-'.length);
  else if (bare.startsWith('__secure-')) bare = bare.slice('__secure-'.length);
  return bare === SESSION_COOKIE;
}

const MENTIONS_OURS = new RegExp(SESSION_COOKIE, 'i');

/**
 * A `Cookie` header without the gateway's own cookies: the others kept byte for byte, in order;
 * `undefined` when none is left (then no `Cookie` header is sent).
 */
export function withoutGatewayCookies(header: string): string | undefined {
  // Most requests carry no gateway cookie: their header is passed on untouched.
  if (!MENTIONS_OURS.test(header)) return header;
  const pairs = header.split(';');
  const kept: string[] = [];
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (isGatewayCookie(eq === -1 ? pair : pair.slice(0, eq))) continue;
    const trimmed = pair.replace(/^[ \t]+/, '');
    if (trimmed !== '') kept.push(trimmed);
  }
  if (kept.length === pairs.length) return header;
  return kept.length === 0 ? undefined : kept.join('; ');
}

/** One cookie's value from a `Cookie` header (the first of that exact name). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The session cookie of one admin listener: its name, attributes and scope per request. */
export class SessionCookie {
  readonly #secure: boolean | 'auto';
  readonly #trust: TrustFunction;
  readonly #paths: readonly string[];
  /** The single path of earlier versions, cleared so that an old cookie stops reaching the APIs. */
  readonly #formerPath: string;

  /**
   * @param basePath - the admin listener's base path (`/gateway`).
   * @param secure - `Secure` always, never, or (`auto`) when {@link SessionCookie.secure} says so.
   * @param trust - whose `X-Forwarded-Proto` is believed (`trustProxy`).
   */
  constructor(basePath: string, secure: boolean | 'auto', trust: TrustFunction) {
    const prefix = basePath === '/' ? '' : basePath;
    this.#paths = ADMIN_AREAS.map((area) => `${prefix}/${area}`);
    this.#formerPath = basePath;
    this.#secure = secure;
    this.#trust = trust;
  }

  /**
   * Whether the request reached the gateway over TLS: its own socket, Express's `req.secure`
   * (the host's `trust proxy`), or `X-Forwarded-Proto: https` from a peer `trustProxy` trusts.
   * Anyone else's `X-Forwarded-Proto` is ignored.
   */
  secure(req: IncomingMessage & { secure?: boolean }): boolean {
    if (this.#secure !== 'auto') return this.#secure;
    if ((req.socket as { encrypted?: boolean }).encrypted === true || req.secure === true) return true;
    const peer = req.socket.remoteAddress;
    if (peer === undefined || !this.#trust(peer, 0)) return false;
    const given = req.headers['x-forwarded-proto'];
    const first = (Array.isArray(given) ? given[0] : given)?.split(',')[0]?.trim().toLowerCase();
    return first === 'https';
  }

  /** The session cookie's value in the request, under the name this request's scheme calls for. */
  read(req: IncomingMessage & { secure?: boolean }): string | undefined {
    return cookieValue(req.headers.cookie, this.secure(req) ? SECURE_SESSION_COOKIE : SESSION_COOKIE);
  }

  /** Sets (or, with `maxAge` 0 and an empty value, clears) the cookie on `res`. */
  write(req: IncomingMessage & { secure?: boolean }, res: Response, value: string, maxAge: number): void {
    const attributes = `Max-Age=${maxAge}; HttpOnly; SameSite=Strict`;
    const secure = this.secure(req);
    if (secure) res.append('Set-Cookie', `${SECURE_SESSION_COOKIE}=${value}; Path=/; ${attributes}; Secure`);
    else for (const path of this.#paths) res.append('Set-Cookie', `${SESSION_COOKIE}=${value}; Path=${path}; ${attributes}`);
    res.append(
      'Set-Cookie',
      `${SESSION_COOKIE}=; Path=${this.#formerPath}; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`,
    );
  }
}
