/**
 * Routing of gateway URLs, `/<provider>/<api>/v<version>/<resource path>`, to registered APIs.
 *
 * @module
 */
import type { ResolvedOperation } from '../config/types.js';

/** The parts of a gateway URL below the base path. */
export interface ParsedInvocation {
  readonly provider: string;
  readonly api: string;
  readonly version: number;
  /** `/<provider>/<api>/v<version>` exactly as in the URL. */
  readonly prefix: string;
  /** The resource path (at least `/`), without the query. */
  readonly resourcePath: string;
}

const VERSION = /^v([1-9][0-9]{0,8})$/;

/** Parses a URL path (query ignored) below the base path; `undefined` when it has no API shape. */
export function parseInvocation(url: string): ParsedInvocation | undefined {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (path.charCodeAt(0) !== 47 /* / */) return undefined;
  const first = path.indexOf('/', 1);
  if (first === -1) return undefined;
  const second = path.indexOf('/', first + 1);
  if (second === -1) return undefined;
  const third = path.indexOf('/', second + 1);
  const versionText = third === -1 ? path.slice(second + 1) : path.slice(second + 1, third);
  const match = VERSION.exec(versionText);
  if (match === null) return undefined;
  const provider = path.slice(1, first);
  const api = path.slice(first + 1, second);
  if (provider === '' || api === '') return undefined;
  return {
    provider,
    api,
    version: Number(match[1]),
    prefix: third === -1 ? path : path.slice(0, third),
    resourcePath: third === -1 ? '/' : path.slice(third),
  };
}

/** The operation a request invokes, among the API's declared ones. */
export function findOperation(
  operations: readonly ResolvedOperation[],
  method: string,
  resourcePath: string,
): ResolvedOperation | undefined {
  // HEAD is served by a GET operation unless one is declared for it, as HTTP intends.
  let fallback: ResolvedOperation | undefined;
  for (const operation of operations) {
    if (!operation.pattern.test(resourcePath)) continue;
    if (operation.method === method) return operation;
    if (method === 'HEAD' && operation.method === 'GET') fallback ??= operation;
  }
  return fallback;
}
