/**
 * Turns the per-request context into a {@link TransactionRecord} once the exchange is over.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  EXCHANGE_TRACE,
  type AuthorizationContext,
  type Diagnostic,
  type DiagnosticCode,
  type GatewayContext,
  type TokenBinding,
  type TokenContext,
} from '../context.js';
import { outcomeLabels, type OutcomeCode } from '../errors.js';
import { tokenFacts } from '../token/facts.js';
import { deepFreeze, memoPerToken, sharedTokenData } from '../token/validated-data.js';
import { budgetOf, copyBounded, fit, truncate, type Budget, type RecordLimits } from './bounds.js';
import { REDACTED, redactHeaders, scrubSecret } from './redact.js';
import { rememberSize } from './size.js';
import type { TransactionAuthorization, TransactionBinding, TransactionRecord, TransactionSender, TransactionTokenInfo } from './types.js';
import { recordXacmlRequest } from './xacml-request.js';
import { backendMessageOf, keptReceivedHeaders } from '../exchange/capture.js';
import { trafficSection } from './traffic.js';
import { receivedHeaders, recordedBody, sentHeaders } from './messages.js';

/** What the middleware knows about the exchange besides the context. */
export interface ExchangeFacts {
  /** The request URL taken when the request arrived, already without `access_token`. */
  url: string;
  clientAddress: string | undefined;
  aborted: boolean;
  endedAt: number;
  recordOutgoingHeaders: boolean;
  redactedHeaders: ReadonlySet<string>;
  /** How long strings, claims, diagnostics and headers may be in the record. */
  limits: RecordLimits;
  /** The middleware's cache of token sections per shared (cached, frozen) token validation. */
  tokenSections?: TokenSectionCache;
  /** The gateway instance's id. */
  nodeId?: string | undefined;
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
 * The token sections of a request whose token validation came from the token cache (the policy's
 * shared result): every request with that cached token gets the same frozen, already scrubbed
 * `sender` and `tokenInfo` (one copy per token, not per record), as long as the token cache keeps
 * the result. Call it only for such a token ({@link sharedTokenData} defined).
 */
export type TokenSectionCache = (token: TokenContext) => TokenSections;

/** The {@link TokenSectionCache} of a recorder whose records have `limits`. */
export function tokenSectionCache(limits: RecordLimits): TokenSectionCache {
  return memoPerToken(
    (token) => {
      const context = token!;
      const secret = context.raw;
      // Copies scrubbed of the token, then frozen: every record of this token shares them.
      const sender = scrubSecret(senderOf(context, limits), secret);
      const tokenInfo = tokenInfoOf(context, secret, limits);
      const sections: TokenSections = {
        secret,
        method: context.method,
        policy: context.policy,
        sender: deepFreeze(sender),
        tokenInfo: deepFreeze(tokenInfo),
      };
      rememberSize(sections.sender);
      rememberSize(sections.tokenInfo);
      return sections;
    },
    // The sections also hold how the token came and under which policy: the same cached result
    // reached through another method or policy gets sections of its own.
    (known, token) => known.secret === token.raw && known.method === token.method && known.policy === token.policy,
  );
}

/**
 * The outcome: the error's when the chain ended with one, else `ABORTED` when the client went away,
 * else from the status (`BACKEND_4XX`, `BACKEND_5XX`, else `OK`). A recorded error wins over an unfinished response: the relay records the
 * backend's failure, then destroys a response it had started (the client did not go away).
 */
export function outcomeOf(context: GatewayContext, status: number | null, aborted: boolean): OutcomeCode {
  if (context.error !== undefined) return context.error.outcome;
  if (aborted) return 'ABORTED';
  // Without a gateway error the answer came from the backend or the host's own handlers: a 4xx or
  // 5xx of theirs is an outcome of its own, never counted as Ok.
  if (status !== null && status >= 500) return 'BACKEND_5XX';
  if (status !== null && status >= 400) return 'BACKEND_4XX';
  return 'OK';
}

/** Who sent the request, from the token's facts (the same the forwarder and XACML read). */
function senderOf(token: TokenContext | undefined, limits: RecordLimits): TransactionSender {
  if (token === undefined) return {};
  const { subject, clientId, username, issuer } = tokenFacts(token);
  const sender: TransactionSender = {};
  const max = limits.maxValueLength;
  if (subject !== undefined) sender.subject = truncate(subject, max);
  if (clientId !== undefined) sender.clientId = truncate(clientId, max);
  if (username !== undefined) sender.username = truncate(username, max);
  if (issuer !== undefined) sender.issuer = truncate(issuer, max);
  return sender;
}

/** The record's token section, already without the token (`secret`) anywhere in it. */
function tokenInfoOf(token: TokenContext, secret: string | undefined, limits: RecordLimits): TransactionTokenInfo {
  const info: TransactionTokenInfo = { method: token.method };
  if (token.policy !== undefined) info.policy = copyBounded(token.policy, secret, limits);
  // Copies, scrubbed and bounded as they are made: the record must not change if a middleware keeps
  // mutating the context afterwards, nor share the token policy's frozen cached claims, nor hold
  // whatever size of claims the authorization server sent. One budget per claims set.
  if (token.introspection !== undefined) info.introspection = copyBounded(token.introspection, secret, limits);
  if (token.jwt !== undefined) info.jwt = copyBounded(token.jwt, secret, limits);
  if (token.userInfo !== undefined) info.userInfo = copyBounded(token.userInfo, secret, limits);
  return info;
}

/** Outcome sections, one frozen object per code, shared by every record with that outcome. */
const OUTCOMES = Object.fromEntries(
  Object.entries(outcomeLabels).map(([code, labels]) => [
    code,
    Object.freeze({ code: code as OutcomeCode, label: labels.it, en: labels.en }),
  ]),
) as Readonly<Record<OutcomeCode, TransactionRecord['outcome']>>;
for (const outcome of Object.values(OUTCOMES)) rememberSize(outcome);

/** `value`, or {@link REDACTED} when it contains the token. */
function clean(value: string, secret: string | undefined): string {
  return secret !== undefined && value.includes(secret) ? REDACTED : value;
}

/** A frozen diagnostic of the record's own: a copy, without the token, within the budget. */
function diagnosticOf(d: Diagnostic, secret: string | undefined, limits: RecordLimits, budget: Budget): Diagnostic {
  return Object.freeze({
    time: d.time,
    level: truncate(String(d.level), 16) as Diagnostic['level'],
    // Checked like any other string: a JavaScript caller of addDiagnostic may pass anything.
    code: fit(clean(String(d.code), secret), limits, budget) as DiagnosticCode,
    message: fit(clean(String(d.message), secret), limits, budget),
  });
}

/**
 * The record's diagnostics: copies of the context's (a middleware may still add to or change
 * those after the save), at most `maxEntries` of them, the last one then saying how many were left out.
 */
function diagnosticsOf(
  source: readonly Diagnostic[],
  secret: string | undefined,
  limits: RecordLimits,
  budget: Budget,
  endedAt: number,
): Diagnostic[] {
  const n = source.length;
  const kept = n > limits.maxEntries ? limits.maxEntries - 1 : n;
  const out: Diagnostic[] = new Array<Diagnostic>(kept);
  for (let i = 0; i < kept; i++) out[i] = diagnosticOf(source[i]!, secret, limits, budget);
  if (kept < n) {
    out.push(
      Object.freeze({
        time: endedAt,
        level: 'warn',
        code: 'DIAGNOSTICS_TRUNCATED',
        message: `…[truncated ${n - kept} diagnostics]`,
      } as const),
    );
  }
  return out;
}

/**
 * The decision as the record keeps it: shared when it is frozen (as `xacmlAuthorize` makes it),
 * clean, short and without a request or explanation (a Permit); otherwise a frozen copy, with the
 * explanation and the request's attributes bounded and without the token.
 */
function authorizationOf(authorization: AuthorizationContext, secret: string | undefined, facts: ExchangeFacts): TransactionAuthorization {
  const limits = facts.limits;
  const max = limits.maxValueLength;
  const { request, explanation } = authorization;
  const dirty = secret !== undefined && (authorization.text.includes(secret) || (authorization.statusMessage?.includes(secret) ?? false));
  const long = authorization.text.length > max || (authorization.statusMessage?.length ?? 0) > max;
  if (!dirty && !long && request === undefined && explanation === undefined && Object.isFrozen(authorization))
    return authorization as TransactionAuthorization;
  const copy: TransactionAuthorization = {
    decision: authorization.decision,
    statusCode: authorization.statusCode,
    text: truncate(clean(authorization.text, secret), max),
  };
  if (authorization.statusMessage !== undefined) copy.statusMessage = truncate(clean(authorization.statusMessage, secret), max);
  // Each its own budget: the request's values can be many (every header, every claim).
  if (explanation !== undefined) copy.explanation = deepFreeze(copyBounded(explanation, secret, limits));
  if (request !== undefined)
    copy.request = deepFreeze(recordXacmlRequest(request, secret, facts.redactedHeaders, limits, budgetOf(limits)));
  return Object.freeze(copy);
}

/** Headers as recorded: redacted, at most `maxEntries`, values within the budget. */
function headersOf(
  headers: Record<string, string>,
  facts: ExchangeFacts,
  secret: string | undefined,
  budget: Budget,
): Record<string, string> {
  const redacted = redactHeaders(headers, facts.redactedHeaders, secret);
  const out: Record<string, string> = {};
  let count = 0;
  for (const name of Object.keys(redacted)) {
    if (++count > facts.limits.maxEntries) {
      out['…'] = `[truncated ${Object.keys(redacted).length - facts.limits.maxEntries} more headers]`;
      break;
    }
    out[truncate(name, facts.limits.maxValueLength)] = fit(redacted[name]!, facts.limits, budget);
  }
  return Object.freeze(out);
}

/**
 * Builds the record of an exchange. Never contains the raw token: the token sections are built
 * scrubbed (and shared per cached token), the outgoing headers redacted, and every other string
 * that can come from the client, the policy or a middleware is checked here.
 *
 * Bounded: strings longer than `limits.maxValueLength` are cut with a `…[truncated N characters]`
 * marker, claims within a depth, width and size budget, diagnostics and headers within theirs.
 *
 * Immutable: the record is deeply frozen and holds nothing of the context's own (diagnostics and
 * headers are copied), so whatever a middleware adds to the context after the save stays out of
 * it. Frozen sections (outcome, decision, sender, token) are shared instead of copied.
 */
export function buildRecord(req: IncomingMessage, res: ServerResponse, context: GatewayContext, facts: ExchangeFacts): TransactionRecord {
  const limits = facts.limits;
  const status = facts.aborted && !res.headersSent ? null : res.statusCode;
  const code = outcomeOf(context, status, facts.aborted);
  // An unfinished response with a recorded error is the gateway's doing (see outcomeOf).
  const clientAborted = facts.aborted && context.error === undefined;
  const rawToken = context.token?.raw;
  const raw = rawToken === '' ? undefined : rawToken;
  const budget = budgetOf(limits);
  const diagnostics = diagnosticsOf(context.diagnostics, raw, limits, budget, facts.endedAt);
  const authorization = context.authorization === undefined ? undefined : authorizationOf(context.authorization, raw, facts);
  if (
    authorization !== undefined &&
    authorization.decision !== 'Permit' &&
    !diagnostics.some((d) => d.message.includes(authorization.text))
  ) {
    // The decision text of a denial belongs in the diagnostics (docs/console.md, "Diagnostics")
    // even if no middleware wrote it.
    diagnostics.push(Object.freeze({ time: facts.endedAt, level: 'warn', code: 'XACML_DECISION', message: authorization.text } as const));
  }
  if (clientAborted) {
    diagnostics.push({
      time: facts.endedAt,
      level: 'warn',
      code: 'CLIENT_ABORTED',
      message: res.headersSent
        ? 'The client went away before the response was complete'
        : 'The client went away before a response was sent',
    });
  }
  const token = context.token;
  const sections =
    raw !== undefined && facts.tokenSections !== undefined && sharedTokenData(token) !== undefined
      ? facts.tokenSections(token!)
      : undefined;
  let sender: TransactionSender;
  if (sections !== undefined) {
    sender = sections.sender;
  } else {
    sender = senderOf(token, limits);
    if (raw !== undefined) scrubSecret(sender, raw);
  }
  // The registered application comes from the configuration (frozen, shared per client), not from
  // the token: added beside the token's shared section rather than into it.
  const application = context.application;
  if (application !== undefined) {
    const { name, organization, roles } = application;
    sender = {
      ...sender,
      application: Object.freeze({
        name,
        ...(organization === undefined ? {} : { organization }),
        ...(roles === undefined ? {} : { roles }),
      }),
    };
  }
  const record: TransactionRecord = {
    id: context.transactionId,
    messageId: context.messageId,
    startedAt: context.startedAt,
    endedAt: facts.endedAt,
    durationMs: Math.max(0, facts.endedAt - context.startedAt),
    method: truncate(clean(req.method ?? 'GET', raw), 32),
    url: urlOf(facts.url, raw, limits),
    status,
    outcome: OUTCOMES[code],
    aborted: clientAborted,
    sender,
    diagnostics: Object.freeze(diagnostics) as Diagnostic[],
  };
  if (facts.clientAddress !== undefined) record.clientAddress = truncate(facts.clientAddress, 64);
  if (facts.nodeId !== undefined) record.nodeId = facts.nodeId;
  // Validated hex when set (observability/trace-context.ts): nothing to clean.
  const traceId = (context as { [EXCHANGE_TRACE]?: { traceId: string } })[EXCHANGE_TRACE]?.traceId;
  if (traceId !== undefined) record.traceId = traceId;
  const api = context.api;
  if (api !== undefined) {
    record.api = Object.freeze({
      provider: truncate(api.provider, limits.maxValueLength),
      name: truncate(api.name, limits.maxValueLength),
      version: api.version,
    });
    if (api.operation !== undefined) record.operation = truncate(clean(api.operation, raw), limits.maxValueLength);
  }
  if (context.error !== undefined) {
    record.errorCode = context.error.code;
    record.gatewayStatus = context.error.gatewayStatus;
    const detail = context.error.detail;
    if (typeof detail === 'string') record.problemDetail = truncate(clean(detail, raw), limits.maxValueLength);
  }
  const tokenInfo = sections !== undefined ? sections.tokenInfo : token === undefined ? undefined : tokenInfoOf(token, raw, limits);
  if (tokenInfo !== undefined) record.tokenInfo = deepFreeze(tokenInfo);
  if (token?.binding !== undefined) record.binding = bindingSection(token.binding);
  if (authorization !== undefined) record.authorization = authorization;
  const traffic = context.traffic === undefined ? undefined : trafficSection(context.traffic, raw, limits);
  if (traffic !== undefined) record.traffic = traffic;
  // What the backend received, as the relay sent it (the gateway's own headers named in their
  // case); without a relay, the headers the gateway produced for the backend. Nothing produced (the
  // request stopped before the relay): no outgoing contents.
  const message = backendMessageOf(context);
  if (facts.recordOutgoingHeaders) {
    const produced = context.outgoing.headers;
    const sent = message === undefined ? produced : sentHeaders(message, namesOf(produced));
    if (hasAny(sent)) record.outgoing = Object.freeze({ headers: headersOf(sent, facts, raw, budget) });
  }
  const recording = context.recording;
  if (recording?.incomingHeaders === true) {
    record.incoming = Object.freeze({
      headers: headersOf(receivedHeaders(keptReceivedHeaders(context) ?? req.rawHeaders, req.headers), facts, raw, budgetOf(limits)),
    });
  }
  if (message?.requestBody !== undefined) record.requestBody = Object.freeze(recordedBody(message.requestBody, raw));
  if (message?.responseBody !== undefined) record.responseBody = Object.freeze(recordedBody(message.responseBody, raw));
  Object.freeze(sender);
  return Object.freeze(record);
}

/** The recorded URL: without the token (`stripAccessToken` already took its parameter out), cut past `maxValueLength`. */
function urlOf(url: string, secret: string | undefined, limits: RecordLimits): string {
  return truncate(clean(url, secret), limits.maxValueLength);
}

/** Lower-case name to the name as the gateway wrote it (`gateway-token-subject` → `Gateway-Token-Subject`). */
function namesOf(headers: Record<string, string>): Map<string, string> {
  const names = new Map<string, string>();
  for (const name of Object.keys(headers)) names.set(name.toLowerCase(), name);
  return names;
}

function hasAny(headers: Record<string, string>): boolean {
  for (const _ in headers) return true;
  return false;
}

/** The record's copy of a token's binding (thumbprints are digests: nothing to scrub). */
function bindingSection(binding: TokenBinding): TransactionBinding {
  const section: TransactionBinding = { kind: binding.kind, thumbprint: binding.thumbprint.slice(0, 64), result: binding.result };
  if (binding.reason !== undefined) section.reason = binding.reason;
  if (binding.presented !== undefined) section.presented = binding.presented.slice(0, 64);
  return Object.freeze(section);
}
