/**
 * Turns the per-request context into a {@link TransactionRecord} once the exchange is over.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthorizationContext, Diagnostic, GatewayContext } from '../context.js';
import { outcomeLabels, type OutcomeCode } from '../errors.js';
import { sharedTokenData, type SharedTokenData } from '../token/shared.js';
import { copyScrubbed, REDACTED, redactHeaders, scrubSecret } from './redact.js';
import type { TransactionRecord, TransactionSender, TransactionTokenInfo } from './types.js';

/** What the middleware knows about the exchange besides the context. */
export interface ExchangeFacts {
  /** The request URL taken when the request arrived, already without `access_token`. */
  url: string;
  clientAddress: string | undefined;
  aborted: boolean;
  endedAt: number;
  recordOutgoingHeaders: boolean;
  redactedHeaders: ReadonlySet<string>;
  /** The middleware's cache of token sections per shared (cached, frozen) token validation. */
  tokenSections?: TokenSectionCache;
}

/** A record's token-derived sections, built once per cached token validation, deeply frozen. */
interface TokenSections {
  readonly secret: string;
  readonly method: string;
  readonly policy: string | undefined;
  readonly sender: TransactionSender;
  readonly tokenInfo: TransactionTokenInfo;
}

/**
 * Token sections by the token policy's shared validation result: every request with the same
 * cached token gets the same frozen, already scrubbed `sender` and `tokenInfo` (one copy per token,
 * not per record). Weak: an entry lives as long as the token cache keeps the result.
 */
export type TokenSectionCache = WeakMap<SharedTokenData, TokenSections>;

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}

/** The shared sections of the request's token, when its validation came from the token cache. */
function sharedSections(context: GatewayContext, cache: TokenSectionCache, secret: string): TokenSections | undefined {
  const token = context.token!;
  const shared = sharedTokenData(token);
  if (shared === undefined) return undefined;
  const known = cache.get(shared);
  if (known !== undefined && known.secret === secret && known.method === token.method && known.policy === token.policy) return known;
  // Built as every record's used to be (copies scrubbed of the token), then frozen: shared from now on.
  const sender = senderOf(context);
  const tokenInfo = tokenInfoOf(context, secret)!;
  scrubSecret(sender, secret);
  const sections: TokenSections = { secret, method: token.method, policy: token.policy, sender: deepFreeze(sender), tokenInfo: deepFreeze(tokenInfo) };
  cache.set(shared, sections);
  return sections;
}

/** The outcome: the error's when the chain ended with one, else from the status. */
export function outcomeOf(context: GatewayContext, status: number | null, aborted: boolean): OutcomeCode {
  if (aborted) return 'ABORTED';
  if (context.error !== undefined) return context.error.outcome;
  // Without a gateway error the answer came from the backend or the host's own handlers.
  if (status !== null && status >= 500) return 'GENERIC_ERROR';
  return 'OK';
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function senderOf(context: GatewayContext): TransactionSender {
  const token = context.token;
  if (token === undefined) return {};
  const info = token.info;
  const claims = token.introspection ?? token.jwt ?? {};
  const sender: TransactionSender = {};
  const subject = info?.subject ?? str(claims['sub']);
  const clientId = info?.clientId ?? str(claims['azp']) ?? str(claims['client_id']);
  const username = info?.username ?? str(claims['username']) ?? str(claims['preferred_username']);
  const issuer = info?.issuer ?? str(claims['iss']);
  if (subject !== undefined) sender.subject = subject;
  if (clientId !== undefined) sender.clientId = clientId;
  if (username !== undefined) sender.username = username;
  if (issuer !== undefined) sender.issuer = issuer;
  return sender;
}

/** The record's token section, already without the token (`secret`) anywhere in it. */
function tokenInfoOf(context: GatewayContext, secret: string | undefined): TransactionTokenInfo | undefined {
  const token = context.token;
  if (token === undefined) return undefined;
  const info: TransactionTokenInfo = { method: token.method };
  if (token.policy !== undefined) info.policy = copyScrubbed(token.policy, secret);
  // Copies, scrubbed as they are made: the record must not change if a middleware keeps mutating
  // the context afterwards, nor share the token policy's frozen cached claims.
  if (token.introspection !== undefined) info.introspection = copyScrubbed(token.introspection, secret);
  if (token.jwt !== undefined) info.jwt = copyScrubbed(token.jwt, secret);
  if (token.userInfo !== undefined) info.userInfo = copyScrubbed(token.userInfo, secret);
  return info;
}

/** Outcome sections, one frozen object per code, shared by every record with that outcome. */
const OUTCOMES = Object.fromEntries(
  Object.entries(outcomeLabels).map(([code, labels]) => [code, Object.freeze({ code: code as OutcomeCode, label: labels.it, en: labels.en })]),
) as Readonly<Record<OutcomeCode, TransactionRecord['outcome']>>;

/** `value`, or {@link REDACTED} when it contains the token. */
function clean(value: string, secret: string | undefined): string {
  return secret !== undefined && value.includes(secret) ? REDACTED : value;
}

/** A diagnostic as the record keeps it: the same object unless a field contains the token. */
function cleanDiagnostic(diagnostic: Diagnostic, secret: string | undefined): Diagnostic {
  if (secret === undefined || (!diagnostic.message.includes(secret) && !diagnostic.code.includes(secret))) return diagnostic;
  return { ...diagnostic, code: clean(diagnostic.code, secret), message: clean(diagnostic.message, secret) };
}

/** The decision as the record keeps it: shared when it is frozen (as `xacmlAuthorize` makes it) and clean. */
function cleanAuthorization(authorization: AuthorizationContext, secret: string | undefined): AuthorizationContext {
  const dirty = secret !== undefined && (authorization.text.includes(secret) || (authorization.statusMessage?.includes(secret) ?? false));
  if (!dirty && Object.isFrozen(authorization)) return authorization;
  const copy: AuthorizationContext = { ...authorization, text: clean(authorization.text, secret) };
  if (copy.statusMessage !== undefined) copy.statusMessage = clean(copy.statusMessage, secret);
  return copy;
}

/**
 * Builds the record of an exchange. Never contains the raw token: the token sections are built
 * scrubbed (and shared per cached token), the outgoing headers redacted, and every other string
 * that can come from the client, the policy or a middleware is checked here.
 *
 * Runs once per request, after the response: it takes over the context's diagnostics (the
 * exchange is over) and shares frozen sections (outcome, decision, sender, token) instead of
 * copying them.
 */
export function buildRecord(req: IncomingMessage, res: ServerResponse, context: GatewayContext, facts: ExchangeFacts): TransactionRecord {
  const status = facts.aborted && !res.headersSent ? null : res.statusCode;
  const code = outcomeOf(context, status, facts.aborted);
  const rawToken = context.token?.raw;
  const raw = rawToken === '' ? undefined : rawToken;
  const diagnostics = context.diagnostics;
  for (let i = 0; i < diagnostics.length; i++) diagnostics[i] = cleanDiagnostic(diagnostics[i]!, raw);
  const authorization = context.authorization === undefined ? undefined : cleanAuthorization(context.authorization, raw);
  if (authorization !== undefined && authorization.decision !== 'Permit' && !diagnostics.some((d) => d.message.includes(authorization.text))) {
    // The decision text of a denial belongs in the diagnostics (spec 7) even if no middleware wrote it.
    diagnostics.push({ time: facts.endedAt, level: 'warn', code: 'XACML_DECISION', message: authorization.text });
  }
  if (facts.aborted) {
    diagnostics.push({
      time: facts.endedAt,
      level: 'warn',
      code: 'CLIENT_ABORTED',
      message: res.headersSent
        ? 'The client went away before the response was complete'
        : 'The client went away before a response was sent',
    });
  }
  const sections = raw !== undefined && facts.tokenSections !== undefined ? sharedSections(context, facts.tokenSections, raw) : undefined;
  let sender: TransactionSender;
  if (sections !== undefined) {
    sender = sections.sender;
  } else {
    sender = senderOf(context);
    if (raw !== undefined) scrubSecret(sender, raw);
  }
  const record: TransactionRecord = {
    id: context.transactionId,
    messageId: context.messageId,
    startedAt: context.startedAt,
    endedAt: facts.endedAt,
    durationMs: Math.max(0, facts.endedAt - context.startedAt),
    method: clean(req.method ?? 'GET', raw),
    url: clean(facts.url, raw),
    status,
    outcome: OUTCOMES[code],
    aborted: facts.aborted,
    sender,
    diagnostics,
  };
  if (facts.clientAddress !== undefined) record.clientAddress = facts.clientAddress;
  const api = context.api;
  if (api !== undefined) {
    record.api = { provider: api.provider, name: api.name, version: api.version };
    if (api.operation !== undefined) record.operation = clean(api.operation, raw);
  }
  if (context.error !== undefined) {
    record.errorCode = context.error.code;
    record.gatewayStatus = context.error.gatewayStatus;
  }
  const tokenInfo = sections !== undefined ? sections.tokenInfo : tokenInfoOf(context, raw);
  if (tokenInfo !== undefined) record.tokenInfo = tokenInfo;
  if (authorization !== undefined) record.authorization = authorization;
  // Nothing produced for the backend (the request stopped before the relay): no outgoing contents.
  if (facts.recordOutgoingHeaders && hasAny(context.outgoing.headers)) {
    record.outgoing = { headers: redactHeaders(context.outgoing.headers, facts.redactedHeaders, raw) };
  }
  return record;
}

function hasAny(headers: Record<string, string>): boolean {
  for (const _ in headers) return true;
  return false;
}
