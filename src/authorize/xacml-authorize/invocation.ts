/**
 * What `xacmlAuthorize` reads of the invocation itself: its operation name and its URL as the
 * sender used it. The middleware runs in Express and on plain `node:http`, so Express's
 * properties are read when present and derived from the Node request otherwise.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { XacmlSubjectInfo } from '../request-builder.js';

/** The Express properties an invocation is read from, when the request went through Express. */
type MaybeExpress = IncomingMessage & { readonly protocol?: string; readonly path?: string; readonly originalUrl?: string };

/** `<METHOD> <path below the API>`: the operation when the API does not name one. */
export function defaultOperation(req: IncomingMessage): string {
  const api = req.gateway?.api;
  if (api?.operation) return api.operation;
  return `${req.method} ${api?.resourcePath ?? (req as MaybeExpress).path ?? (req.url ?? '/').split('?')[0]}`;
}

/** The URL as the sender used it: scheme (Express's `req.protocol` honours `trust proxy`), host, original path and query. */
export function invocationUrl(req: IncomingMessage): string {
  const express = req as MaybeExpress;
  const protocol = express.protocol ?? ((req.socket as { encrypted?: boolean } | undefined)?.encrypted ? 'https' : 'http');
  return `${protocol}://${req.headers.host ?? 'localhost'}${express.originalUrl ?? req.url ?? '/'}`;
}

/** The fields of `info` that have a value (an `undefined` one must not hide the application's). */
export function definedOnly(info: XacmlSubjectInfo): XacmlSubjectInfo {
  const out: { -readonly [K in keyof XacmlSubjectInfo]: XacmlSubjectInfo[K] } = {};
  if (info.organization !== undefined) out.organization = info.organization;
  if (info.client !== undefined) out.client = info.client;
  if (info.credential !== undefined) out.credential = info.credential;
  if (info.roles !== undefined) out.roles = info.roles;
  return out;
}
