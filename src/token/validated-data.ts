/**
 * Validated token data shared, read-only, by every request that carries the same token.
 *
 * A token policy validates a token once and then serves every request with that token from its
 * cache. The result (normalized info and raw claims) is deeply frozen and handed to each request
 * as is, instead of a per-request deep copy: a middleware cannot alter what the next request
 * sees, and whatever the chain derives from the token alone (XACML attributes, forwarded header
 * values, the record's token section) can be computed once per token and reused, keyed by this
 * object. Internal: not exported from the package.
 *
 * @module
 */
import type { TokenContext, TokenInfo } from '../context.js';
import { heapBytes } from './heap-bytes.js';

/** What a token policy keeps for a valid token, once frozen by {@link shareTokenData}. */
export interface SharedTokenData {
  /** `exp` of the token, seconds since the epoch, when it has one. */
  readonly exp: number | undefined;
  /** Normalized information (frozen). */
  readonly info: TokenInfo;
  /** Introspection response (frozen), when introspection is on. */
  readonly introspection?: Readonly<Record<string, unknown>>;
  /** JWT claims (frozen), when JWT validation is on. */
  readonly jwt?: Readonly<Record<string, unknown>>;
  /** UserInfo response (frozen), when UserInfo is on. */
  readonly userInfo?: Readonly<Record<string, unknown>>;
}

/** Brand on a shared `info` object, pointing back to its {@link SharedTokenData}. */
const SHARED = Symbol('express-access-gateway.sharedTokenData');

/**
 * Freezes `data` deeply and brands its `info`, so that {@link sharedTokenData} can recognize it on
 * a request's token context. Call it once per validation, with the token it validated: the data
 * belongs to that one token (the policy's cache is keyed by the token's hash).
 */
export function shareTokenData<T extends SharedTokenData>(data: T): T {
  Object.defineProperty(data.info, SHARED, { value: data, enumerable: false, writable: false, configurable: false });
  deepFreeze(data);
  return data;
}

/**
 * The shared data behind a request's token, when the token context still holds exactly the
 * shared objects that `introspect` put there (a middleware that replaced one of them with its own
 * gets `undefined`, and every consumer falls back to working from the context itself).
 */
export function sharedTokenData(token: TokenContext | undefined): SharedTokenData | undefined {
  const info = token?.info as (TokenInfo & { [SHARED]?: SharedTokenData }) | undefined;
  const shared = info?.[SHARED];
  if (shared === undefined || shared.info !== info) return undefined;
  if (shared.introspection !== token!.introspection || shared.jwt !== token!.jwt || shared.userInfo !== token!.userInfo) return undefined;
  return shared;
}

/**
 * Who is told the heap a shared result's derived values hold: the token policy's cache, which
 * counts them in its byte bound (`cacheMaxBytes`) with the result itself, so that the bound is the
 * memory the cached tokens hold, not only their claims.
 */
const accountants = new WeakMap<SharedTokenData, (bytes: number) => void>();

/** Registers the cache that holds `shared` (see {@link chargeTokenData}). */
export function accountTokenData(shared: SharedTokenData, account: (bytes: number) => void): void {
  accountants.set(shared, account);
}

/** Counts `bytes` more held because of the shared result behind `token` (nothing when it has none). */
export function chargeTokenData(token: TokenContext | SharedTokenData | undefined, bytes: number): void {
  const shared = token === undefined ? undefined : 'raw' in token ? sharedTokenData(token) : token;
  if (shared !== undefined) accountants.get(shared)?.(bytes);
}

/**
 * A function of the request's token memoized per validated token: `compute` runs once per shared
 * token result (so once per cached validation, whatever the number of requests that carry it),
 * and its value is kept as long as the token policy keeps that result (a `WeakMap` keyed by the
 * {@link SharedTokenData}). A token context that holds no shared result (no token, or a middleware
 * replaced its info or claims) is computed every time.
 *
 * @param compute - derives the value from the token context alone.
 * @param reusable - whether a memoized value may serve this request too (for a value that also
 *   depends on something of the request besides the shared result, such as the raw token or the
 *   method it came by). Default: always.
 * @param bytesOf - the heap a value holds of its own, counted in the token cache's byte bound.
 *   Default: {@link heapBytes} of all it holds (give one that leaves out what the value shares
 *   with every token, such as configured names).
 * @example
 * ```ts
 * const attributesOf = memoPerToken((token) => deepFreeze(tokenAttributes(token)));
 * const attributes = attributesOf(req.gateway?.token); // computed at the first request with this token
 * ```
 */
export function memoPerToken<T>(
  compute: (token: TokenContext | undefined) => T,
  reusable?: (value: T, token: TokenContext) => boolean,
  bytesOf: (value: T) => number = heapBytes,
): (token: TokenContext | undefined) => T {
  const values = new WeakMap<SharedTokenData, T>();
  return (token) => {
    const shared = sharedTokenData(token);
    if (shared === undefined) return compute(token);
    const known = values.get(shared);
    if (known !== undefined && (reusable === undefined || reusable(known, token!))) return known;
    const value = compute(token);
    values.set(shared, value);
    accountants.get(shared)?.(MEMO_ENTRY_BYTES + bytesOf(value));
    return value;
  };
}

/** A memo's WeakMap entry (an ephemeron: key, value, and the table's slots). */
const MEMO_ENTRY_BYTES = 64;

/** What replaces a value that contains the raw token, wherever the gateway writes one out. */
export const REDACTED = '[redacted]';

/** Freezes a JSON-like value and everything it contains (cycles and typed arrays are left alone). */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value) || ArrayBuffer.isView(value)) return value;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}
