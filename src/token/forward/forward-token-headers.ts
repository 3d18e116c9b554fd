/**
 * `forwardTokenHeaders`: puts the token information on the request relayed to the backend and
 * takes the token, and anything a client could use to spoof token information, off it.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { CompactSign } from 'jose';
import { gatewayContext } from '../../context.js';
import type { GatewayContext, Middleware, TokenContext } from '../../context.js';
import { heapBytes } from '../heap-bytes.js';
import { memoPerToken, REDACTED } from '../validated-data.js';
import { GatewayError } from '../../errors.js';
import { appendQueryParameter } from '../../url/parameters.js';
import { collectItems, headerValue, itemsDocument } from './items.js';
import type { ForwardedItem, ForwardedValue } from './items.js';
import { forwardSettings, type ForwardJwsOptions, type ForwardSettings, type ForwardTokenHeadersOptions } from './options.js';
import { setRawHeader, stripBodyToken, stripConnectionListed, stripHeaders, stripTokenParameter } from './request-edits.js';

export type { ForwardInfoMode, ForwardJwsOptions, ForwardTokenHeadersOptions, OriginalTokenMode } from './options.js';

/** Edits one request for the backend, with the settings of one `forwardTokenHeaders` middleware. */
class TokenForwarder {
  readonly #settings: ForwardSettings;
  /** What the token alone decides, per cached token result (see {@link TokenForwarder.tokenForward}). */
  readonly #tokenForwardOf: (token: TokenContext | undefined) => TokenForward;

  constructor(settings: ForwardSettings) {
    this.#settings = settings;
    const tokenForward = (token: TokenContext | undefined): TokenForward => this.tokenForward(token);
    // Not memoized with a dateFormat function: it is called for every request, as documented.
    this.#tokenForwardOf =
      typeof settings.dateFormat === 'function'
        ? tokenForward
        : memoPerToken(tokenForward, (known, token) => known.items.get('binding') === provenKind(token), ownBytes);
  }

  /** One header to set: its name, lower-case name, value, and the value recorded (token redacted). */
  entry(name: string, value: string, raw: string | undefined): HeaderEntry {
    return [
      name,
      this.#settings.lowerOf(name),
      value,
      raw !== undefined && raw !== '' && value.includes(raw) ? value.replace(raw, REDACTED) : value,
    ];
  }

  /** The forwarded items but the per-request `processTime`, and their header entries. */
  tokenForward(token: TokenContext | undefined): TokenForward {
    const { dateFormat, modes, headerNames } = this.#settings;
    const items = collectItems(token, dateFormat);
    items.delete('processTime');
    const headers: HeaderEntry[] = [];
    if (modes.has('headers'))
      for (const [item, value] of items) headers.push(this.entry(headerNames[item], headerValue(value), token?.raw));
    return { items, headers };
  }

  /** Strips the request and lists the headers to set; `items` is what `json` and `jws` carry. */
  prepare(req: IncomingMessage, gateway: GatewayContext): { set: HeaderEntry[]; items: Map<ForwardedItem, ForwardedValue> } {
    const { strip, originalToken, transactionIdHeader, modes, headerNames, jsonHeader } = this.#settings;
    const token = gateway.token;
    stripHeaders(req, strip);
    stripConnectionListed(req);
    stripTokenParameter(req, 'url');
    const withOriginal = req as IncomingMessage & { originalUrl?: string };
    if (typeof withOriginal.originalUrl === 'string') stripTokenParameter(withOriginal, 'originalUrl');
    if (token?.method === 'body' && originalToken !== 'asReceived') stripBodyToken(req, gateway);
    const set: HeaderEntry[] = [];
    if (transactionIdHeader) set.push(this.entry(transactionIdHeader, gateway.transactionId, token?.raw));
    const forward = this.#tokenForwardOf(token);
    const processTime = token?.processTimeMs;
    let items = forward.items;
    if (processTime !== undefined && (modes.has('json') || modes.has('jws'))) {
      items = new Map(items);
      items.set('processTime', processTime);
    }
    if (modes.has('headers')) {
      for (const header of forward.headers) set.push(header);
      if (processTime !== undefined) set.push(this.entry(headerNames.processTime, headerValue(processTime), token?.raw));
    }
    if (modes.has('json'))
      set.push(
        this.entry(jsonHeader, Buffer.from(JSON.stringify(itemsDocument(gateway.transactionId, items))).toString('base64'), token?.raw),
      );
    this.#putOriginalToken(req, gateway, set);
    return { set, items };
  }

  #putOriginalToken(req: IncomingMessage, gateway: GatewayContext, set: HeaderEntry[]): void {
    const { originalToken } = this.#settings;
    const token = gateway.token;
    if (originalToken === false || token === undefined) return;
    const mode =
      originalToken === 'asReceived' ? { header: 'authorizationHeader', query: 'query', body: 'body' }[token.method] : originalToken;
    if (mode === 'authorizationHeader') set.push(this.entry('Authorization', `Bearer ${token.raw}`, token.raw));
    else if (mode === 'query') req.url = appendQueryParameter(req.url ?? '/', 'access_token', token.raw);
    else if (typeof mode === 'object') set.push(this.entry(mode.header, token.raw, token.raw));
    // 'body': the form body still holds it, nothing to put back.
  }

  /** The `jws` header entry: the items signed. */
  async signed(gateway: GatewayContext, items: Map<ForwardedItem, ForwardedValue>, jws: ForwardJwsOptions): Promise<HeaderEntry> {
    const header = { alg: jws.alg, typ: 'JWT', ...(jws.kid === undefined ? {} : { kid: jws.kid }) };
    const jwt = await new CompactSign(Buffer.from(JSON.stringify(itemsDocument(gateway.transactionId, items))))
      .setProtectedHeader(header)
      .sign(jws.key);
    return this.entry(this.#settings.jwsHeader, jwt, gateway.token?.raw);
  }

  /** Sets the headers on the request (`headers` and `rawHeaders`) and records them. */
  finish(req: IncomingMessage, gateway: GatewayContext, set: readonly HeaderEntry[]): void {
    const { appendable } = this.#settings;
    const raw = Array.isArray(req.rawHeaders) ? req.rawHeaders : undefined;
    const recorded = gateway.outgoing.headers;
    for (const [name, lower, value, recordedValue] of set) {
      req.headers[lower] = value;
      if (raw !== undefined && appendable.has(lower)) raw.push(name, value);
      else setRawHeader(req, name, value);
      recorded[name] = recordedValue;
    }
  }
}

/**
 * Token forwarding (docs/forwarding.md). Edits the incoming request in place
 * so that whatever relays it (`createGateway`'s relay, `http-proxy-middleware`, your own handler
 * copying `req.headers` and `req.url`) sends the right thing:
 *
 * 1. removes every client-sent `Gateway-*` header and every header this middleware may set (from
 *    `req.headers` and `req.rawHeaders`), so a client cannot spoof token information;
 * 2. removes the token: an `Authorization` header of the `Bearer` or `DPoP` scheme, the `DPoP`
 *    proof, and the `access_token` URL parameter (from `req.url` and `req.originalUrl`); a
 *    form-body token is left in the body (see `docs/forwarding.md`);
 * 3. sets `Gateway-Transaction-ID` and the token information (`headers`: `Gateway-Token-Subject`,
 *    `-Issuer`, …; `json`: base64 JSON in `Gateway-Token`; `jws`: a compact JWS in `Gateway-JWT`);
 * 4. puts the original token back if `originalToken` says so;
 * 5. records every header it set in `req.gateway.outgoing.headers` (token values redacted).
 *
 * Put it after `introspect` and before the relay. Without a token (no `requireToken` before it) it
 * still strips spoofed headers and the `access_token` parameter, and sets the transaction id.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createProxyMiddleware } from 'http-proxy-middleware';
 * import { forwardTokenHeaders } from 'express-access-gateway';
 *
 * const app = express();
 * // ... requireToken(...), introspect(...) before it
 * app.use('/api', forwardTokenHeaders({ mode: 'headers' }), createProxyMiddleware({ target: 'http://127.0.0.1:9001' }));
 * ```
 */
export function forwardTokenHeaders(options: ForwardTokenHeadersOptions = {}): Middleware {
  const settings = forwardSettings(options);
  const forwarder = new TokenForwarder(settings);
  const jws = settings.modes.has('jws') ? settings.jws : undefined;
  return function forwardTokenHeadersMiddleware(req, _res, next): void {
    const gateway = gatewayContext(req);
    let prepared: ReturnType<TokenForwarder['prepare']>;
    try {
      prepared = forwarder.prepare(req, gateway);
    } catch (cause) {
      next(new GatewayError('ERR_INTERNAL', { diagnostic: `token forwarding failed: ${errorMessage(cause)}`, cause }));
      return;
    }
    const { set, items } = prepared;
    if (jws === undefined) {
      forwarder.finish(req, gateway, set);
      next();
      return;
    }
    forwarder.signed(gateway, items, jws).then(
      (entry) => {
        set.push(entry);
        forwarder.finish(req, gateway, set);
        next();
      },
      (cause: unknown) => {
        // Fail closed: the backend must not get a request without the token information it relies on.
        next(new GatewayError('ERR_INTERNAL', { diagnostic: `token forwarding: signing the JWS failed: ${errorMessage(cause)}`, cause }));
      },
    );
  };
}

function errorMessage(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** A header to set: name, lower-case name, value, value as recorded (the token redacted). */
type HeaderEntry = readonly [name: string, lower: string, value: string, recorded: string];

/** What the token alone decides: the forwarded items but `processTime`, and their header entries. */
interface TokenForward {
  readonly items: Map<ForwardedItem, ForwardedValue>;
  readonly headers: readonly HeaderEntry[];
}

/** The heap a {@link TokenForward} holds of its own: its items and values, not the configured header names. */
function ownBytes(forward: TokenForward): number {
  const seen = new Set<unknown>();
  let bytes = heapBytes(forward.items, seen) + 48 + 8 * forward.headers.length;
  // Each entry: its array (a JSArray and four words), its value and recorded value.
  for (const [, , value, recorded] of forward.headers) bytes += 80 + heapBytes(value, seen) + heapBytes(recorded, seen);
  return bytes;
}

/** The kind of the sender constraint the request proved, as the `binding` item says it. */
function provenKind(token: TokenContext): string | undefined {
  return token.binding?.result === 'verified' ? token.binding.kind : undefined;
}
