/**
 * The catalogue of gateway errors: every code is defined once, here, with its HTTP status,
 * `gateway_status`, console outcome and messages. Middleware throw (or `next()`) a
 * {@link GatewayError}; {@link problemJsonErrorHandler} renders it.
 *
 * @module
 */

/**
 * Transaction outcomes shown in the monitoring console (docs/console.md, "Outcomes").
 *
 * - `OK`: the request was relayed (or handled) successfully.
 * - `TOKEN_FAILED`: "Gestione Token Fallita" (token missing or invalid).
 * - `AUTHORIZATION_DENIED`: "Autorizzazione Negata" (XACML not Permit).
 * - `INSUFFICIENT_SCOPE`: the token lacks a scope or claim value the API requires.
 * - `INSUFFICIENT_USER_AUTHENTICATION`: the user authentication behind the token is not the one the
 *   API requires (`acr`) or is too old (`auth_time`): step-up authentication (RFC 9470).
 * - `AUTHORIZATION_SERVER_ERROR`: the authorization server could not be used.
 * - `DEPENDENCY_UNAVAILABLE`: another dependency of the gateway could not be used: the store of
 *   DPoP proof identifiers (Redis, or the primary of `serve --workers`), the record journal under
 *   `onUnavailable: "refuse"`.
 * - `CONNECTION_ERROR`: "Errore di Connessione" (backend unreachable or timing out).
 * - `NOT_FOUND`: no registered API at that path, or no operation of the API for its method and path.
 * - `GENERIC_ERROR`: "Errore Generico" (anything unexpected).
 * - `ABORTED`: the client went away before the response was complete.
 * - `BACKEND_4XX`: "Risposta HTTP 4xx": the backend (or the app's own handler) answered a 4xx, relayed as it was.
 * - `BACKEND_5XX`: "Risposta HTTP 5xx": the backend (or the app's own handler) answered a 5xx, relayed as it was.
 * - `RATE_LIMITED`: "Controllo del Traffico": refused by traffic control (a policy's limit, the
 *   instance's cap, or its store unreachable under `onStoreUnavailable: "deny"`).
 */
export type OutcomeCode =
  | 'OK'
  | 'TOKEN_FAILED'
  | 'AUTHORIZATION_DENIED'
  | 'INSUFFICIENT_SCOPE'
  | 'INSUFFICIENT_USER_AUTHENTICATION'
  | 'AUTHORIZATION_SERVER_ERROR'
  | 'DEPENDENCY_UNAVAILABLE'
  | 'CONNECTION_ERROR'
  | 'NOT_FOUND'
  | 'GENERIC_ERROR'
  | 'ABORTED'
  | 'BACKEND_4XX'
  | 'BACKEND_5XX'
  | 'RATE_LIMITED';

/** Labels of each {@link OutcomeCode}, in Italian and in English. */
export const outcomeLabels: Readonly<
  Record<
    OutcomeCode,
    {
      /** Italian label, for example `Autorizzazione Negata`. */
      readonly it: string;
      /** English label, for example `Authorization denied`. */
      readonly en: string;
    }
  >
> = {
  OK: { it: 'Ok', en: 'Ok' },
  TOKEN_FAILED: { it: 'Gestione Token Fallita', en: 'Token handling failed' },
  AUTHORIZATION_DENIED: { it: 'Autorizzazione Negata', en: 'Authorization denied' },
  INSUFFICIENT_SCOPE: { it: 'Scope Insufficienti', en: 'Insufficient scope' },
  INSUFFICIENT_USER_AUTHENTICATION: { it: 'Autenticazione Utente Insufficiente', en: 'Insufficient user authentication' },
  AUTHORIZATION_SERVER_ERROR: { it: 'Authorization Server Non Disponibile', en: 'Authorization server unavailable' },
  DEPENDENCY_UNAVAILABLE: { it: 'Servizio del Gateway Non Disponibile', en: 'Gateway dependency unavailable' },
  CONNECTION_ERROR: { it: 'Errore di Connessione', en: 'Connection error' },
  NOT_FOUND: { it: 'API Non Trovata', en: 'API not found' },
  GENERIC_ERROR: { it: 'Errore Generico', en: 'Generic error' },
  ABORTED: { it: 'Richiesta Interrotta', en: 'Request aborted' },
  BACKEND_4XX: { it: 'Risposta HTTP 4xx', en: 'Backend answered 4xx' },
  BACKEND_5XX: { it: 'Risposta HTTP 5xx', en: 'Backend answered 5xx' },
  RATE_LIMITED: { it: 'Limite di Traffico Superato', en: 'Rate limited' },
};

/**
 * Parameters that message templates may use. Only the 403 message needs them; they come from
 * the API being invoked and the XACML decision.
 */
export interface MessageParams {
  /** Service type, `gw` by default. */
  serviceType?: string;
  /** Registered API name, for example `PetStore`. */
  serviceName?: string;
  /** API version number, for example `1`. */
  serviceVersion?: string | number;
  /** Provider type, `gw` by default. */
  providerType?: string;
  /** Providing subject, for example `Ente`. */
  providerName?: string;
  /** Decision text, for example `result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok`. */
  decisionText?: string;
  /** Why the token request was rejected in more detail (several methods, malformed header). */
  reason?: string;
  /** The budget an operator's job went past, in words: `10000 ms`, `512 MiB of memory`. */
  limit?: string;
}

/** A message: fixed text or a template over {@link MessageParams}. */
export type Message = string | ((params: MessageParams) => string);

/** The stable codes of every error the gateway can answer with. */
export type GatewayErrorCode =
  | 'ERR_TOKEN_MISSING'
  | 'ERR_TOKEN_MULTIPLE_METHODS'
  | 'ERR_TOKEN_MALFORMED'
  | 'ERR_TOKEN_INVALID'
  | 'ERR_TOKEN_EXPIRED'
  | 'ERR_TOKEN_THROTTLED'
  | 'ERR_DPOP_PROOF_INVALID'
  | 'ERR_DPOP_NONCE_REQUIRED'
  | 'ERR_INSUFFICIENT_SCOPE'
  | 'ERR_INSUFFICIENT_USER_AUTHENTICATION'
  | 'ERR_AUTHORIZATION_DENIED'
  | 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE'
  | 'ERR_PROOF_STORE_UNAVAILABLE'
  | 'ERR_RECORDING_UNAVAILABLE'
  | 'ERR_API_NOT_FOUND'
  | 'ERR_OPERATION_NOT_FOUND'
  | 'ERR_BACKEND_UNAVAILABLE'
  | 'ERR_BACKEND_TIMEOUT'
  | 'ERR_BAD_REQUEST'
  | 'ERR_PATH_REFUSED'
  | 'ERR_METHOD_NOT_IMPLEMENTED'
  | 'ERR_URI_TOO_LONG'
  | 'ERR_REQUEST_TOO_LARGE'
  | 'ERR_ADMIN_ORIGIN_REFUSED'
  | 'ERR_TOO_MANY_REQUESTS'
  | 'ERR_RATE_LIMITED'
  | 'ERR_INSTANCE_BUSY'
  | 'ERR_TRAFFIC_STORE_UNAVAILABLE'
  | 'ERR_OPERATOR_WORK_BUSY'
  | 'ERR_OPERATOR_WORK_OVER_BUDGET'
  | 'ERR_INTERNAL';

/**
 * The `error` parameter of a `WWW-Authenticate` challenge: RFC 6750 section 3.1's, step-up
 * authentication's (RFC 9470 section 3), and the two of DPoP (RFC 9449 sections 7.1 and 9), sent
 * only in a `DPoP` challenge.
 */
export type BearerErrorCode =
  'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'insufficient_user_authentication' | 'invalid_dpop_proof' | 'use_dpop_nonce';

/** One entry of the catalogue. */
export interface ErrorDefinition {
  /** HTTP status of the problem+json answer. */
  readonly status: number;
  /** `gateway_status` field, for example `protocol:GATEWAY-1366`. */
  readonly gatewayStatus: string;
  /** Outcome recorded for the transaction. */
  readonly outcome: OutcomeCode;
  /** Bearer challenge sent in `WWW-Authenticate`, when the error is the client's token. */
  readonly challenge?: {
    /** The challenge's `error` parameter. */
    readonly error: BearerErrorCode;
    /** The challenge's `error_description` parameter (English, fixed: it is not localized). */
    readonly description: string;
  };
  /** Seconds for `Retry-After`, for errors that are temporary. */
  readonly retryAfter?: number;
}

/** Every gateway error, defined once. */
export const errorCatalogue: Readonly<Record<GatewayErrorCode, ErrorDefinition>> = {
  ERR_TOKEN_MISSING: {
    status: 400,
    gatewayStatus: 'protocol:GATEWAY-1366',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'invalid_request', description: 'The request is missing a required token parameter' },
  },
  ERR_TOKEN_MULTIPLE_METHODS: {
    status: 400,
    gatewayStatus: 'protocol:GATEWAY-1366',
    outcome: 'TOKEN_FAILED',
    challenge: {
      error: 'invalid_request',
      description: 'The request uses more than one method to send the token',
    },
  },
  ERR_TOKEN_MALFORMED: {
    status: 400,
    gatewayStatus: 'protocol:GATEWAY-1366',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'invalid_request', description: 'The request has a malformed token parameter' },
  },
  ERR_TOKEN_INVALID: {
    status: 401,
    gatewayStatus: 'protocol:GATEWAY-1367',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'invalid_token', description: 'Token invalid' },
  },
  ERR_TOKEN_EXPIRED: {
    status: 401,
    gatewayStatus: 'protocol:GATEWAY-1367',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'invalid_token', description: 'Token expired' },
  },
  ERR_TOKEN_THROTTLED: {
    status: 429,
    gatewayStatus: 'protocol:GATEWAY-1370',
    outcome: 'TOKEN_FAILED',
    retryAfter: 10,
  },
  // DPoP (RFC 9449): a missing, malformed, replayed or mismatched proof, and a proof without the
  // nonce the gateway asks for (the answer carries a `DPoP-Nonce` header).
  ERR_DPOP_PROOF_INVALID: {
    status: 401,
    gatewayStatus: 'protocol:GATEWAY-1367',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'invalid_dpop_proof', description: 'DPoP proof invalid' },
  },
  ERR_DPOP_NONCE_REQUIRED: {
    status: 401,
    gatewayStatus: 'protocol:GATEWAY-1367',
    outcome: 'TOKEN_FAILED',
    challenge: { error: 'use_dpop_nonce', description: 'Resource server requires nonce in DPoP proof' },
  },
  ERR_INSUFFICIENT_SCOPE: {
    status: 403,
    gatewayStatus: 'protocol:GATEWAY-1368',
    outcome: 'INSUFFICIENT_SCOPE',
    challenge: { error: 'insufficient_scope', description: 'The request requires higher privileges than provided by the access token' },
  },
  // Step-up authentication (RFC 9470): the token is valid, the user authentication behind it is
  // not the one required (`acr`) or too old (`auth_time`). The challenge names what is required.
  ERR_INSUFFICIENT_USER_AUTHENTICATION: {
    status: 401,
    gatewayStatus: 'protocol:GATEWAY-1374',
    outcome: 'INSUFFICIENT_USER_AUTHENTICATION',
    challenge: {
      error: 'insufficient_user_authentication',
      description: 'A different authentication level or a more recent authentication is required',
    },
  },
  ERR_AUTHORIZATION_DENIED: {
    status: 403,
    gatewayStatus: 'protocol:GATEWAY-1352',
    outcome: 'AUTHORIZATION_DENIED',
  },
  ERR_AUTHORIZATION_SERVER_UNAVAILABLE: {
    status: 503,
    gatewayStatus: 'protocol:GATEWAY-1369',
    outcome: 'AUTHORIZATION_SERVER_ERROR',
    retryAfter: 5,
  },
  // Dependencies other than the authorization server, named apart so that an operator looks at the
  // right one: the store of DPoP proof identifiers, the record journal that refuses.
  ERR_PROOF_STORE_UNAVAILABLE: {
    status: 503,
    gatewayStatus: 'integration:GATEWAY-1375',
    outcome: 'DEPENDENCY_UNAVAILABLE',
    retryAfter: 5,
  },
  ERR_RECORDING_UNAVAILABLE: {
    status: 503,
    gatewayStatus: 'integration:GATEWAY-1376',
    outcome: 'DEPENDENCY_UNAVAILABLE',
    retryAfter: 5,
  },
  ERR_API_NOT_FOUND: {
    status: 404,
    gatewayStatus: 'protocol:GATEWAY-404',
    outcome: 'NOT_FOUND',
  },
  // The API exists and lists its operations, none of which has the request's method and path: a
  // status of its own, so that a client (or an operator reading records) tells a wrong path or
  // method from a wrong API or version.
  ERR_OPERATION_NOT_FOUND: {
    status: 404,
    gatewayStatus: 'protocol:GATEWAY-1377',
    outcome: 'NOT_FOUND',
  },
  ERR_BACKEND_UNAVAILABLE: {
    status: 503,
    gatewayStatus: 'integration:GATEWAY-516',
    outcome: 'CONNECTION_ERROR',
    retryAfter: 5,
  },
  ERR_BACKEND_TIMEOUT: {
    status: 504,
    gatewayStatus: 'integration:GATEWAY-516',
    outcome: 'CONNECTION_ERROR',
  },
  ERR_BAD_REQUEST: {
    status: 400,
    gatewayStatus: 'protocol:GATEWAY-400',
    outcome: 'GENERIC_ERROR',
  },
  ERR_PATH_REFUSED: {
    status: 400,
    gatewayStatus: 'protocol:GATEWAY-400',
    outcome: 'GENERIC_ERROR',
  },
  // CONNECT (the gateway opens no tunnels) and methods Node's parser does not know (`FOO`, `get`):
  // RFC 9110 section 9.1 answers a method that is unrecognized or not implemented with 501.
  ERR_METHOD_NOT_IMPLEMENTED: {
    status: 501,
    gatewayStatus: 'protocol:GATEWAY-501',
    outcome: 'GENERIC_ERROR',
  },
  ERR_URI_TOO_LONG: {
    status: 414,
    gatewayStatus: 'protocol:GATEWAY-414',
    outcome: 'GENERIC_ERROR',
  },
  ERR_REQUEST_TOO_LARGE: {
    status: 413,
    gatewayStatus: 'protocol:GATEWAY-413',
    outcome: 'GENERIC_ERROR',
  },
  ERR_ADMIN_ORIGIN_REFUSED: {
    status: 403,
    gatewayStatus: 'protocol:GATEWAY-403',
    outcome: 'GENERIC_ERROR',
  },
  ERR_TOO_MANY_REQUESTS: {
    status: 429,
    gatewayStatus: 'protocol:GATEWAY-429',
    outcome: 'GENERIC_ERROR',
    retryAfter: 60,
  },
  // Traffic control: a policy's limit, the instance's cap (distinct codes, so that an operator
  // tells a client's quota from the instance's capacity), and the shared store unreachable under
  // `onStoreUnavailable: "deny"`. `Retry-After` comes from the decision.
  ERR_RATE_LIMITED: {
    status: 429,
    gatewayStatus: 'protocol:GATEWAY-1371',
    outcome: 'RATE_LIMITED',
  },
  ERR_INSTANCE_BUSY: {
    status: 429,
    gatewayStatus: 'integration:GATEWAY-1372',
    outcome: 'RATE_LIMITED',
    retryAfter: 1,
  },
  ERR_TRAFFIC_STORE_UNAVAILABLE: {
    status: 503,
    gatewayStatus: 'integration:GATEWAY-1373',
    outcome: 'RATE_LIMITED',
    retryAfter: 5,
  },
  // The configuration console's work (policy compilation, OpenAPI import, what-if, checks of a
  // save) runs off the API's event loop, a few jobs at a time: these two are its refusals.
  ERR_OPERATOR_WORK_BUSY: {
    status: 503,
    gatewayStatus: 'integration:GATEWAY-503',
    outcome: 'GENERIC_ERROR',
    retryAfter: 10,
  },
  ERR_OPERATOR_WORK_OVER_BUDGET: {
    status: 422,
    gatewayStatus: 'protocol:GATEWAY-422',
    outcome: 'GENERIC_ERROR',
  },
  ERR_INTERNAL: {
    status: 500,
    gatewayStatus: 'integration:GATEWAY-500',
    outcome: 'GENERIC_ERROR',
  },
};

/** A message set: the `detail` text of every error code. */
export type MessageSet = Readonly<Record<GatewayErrorCode, Message>>;

const deniedIt: Message = (p) =>
  `Il mittente non è autorizzato ad invocare il servizio ${p.serviceType ?? 'gw'}/${p.serviceName ?? ''} ` +
  `(versione:${p.serviceVersion ?? ''}) erogato da ${p.providerType ?? 'gw'}/${p.providerName ?? ''}` +
  (p.decisionText ? ` (${p.decisionText})` : '');

const deniedEn: Message = (p) =>
  `The sender is not authorized to invoke the service ${p.serviceType ?? 'gw'}/${p.serviceName ?? ''} ` +
  `(version:${p.serviceVersion ?? ''}) provided by ${p.providerType ?? 'gw'}/${p.providerName ?? ''}` +
  (p.decisionText ? ` (${p.decisionText})` : '');

/** The Italian messages, the default (docs/errors.md, "The catalogue"). */
export const messagesIt: MessageSet = {
  ERR_TOKEN_MISSING: 'Token non presente',
  ERR_TOKEN_MULTIPLE_METHODS: 'Token non presente: il token è stato inviato con più di un metodo',
  ERR_TOKEN_MALFORMED: (p) => `Token non presente: ${p.reason ?? 'token malformato'}`,
  ERR_TOKEN_INVALID: 'Token non valido',
  ERR_TOKEN_EXPIRED: 'Token non valido',
  ERR_TOKEN_THROTTLED: 'Troppi token non validi da questo indirizzo: riprovare più tardi',
  ERR_DPOP_PROOF_INVALID: 'Prova DPoP non valida',
  ERR_DPOP_NONCE_REQUIRED: 'La prova DPoP deve contenere il nonce indicato dal gateway',
  ERR_INSUFFICIENT_SCOPE: 'Il token non ha gli scope o i claim richiesti dal servizio',
  ERR_INSUFFICIENT_USER_AUTHENTICATION: "L'autenticazione dell'utente non è del livello richiesto dal servizio o non è abbastanza recente",
  ERR_AUTHORIZATION_DENIED: deniedIt,
  ERR_AUTHORIZATION_SERVER_UNAVAILABLE: 'Servizio di validazione del token temporaneamente non disponibile',
  ERR_PROOF_STORE_UNAVAILABLE: 'Verifica delle prove DPoP temporaneamente non disponibile: riprovare più tardi',
  ERR_RECORDING_UNAVAILABLE: 'Registrazione delle transazioni temporaneamente non disponibile: riprovare più tardi',
  ERR_API_NOT_FOUND: 'Nessuna API registrata corrisponde alla richiesta',
  ERR_OPERATION_NOT_FOUND: (p) =>
    `Il servizio ${p.serviceType ?? 'gw'}/${p.serviceName ?? ''} (versione:${p.serviceVersion ?? ''}) erogato da ` +
    `${p.providerType ?? 'gw'}/${p.providerName ?? ''} non ha un'operazione per il metodo e il percorso della richiesta`,
  ERR_BACKEND_UNAVAILABLE: 'Servizio temporaneamente non disponibile',
  ERR_BACKEND_TIMEOUT: 'Il servizio non ha risposto in tempo',
  ERR_BAD_REQUEST: 'Richiesta non valida',
  ERR_PATH_REFUSED: 'Percorso della richiesta non valido',
  ERR_METHOD_NOT_IMPLEMENTED: 'Metodo della richiesta non supportato dal gateway',
  ERR_URI_TOO_LONG: "L'indirizzo della richiesta supera la lunghezza massima consentita",
  ERR_REQUEST_TOO_LARGE: 'Il corpo della richiesta supera la dimensione massima consentita',
  ERR_ADMIN_ORIGIN_REFUSED: 'Richiesta amministrativa rifiutata: origine non consentita',
  ERR_TOO_MANY_REQUESTS: 'Troppi tentativi falliti: riprovare più tardi',
  ERR_RATE_LIMITED: 'Limite di traffico superato: riprovare più tardi',
  ERR_INSTANCE_BUSY: 'Il gateway ha troppe richieste in corso: riprovare più tardi',
  ERR_TRAFFIC_STORE_UNAVAILABLE: 'Controllo del traffico temporaneamente non disponibile: riprovare più tardi',
  ERR_OPERATOR_WORK_BUSY: 'Troppi lavori degli operatori in corso: riprovare più tardi',
  ERR_OPERATOR_WORK_OVER_BUDGET: (p) =>
    `Il lavoro ha superato il suo limite${p.limit === undefined ? '' : ` di ${p.limit}`} ed è stato interrotto`,
  ERR_INTERNAL: 'Errore interno del gateway',
};

/** English messages. */
export const messagesEn: MessageSet = {
  ERR_TOKEN_MISSING: 'Token not present',
  ERR_TOKEN_MULTIPLE_METHODS: 'Token not present: the token was sent with more than one method',
  ERR_TOKEN_MALFORMED: (p) => `Token not present: ${p.reason ?? 'malformed token'}`,
  ERR_TOKEN_INVALID: 'Token not valid',
  ERR_TOKEN_EXPIRED: 'Token not valid',
  ERR_TOKEN_THROTTLED: 'Too many invalid tokens from this address: try again later',
  ERR_DPOP_PROOF_INVALID: 'DPoP proof not valid',
  ERR_DPOP_NONCE_REQUIRED: 'The DPoP proof must carry the nonce the gateway gave',
  ERR_INSUFFICIENT_SCOPE: 'The token lacks the scopes or claims the service requires',
  ERR_INSUFFICIENT_USER_AUTHENTICATION: "The user's authentication is not of the level the service requires, or not recent enough",
  ERR_AUTHORIZATION_DENIED: deniedEn,
  ERR_AUTHORIZATION_SERVER_UNAVAILABLE: 'Token validation service temporarily unavailable',
  ERR_PROOF_STORE_UNAVAILABLE: 'DPoP proof checking temporarily unavailable: try again later',
  ERR_RECORDING_UNAVAILABLE: 'Transaction recording temporarily unavailable: try again later',
  ERR_API_NOT_FOUND: 'No registered API matches the request',
  ERR_OPERATION_NOT_FOUND: (p) =>
    `The service ${p.serviceType ?? 'gw'}/${p.serviceName ?? ''} (version:${p.serviceVersion ?? ''}) provided by ` +
    `${p.providerType ?? 'gw'}/${p.providerName ?? ''} has no operation for the request's method and path`,
  ERR_BACKEND_UNAVAILABLE: 'Service temporarily unavailable',
  ERR_BACKEND_TIMEOUT: 'The service did not answer in time',
  ERR_BAD_REQUEST: 'Bad request',
  ERR_PATH_REFUSED: 'Invalid request path',
  ERR_METHOD_NOT_IMPLEMENTED: 'The request method is not supported by the gateway',
  ERR_URI_TOO_LONG: 'The request target exceeds the maximum length allowed',
  ERR_REQUEST_TOO_LARGE: 'The request body exceeds the maximum size allowed',
  ERR_ADMIN_ORIGIN_REFUSED: 'Administrative request refused: origin not allowed',
  ERR_TOO_MANY_REQUESTS: 'Too many failed attempts: try again later',
  ERR_RATE_LIMITED: 'Rate limit exceeded: try again later',
  ERR_INSTANCE_BUSY: 'The gateway has too many requests in progress: try again later',
  ERR_TRAFFIC_STORE_UNAVAILABLE: 'Traffic control temporarily unavailable: try again later',
  ERR_OPERATOR_WORK_BUSY: "Too many operators' jobs in progress: try again later",
  ERR_OPERATOR_WORK_OVER_BUDGET: (p) => `The work went past its budget${p.limit === undefined ? '' : ` of ${p.limit}`} and was stopped`,
  ERR_INTERNAL: 'Internal gateway error',
};

/** The built-in message sets. */
export const messageSets = {
  /** {@link messagesIt}, the default. */
  it: messagesIt,
  /** {@link messagesEn}. */
  en: messagesEn,
} as const;

/** Options of a {@link GatewayError}. */
export interface GatewayErrorOptions {
  /** Parameters for the message template. */
  params?: MessageParams;
  /** Realm of the `WWW-Authenticate` challenge (the token policy name). */
  realm?: string;
  /**
   * Why it happened, for diagnostics only: never sent to the client. Must not contain a token.
   */
  diagnostic?: string;
  /** The underlying error, for diagnostics only. */
  cause?: unknown;
  /** Seconds for `Retry-After`, when this occurrence knows better than the catalogue's default. */
  retryAfter?: number;
  /**
   * The DPoP challenge of a token policy with DPoP on (RFC 9449 section 7.1): the challenge is
   * `WWW-Authenticate: DPoP`, beside a Bearer one when the policy still accepts Bearer tokens.
   */
  dpop?: DpopChallenge;
}

/** What the `WWW-Authenticate: DPoP` challenge of an error says (see {@link GatewayErrorOptions.dpop}). */
export interface DpopChallenge {
  /** The `algs` parameter: the proof signing algorithms accepted. */
  readonly algs: readonly string[];
  /** Whether the error is told in the DPoP challenge (the request used DPoP, or Bearer is not accepted), else in a Bearer one beside it. */
  readonly errorInDpop: boolean;
  /** Whether a Bearer challenge is offered too (the policy's `dpop` is `allowed`). */
  readonly bearer: boolean;
  /** A fresh nonce for the `DPoP-Nonce` header, when the policy issues nonces. */
  readonly nonce?: string;
}

/** Renders the `detail` of an error code with a message set. */
export function renderMessage(set: MessageSet, code: GatewayErrorCode, params: MessageParams = {}): string {
  const message = set[code];
  return typeof message === 'function' ? message(params) : message;
}

/**
 * The error every gateway middleware raises. Its {@link GatewayError.code | code} is stable;
 * status, `gateway_status` and outcome come from {@link errorCatalogue}.
 *
 * @example
 * ```ts
 * next(new GatewayError('ERR_TOKEN_INVALID', { realm: 'my-idp', diagnostic: 'introspection: active=false' }));
 * ```
 */
export class GatewayError extends Error {
  /** The stable error code. */
  readonly code: GatewayErrorCode;
  /** HTTP status. */
  readonly status: number;
  /** `gateway_status` of the problem+json body. */
  readonly gatewayStatus: string;
  /** Transaction outcome to record. */
  readonly outcome: OutcomeCode;
  /** Template parameters of the detail message. */
  readonly params: MessageParams;
  /** Realm of the Bearer challenge, when there is one. */
  readonly realm: string | undefined;
  /** Diagnostic text (never sent to the client). */
  readonly diagnostic: string | undefined;
  /** Seconds for `Retry-After`: this error's own, else the catalogue's (none for permanent errors). */
  readonly retryAfter: number | undefined;
  /** The DPoP challenge, when the token policy has DPoP on. */
  readonly dpop: DpopChallenge | undefined;

  constructor(code: GatewayErrorCode, options: GatewayErrorOptions = {}) {
    super(renderMessage(messagesEn, code, options.params), options.cause === undefined ? undefined : { cause: options.cause });
    const definition = errorCatalogue[code];
    this.name = 'GatewayError';
    this.code = code;
    this.status = definition.status;
    this.gatewayStatus = definition.gatewayStatus;
    this.outcome = definition.outcome;
    this.params = options.params ?? {};
    this.realm = options.realm;
    this.diagnostic = options.diagnostic;
    this.retryAfter = options.retryAfter ?? definition.retryAfter;
    this.dpop = options.dpop;
  }

  /** The catalogue entry of this error. */
  get definition(): ErrorDefinition {
    return errorCatalogue[this.code];
  }
}

/** Whether a value is a {@link GatewayError} (also across copies of the package). */
export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError || (value instanceof Error && value.name === 'GatewayError' && 'gatewayStatus' in value);
}
