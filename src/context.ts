/**
 * The per-request gateway state: one typed object, `req.gateway`, shared by every middleware.
 * Each middleware calls {@link gatewayContext} so that it works alone or in any order.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorCatalogue, type GatewayErrorCode, type OutcomeCode } from './errors.js';
import type { XacmlExplanation } from './xacml/explain.js';
import type { RequestContext } from './xacml/request-context.js';
import type { XacmlDecision } from './xacml/response.js';

/**
 * The shape of every middleware factory's result: Node's request and response, so that it needs no
 * Express types; Express 4 and 5 accept it as is (`app.use(mw)`), and so does a plain
 * `http.createServer` handler that passes a `next`.
 */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** How the client sent the token (RFC 6750 section 2). */
export type TokenMethod = 'header' | 'body' | 'query';

/** User information taken from UserInfo (or, failing that, from token claims). */
export interface UserInfo {
  /** Full name: the `name` claim. */
  fullName?: string;
  /** First name: the `given_name` claim. */
  firstName?: string;
  /** Middle name: the `middle_name` claim. */
  middleName?: string;
  /** Family name: the `family_name` claim. */
  familyName?: string;
  /** E-mail address: the `email` claim. */
  eMail?: string;
}

/**
 * Token information normalized from introspection, JWT validation and UserInfo.
 * Times are seconds since the epoch, as in the claims.
 */
export interface TokenInfo {
  /** `iss`. */
  issuer?: string;
  /** `sub`. */
  subject?: string;
  /** `username` (or `preferred_username`). */
  username?: string;
  /** `azp` when present, else `client_id`. */
  clientId?: string;
  /** `aud`, always as an array. */
  audience: string[];
  /** `scope`, split on spaces. */
  scopes: string[];
  /** Roles (`roles`, `realm_access.roles`, `groups`), when the token has any. */
  roles: string[];
  /** `exp`. */
  expiresAt?: number;
  /** `iat`. */
  issuedAt?: number;
  /** `nbf`. */
  notBefore?: number;
  /** `jti`. */
  jti?: string;
  /** User information (from UserInfo when it is enabled). */
  userInfo: UserInfo;
}

/** The token of the current request. */
export interface TokenContext {
  /**
   * The raw token. Not an own property of the object (a getter) so that it never ends up in JSON,
   * records or logs by accident; read it only to forward it.
   */
  readonly raw: string;
  /** Where the client put it. */
  readonly method: TokenMethod;
  /** `DPoP` when it came as `Authorization: DPoP <token>` (RFC 9449); absent for a Bearer token. */
  readonly scheme?: 'DPoP';
  /** The token policy name (the realm). */
  policy?: string;
  /**
   * Normalized information, once validated. Set by `introspect` to the token policy's cached
   * result, deeply frozen (as are the claims below) because every request with the same token
   * shares it: replace the property with a copy to change it.
   */
  info?: TokenInfo;
  /** Claims returned by introspection, as returned. */
  introspection?: Record<string, unknown>;
  /** Claims of the validated JWT, when JWT validation is on. */
  jwt?: Record<string, unknown>;
  /** The UserInfo response, when UserInfo is on. */
  userInfo?: Record<string, unknown>;
  /** Milliseconds spent validating the token (0 on a cache hit is possible). */
  processTimeMs?: number;
  /**
   * The token's sender constraint (its `cnf` claim), as `introspect` checked it on this request:
   * absent for a token that names none.
   */
  binding?: TokenBinding;
}

/**
 * A token bound to its sender (`cnf`), and what the check of this request found. Thumbprints are
 * not secrets (digests of public keys or certificates): records and diagnostics may show them.
 */
export interface TokenBinding {
  /**
   * The confirmation method, named as the token's `cnf` member: `x5t#S256`, a certificate-bound
   * token (RFC 8705): the request must come with the client certificate of that SHA-256
   * thumbprint; `jkt`, a DPoP-bound token (RFC 9449): the request must come under the `DPoP`
   * scheme with a proof signed by the key of that JWK SHA-256 thumbprint (RFC 7638).
   */
  kind: 'x5t#S256' | 'jkt';
  /** The token's thumbprint (base64url), as its `cnf` gives it. */
  thumbprint: string;
  /**
   * `verified`: the request proved the binding; `refused`: it did not (answered 401
   * `invalid_token`); `ignored`: the token policy does not check this kind of binding.
   */
  result: 'verified' | 'refused' | 'ignored';
  /** Why the binding was refused: a {@link BindingRefusalReason}. */
  reason?: BindingRefusalReason;
  /** The thumbprint of the client certificate the request came with, when it came with one (`x5t#S256`). */
  presented?: string;
}

/**
 * Why a certificate-bound token (`x5t#S256`) was refused: `no_certificate` (the request came
 * without a client certificate), `unverified_certificate` (its certificate did not verify against
 * the listener's client CA), `bad_certificate_header` (the proxy's certificate header was
 * malformed, too large or repeated), `mismatch` (another certificate), `invalid_cnf` (the token's
 * `cnf` holds an unusable thumbprint, or two that differ).
 */
export type CertificateRefusalReason = 'no_certificate' | 'unverified_certificate' | 'bad_certificate_header' | 'mismatch' | 'invalid_cnf';

/**
 * Why a request was refused by the DPoP checks (`jkt`): no proof, a malformed one, a bad header
 * or signature, bad claims, `htm`, `htu`, `iat`, `ath` or `nonce` not right, a proof by another
 * key than `cnf.jkt` (`key_mismatch`), a proof used before (`replayed`), a DPoP-bound token sent
 * as Bearer (`bearer_for_bound_token`), a Bearer token where DPoP is required (`bearer_refused`),
 * a token bound to no key (or a malformed `cnf.jkt`) under the DPoP scheme (`unbound_token`).
 */
export type DpopRefusalReason =
  | 'missing_proof'
  | 'malformed_proof'
  | 'bad_header'
  | 'bad_signature'
  | 'bad_claims'
  | 'htm'
  | 'htu'
  | 'iat'
  | 'ath'
  | 'nonce'
  | 'key_mismatch'
  | 'replayed'
  | 'bearer_for_bound_token'
  | 'bearer_refused'
  | 'unbound_token';

/**
 * Why a sender-constrained token was refused (also the `reason` label of
 * `gateway_token_binding_refusals_total`, beside `kind`): a {@link CertificateRefusalReason} for
 * `x5t#S256`, a {@link DpopRefusalReason} for `jkt`.
 */
export type BindingRefusalReason = CertificateRefusalReason | DpopRefusalReason;

/** An XACML decision for the current request. */
export interface AuthorizationContext {
  /** The XACML decision; only `Permit` lets the request through. */
  decision: XacmlDecision;
  /** XACML status code URI. */
  statusCode: string;
  /** XACML status message, when there is one. */
  statusMessage?: string;
  /** The decision text, for example `result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok`. */
  text: string;
  /**
   * Why the decision was not Permit, from the PDP's explaining evaluation (`Pdp.explain`): the
   * policy and rule that decided, and the target section or condition that failed in each element
   * that did not apply. Only for a decision that is not Permit (the Permit path computes nothing).
   */
  explanation?: XacmlExplanation;
  /**
   * The XACML request of a request that was not permitted: every attribute the gateway builds from
   * the invocation (never the token: the `Authorization` header and `access_token` are left out),
   * a superset of what the policy read, so that it decides the same. Only when the decision is not Permit.
   */
  request?: RequestContext;
}

/** Severity of a diagnostic entry. */
export type DiagnosticLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * The diagnostic codes that are not errors: steps of the chain worth a line in the record. Listed,
 * with their meaning, in docs/console.md ("Diagnostics").
 */
export type DiagnosticEvent =
  | 'TOKEN_RECEIVED'
  | 'TOKEN_VALID'
  | 'XACML_DECISION'
  | 'XACML_POLICY_RELOAD_FAILED'
  | 'XACML_POLICY_UNAVAILABLE'
  | 'RELAY_SKIPPED'
  | 'RELAY_ABORTED'
  | 'CLIENT_ABORTED'
  | 'DIAGNOSTICS_TRUNCATED';

/**
 * The code of a {@link Diagnostic}: the {@link GatewayErrorCode} of an error the request ended with
 * (or the relay noted), or a {@link DiagnosticEvent} (`TOKEN_RECEIVED`, `XACML_DECISION`, …).
 */
export type DiagnosticCode = GatewayErrorCode | DiagnosticEvent;

// A key per event: the compiler then refuses an event missing here, or one not in the union.
const EVENTS: Readonly<Record<DiagnosticEvent, true>> = {
  TOKEN_RECEIVED: true,
  TOKEN_VALID: true,
  XACML_DECISION: true,
  XACML_POLICY_RELOAD_FAILED: true,
  XACML_POLICY_UNAVAILABLE: true,
  RELAY_SKIPPED: true,
  RELAY_ABORTED: true,
  CLIENT_ABORTED: true,
  DIAGNOSTICS_TRUNCATED: true,
};

/** Every {@link DiagnosticCode}: the error catalogue's codes, then the events. */
export const diagnosticCodes: readonly DiagnosticCode[] = Object.freeze([
  ...(Object.keys(errorCatalogue) as GatewayErrorCode[]),
  ...(Object.keys(EVENTS) as DiagnosticEvent[]),
]);

/** One diagnostic line of a transaction. Never contains a token value. */
export interface Diagnostic {
  /** Epoch milliseconds. */
  time: number;
  /** Severity. */
  level: DiagnosticLevel;
  /** A stable code, for example `ERR_TOKEN_INVALID` or `XACML_DECISION`. */
  code: DiagnosticCode;
  /** Human-readable detail, for operators (never a token value). */
  message: string;
}

/** The registered API being invoked, when known. */
export interface ApiContext {
  /** Providing subject, for example `Ente`. */
  provider: string;
  /** API name, for example `PetStore`. */
  name: string;
  /** Version number. */
  version: number;
  /** Operation name (for XACML `action-id`), when known. */
  operation?: string;
  /** Resource path below the API's base, for example `/pet`. */
  resourcePath?: string;
}

/**
 * Message-recording settings of one request (docs/console.md, "Message recording per API"), set by
 * the gateway from the API's configuration. They override the options of `recordTransaction` for
 * that request.
 */
export interface RecordingContext {
  /** Record the headers the client sent ("Richiesta - Ingresso": headers). */
  incomingHeaders?: boolean;
  /** Record every header the backend received ("Richiesta - Uscita": headers). */
  outgoingHeaders?: boolean;
  /** Record the request body the backend received: its first `maxBodyBytes` bytes (the relay keeps them as it streams). */
  requestBody?: boolean;
  /** Record the backend's response body: its first `maxBodyBytes` bytes. */
  responseBody?: boolean;
  /** Most bytes of each recorded body. Default `4096`. */
  maxBodyBytes?: number;
}

/** The per-request gateway state, at `req.gateway`. */
export interface GatewayContext {
  /** Unique id of the exchange, sent as `Gateway-Transaction-ID`. */
  readonly transactionId: string;
  /** Id of the message relayed, sent as `Gateway-Message-ID` on success. */
  readonly messageId: string;
  /** Epoch milliseconds at which the gateway took the request. */
  readonly startedAt: number;
  /** The registered API, when the request goes through `createGateway`. */
  api?: ApiContext;
  /** The token, once `requireToken` found one. */
  token?: TokenContext;
  /** The XACML decision, once `xacmlAuthorize` ran. */
  authorization?: AuthorizationContext;
  /**
   * The registered client application of the token's client, once `identifyApplication` ran and
   * found it in the registry (frozen, shared by every request of that client).
   */
  application?: {
    /** The client id it is registered under (the token's `azp`, else `client_id`). */
    readonly clientId: string;
    /** Application name (`org:gateway:subject:client`). */
    readonly name: string;
    /** Consuming organization (`org:gateway:subject:organization`). */
    readonly organization?: string;
    /** Roles (`org:gateway:subject:role`), when registered. */
    readonly roles?: readonly string[];
  };
  /** Diagnostics collected along the chain. */
  readonly diagnostics: Diagnostic[];
  /** Headers set for the backend by the gateway (token forwarding, transaction id). */
  readonly outgoing: {
    /**
     * Header name to value. A value that contains the token is recorded with the token replaced
     * by `[redacted]`. Empty until a middleware such as `forwardTokenHeaders` sets one.
     */
    headers: Record<string, string>;
  };
  /**
   * The request body as received, when a gateway middleware had to read the stream itself
   * (`requireToken` buffers `application/x-www-form-urlencoded` bodies to find `access_token`).
   * A relay sends these bytes instead of the (already consumed) stream. Also set as `req.rawBody`.
   */
  rawBody?: Buffer;
  /** Message recording of this request, when the API's configuration sets it (see {@link RecordingContext}). */
  recording?: RecordingContext;
  /** The error the request ended with, once known. */
  error?: {
    /** The error's {@link GatewayErrorCode}, for example `ERR_TOKEN_INVALID`. */
    code: GatewayErrorCode;
    /** HTTP status of the answer, for example `401`. */
    status: number;
    /** `gateway_status` of the problem+json body, for example `protocol:GATEWAY-1367`. */
    gatewayStatus: string;
    /** Transaction outcome recorded for the console, for example `TOKEN_FAILED`. */
    outcome: OutcomeCode;
    /** The problem+json `detail` sent to the client, once `problemJsonErrorHandler` answered. */
    detail?: string;
  };
}

declare global {
  // Express's own extension point (declared by @types/express-serve-static-core), so `req.gateway`
  // is typed in Express 4 and 5 apps without importing anything from us.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The gateway's per-request state (set by the first gateway middleware that runs). */
      gateway?: GatewayContext;
    }
  }
}

declare module 'http' {
  interface IncomingMessage {
    /** The gateway's per-request state (set by the first gateway middleware that runs). */
    gateway?: GatewayContext;
  }
}

/**
 * Set on a context when `recordTransaction` wants its ids on the response head (see
 * record/response-head.ts). A symbol: out of keys and JSON; created with every context so that
 * setting it later changes no object's shape.  @internal
 */
export const ID_HEADERS_ON_HEAD: unique symbol = Symbol('express-access-gateway.idHeadersOnHead');

/**
 * The exchange's trace (observability/trace-context.ts), when it has one: the client's validated
 * `traceparent` and, with an OpenTelemetry SDK, the exchange's span. A symbol slot created with
 * every context, like {@link ID_HEADERS_ON_HEAD}.  @internal
 */
export const EXCHANGE_TRACE: unique symbol = Symbol('express-access-gateway.exchangeTrace');

/**
 * What the relay sent to the backend, when the request's message recording asks for it
 * (record/capture.ts): a symbol slot created with every context, like {@link EXCHANGE_TRACE}.  @internal
 */
export const BACKEND_MESSAGE: unique symbol = Symbol('express-access-gateway.backendMessage');

/**
 * Header fields the gateway adds to the exchange's answer, whoever writes its head (the relay, the
 * problem renderer, the host's own handler), and the family of names they stand for: the
 * answer's other fields of that family (a backend's) are dropped. A symbol slot created with every
 * context, like {@link EXCHANGE_TRACE}; set by traffic control (the rate-limit fields); written by
 * exchange/head.ts.  @internal
 */
export const ANSWER_FIELDS: unique symbol = Symbol('express-access-gateway.answerFields');

/** What {@link ANSWER_FIELDS} holds.  @internal */
export interface AnswerFields {
  /** `[name, value]` pairs, names as written on the wire. */
  readonly fields: ReadonlyArray<readonly [name: string, value: string]>;
  /** Whether a field name, in any case, is of the family the fields stand for: an answer's other fields of it are dropped. */
  readonly replaces: (name: string) => boolean;
}

/** Returns the request's gateway context, creating it when no middleware did yet. */
export function gatewayContext(req: IncomingMessage): GatewayContext {
  let context = req.gateway;
  if (context === undefined) {
    context = {
      transactionId: randomUUID(),
      messageId: randomUUID(),
      startedAt: Date.now(),
      diagnostics: [],
      outgoing: { headers: {} },
      [ID_HEADERS_ON_HEAD]: false,
      [EXCHANGE_TRACE]: undefined,
      [BACKEND_MESSAGE]: undefined,
      [ANSWER_FIELDS]: undefined,
    } as GatewayContext;
    req.gateway = context;
  }
  return context;
}

/**
 * The token context of a request. The raw token is a private field behind a getter on the
 * prototype: not an own property, so never in `Object.keys`, JSON, spreads or records. (A class
 * rather than `Object.defineProperty` on a literal: every context has the same fast shape.)
 */
class RequestToken implements TokenContext {
  readonly #raw: string;
  readonly method: TokenMethod;
  readonly scheme?: 'DPoP';
  policy?: string;

  constructor(raw: string, method: TokenMethod, policy: string | undefined, scheme: 'DPoP' | undefined) {
    this.#raw = raw;
    this.method = method;
    if (scheme !== undefined) this.scheme = scheme;
    if (policy !== undefined) this.policy = policy;
  }

  get raw(): string {
    return this.#raw;
  }
}

/** Creates the token context with the raw token kept out of its own (enumerable or not) properties.  @internal */
export function createTokenContext(raw: string, method: TokenMethod, policy?: string, scheme?: 'DPoP'): TokenContext {
  return new RequestToken(raw, method, policy, scheme);
}

/** Appends a diagnostic line to the request's context. */
export function addDiagnostic(req: IncomingMessage, level: DiagnosticLevel, code: DiagnosticCode, message: string): void {
  gatewayContext(req).diagnostics.push({ time: Date.now(), level, code, message });
}
