/**
 * Renders a {@link GatewayError} as an RFC 9457 problem+json answer (body and headers), without
 * touching Express: the error handler and any other part of the gateway (404, 503) use it.
 *
 * @module
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { gatewayContext } from '../context.js';
import { GatewayError, messageSets, renderMessage, type MessageSet } from '../errors.js';
import { optionChecks, optionKeys, type OptionChecks } from '../options.js';
import { setIdentityHead } from '../exchange/head.js';
import { endAnswer } from '../exchange/answer-end.js';

/** The media type of every problem answer (RFC 9457).  @internal */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem+json body (docs/errors.md). */
export interface ProblemBody {
  /** `https://httpstatuses.com/<status>`. */
  type: string;
  /** Reason phrase of the status. */
  title: string;
  /** HTTP status. */
  status: number;
  /** Human-readable cause, from the message set. */
  detail: string;
  /** `protocol:GATEWAY-…` / `integration:GATEWAY-…`. */
  gateway_status: string;
  /**
   * An `insufficient_scope` answer of a rule with several ways to pass (`scopeAlternatives`): each
   * way's scopes, any one of which suffices (the challenge's `scope` names one of them).
   */
  scope_alternatives?: string[][];
}

/** Options shared by {@link sendProblem} and `problemJsonErrorHandler`. */
export interface ProblemOptions {
  /**
   * Message set of the `detail` field: `'it'` (Italian, the default), `'en'`, or a custom
   * {@link MessageSet}.
   */
  messages?: 'it' | 'en' | MessageSet;
  /** Value of the `Server` header of error answers; `false` leaves the header alone. Default `Gateway`. */
  server?: string | false;
}

/** The rendered answer: status, headers and body. */
export interface RenderedProblem {
  /** HTTP status. */
  status: number;
  /** `content-type`, and `www-authenticate` / `retry-after` / `dpop-nonce` when the error has them (lower-case names). */
  headers: Record<string, string>;
  /** The problem+json body. */
  body: ProblemBody;
}

/**
 * Resolves the `messages` option to a message set; throws an `InvalidOptionError` naming
 * `<factory>: options.messages` on anything else.
 */
export function resolveMessageSet(messages: ProblemOptions['messages'], check: OptionChecks = optionChecks('sendProblem')): MessageSet {
  if (messages === undefined || messages === 'it') return messageSets.it;
  if (messages === 'en') return messageSets.en;
  if (typeof messages === 'object' && messages !== null) return messages;
  return check.fail('messages', `must be 'it', 'en' or a MessageSet, got ${String(messages)}`);
}

/** The `server` option: a header value, or `false` for none; `Gateway` when undefined. */
export function resolveServer(server: ProblemOptions['server'], check: OptionChecks): string | undefined {
  if (server === false) return undefined;
  return check.headerValue(server, 'server', 'Gateway');
}

/** Quotes a value for an auth-param (RFC 9110 quoted-string): backslash-escapes `"` and `\`. */
export function quoteAuthParam(value: string): string {
  // Control characters cannot appear in a header value at all; drop them rather than fail.
  // eslint-disable-next-line no-control-regex
  const clean = value.replace(/[\u0000-\u001f\u007f]/g, '');
  return `"${clean.replace(/(["\\])/g, '\\$1')}"`;
}

/**
 * The `WWW-Authenticate` value of an error, or `undefined` when its catalogue entry has no
 * challenge: `Bearer realm="<realm>", error="…", error_description="…"` (RFC 6750 section 3).
 * An `insufficient_scope` error that names the scopes required (a string `scope` property, as
 * `requireScopes` gives it) also carries `scope="<scopes>"` after `error` (RFC 6750 section 3.1).
 * An `insufficient_user_authentication` error (step-up, RFC 9470 section 3) carries
 * `acr_values="<values>"` and/or `max_age="<seconds>"` after `error_description`.
 * An error of a token policy with DPoP on ({@link GatewayError.dpop}) is challenged with
 * `DPoP realm="<realm>", algs="<algs>", error="…", error_description="…"` (RFC 9449 section 7.1),
 * after a Bearer challenge when the policy still accepts Bearer tokens. With `resourceMetadata`,
 * every challenge of a 401, and of the 400 of a missing token (`ERR_TOKEN_MISSING`), ends with
 * `resource_metadata="<url>"` (RFC 9728 section 5.1).
 */
export function bearerChallenge(error: GatewayError, resourceMetadata?: string): string | undefined {
  const challenge = error.definition.challenge;
  if (challenge === undefined) return undefined;
  const dpop = error.dpop;
  const realm = error.realm === undefined ? undefined : `realm=${quoteAuthParam(error.realm)}`;
  const told: string[] = [`error=${quoteAuthParam(challenge.error)}`];
  const scope = (error as { scope?: unknown }).scope;
  if (challenge.error === 'insufficient_scope' && typeof scope === 'string' && scope !== '') told.push(`scope=${quoteAuthParam(scope)}`);
  if (challenge.error === 'insufficient_user_authentication') told.push(...stepUpParams(error, challenge.description));
  else told.push(`error_description=${quoteAuthParam(challenge.description)}`);
  // RFC 9728 section 5.1: every challenge of a 401 names the resource's metadata, and so does the
  // 400 of a request without any token (the client's first step of section 5).
  const meta =
    resourceMetadata !== undefined && (error.status === 401 || error.code === 'ERR_TOKEN_MISSING')
      ? [`resource_metadata=${quoteAuthParam(resourceMetadata)}`]
      : [];
  const realmParams = realm === undefined ? [] : [realm];
  const scheme = (name: string, params: readonly string[]): string => (params.length === 0 ? name : `${name} ${params.join(', ')}`);
  const dpopOnly = challenge.error === 'invalid_dpop_proof' || challenge.error === 'use_dpop_nonce';
  if (dpop === undefined && !dpopOnly) return scheme('Bearer', [...realmParams, ...told, ...meta]);
  const dpopParams = [...realmParams, `algs=${quoteAuthParam((dpop?.algs ?? []).join(' '))}`];
  if (dpopOnly || dpop === undefined || dpop.errorInDpop) {
    const dpopChallenge = scheme('DPoP', [...dpopParams, ...told, ...meta]);
    return dpop?.bearer === true ? `${dpopChallenge}, ${scheme('Bearer', [...realmParams, ...meta])}` : dpopChallenge;
  }
  return `${scheme('Bearer', [...realmParams, ...told, ...meta])}, ${scheme('DPoP', [...dpopParams, ...meta])}`;
}

/**
 * The parameters of an `insufficient_user_authentication` challenge (RFC 9470 section 3), after
 * `error`: `error_description` (the error's own `challengeDescription` when it has a non-empty
 * one, else the catalogue's), then `acr_values="<values>"` and `max_age="<seconds>"` when the error
 * names them (string `acrValues`, non-negative integer `maxAge`, as `requireUserAuthentication`
 * gives them), quoted as in the RFC's examples.
 */
function stepUpParams(error: GatewayError, fallback: string): string[] {
  const { challengeDescription, acrValues, maxAge } = error as { challengeDescription?: unknown; acrValues?: unknown; maxAge?: unknown };
  const description = typeof challengeDescription === 'string' && challengeDescription !== '' ? challengeDescription : fallback;
  const params = [`error_description=${quoteAuthParam(description)}`];
  if (typeof acrValues === 'string' && acrValues !== '') params.push(`acr_values=${quoteAuthParam(acrValues)}`);
  if (typeof maxAge === 'number' && Number.isSafeInteger(maxAge) && maxAge >= 0) params.push(`max_age=${quoteAuthParam(String(maxAge))}`);
  return params;
}

/** The names as sent on the wire by {@link sendProblem} ({@link renderProblem} keys them in lower case, as Node reads headers). */
const CANONICAL_NAMES: Readonly<Record<string, string>> = {
  'content-type': 'Content-Type',
  'www-authenticate': 'WWW-Authenticate',
  'retry-after': 'Retry-After',
  'dpop-nonce': 'DPoP-Nonce',
};

/**
 * The URL of the protected resource metadata (RFC 9728) of the URL a request is for, when its API
 * has one: its 401 challenges, and the 400 of a missing token, name it. Set by the gateway's routing.
 */
const resourceMetadataUrls = new WeakMap<IncomingMessage, string>();

/** Names the protected resource metadata of the request's URL in its challenges (see {@link bearerChallenge}).  @internal */
export function challengeResourceMetadata(req: IncomingMessage, url: string): void {
  resourceMetadataUrls.set(req, url);
}

/**
 * Renders an error with a message set: status, headers (without the per-request ones) and body.
 * `resourceMetadata`: the URL a 401 challenge names (see {@link bearerChallenge}).
 */
export function renderProblem(error: GatewayError, messages: MessageSet, resourceMetadata?: string): RenderedProblem {
  const status = error.status;
  const body: ProblemBody = {
    type: `https://httpstatuses.com/${status}`,
    title: STATUS_CODES[status] ?? 'Unknown',
    status,
    detail: renderMessage(messages, error.code, error.params),
    gateway_status: error.gatewayStatus,
  };
  const alternatives = (error as { scopeAlternatives?: unknown }).scopeAlternatives;
  if (error.definition.challenge?.error === 'insufficient_scope' && Array.isArray(alternatives))
    body.scope_alternatives = alternatives.map((way: readonly string[]) => [...way]);
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  const challenge = bearerChallenge(error, resourceMetadata);
  if (challenge !== undefined) headers['www-authenticate'] = challenge;
  // `?? definition`: a GatewayError of another copy of the package has no retryAfter field.
  const retryAfter = error.retryAfter ?? error.definition.retryAfter;
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  // RFC 9449 section 9: the nonce the next proof must carry.
  if (error.dpop?.nonce !== undefined) headers['dpop-nonce'] = error.dpop.nonce;
  return { status, headers, body };
}

const PROBLEM_KEYS = optionKeys<ProblemOptions>({ messages: true, server: true });

/**
 * Sends a {@link GatewayError} as problem+json on `res`, with `Gateway-Transaction-ID` (from the
 * request's gateway context) and `Server`, and without `Gateway-Message-ID`. It does not record anything on the context: use
 * `problemJsonErrorHandler` for that, or record `req.gateway.error` yourself.
 *
 * @example
 * ```ts
 * import { GatewayError, sendProblem } from 'express-access-gateway';
 * import express from 'express';
 *
 * const app = express();
 * app.use((req, res) => sendProblem(res, new GatewayError('ERR_API_NOT_FOUND'), { messages: 'en' }));
 * ```
 */
export function sendProblem(res: ServerResponse, error: GatewayError, options: ProblemOptions = {}): void {
  const check = optionChecks('sendProblem');
  check.object(options, '');
  check.known(options, '', PROBLEM_KEYS);
  writeProblem(res, error, resolveMessageSet(options.messages, check), resolveServer(options.server, check));
}

/** {@link sendProblem} with its options resolved; returns the body sent.  @internal */
export function writeProblem(res: ServerResponse, error: GatewayError, messages: MessageSet, server: string | undefined): ProblemBody {
  const req = (res as ServerResponse & { req?: IncomingMessage }).req;
  const { status, headers, body } = renderProblem(error, messages, req === undefined ? undefined : resourceMetadataUrls.get(req));
  const context = req === undefined ? undefined : gatewayContext(req);
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(CANONICAL_NAMES[name] ?? name, value);
  // Token errors must not be cached by intermediaries (RFC 6750 section 5.3 spirit).
  res.setHeader('Cache-Control', 'no-store');
  setIdentityHead(res, context, status, server);
  const payload = JSON.stringify(body);
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  endAnswer(res, context, payload);
  return body;
}
