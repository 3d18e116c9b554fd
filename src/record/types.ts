/**
 * The transaction record and the storage contract of the monitoring console.
 *
 * @module
 */
import type { AuthorizationContext, Diagnostic, TokenMethod } from '../context.js';
import type { OutcomeCode } from '../errors.js';
import type { XacmlExplanation } from '../xacml/explain.js';

/** The outcome of a transaction: a stable code and its labels (docs/console.md, "Outcomes"). */
export interface TransactionOutcome {
  /** Stable code, for example `AUTHORIZATION_DENIED`. */
  code: OutcomeCode;
  /** The Italian label, for example `Autorizzazione Negata`. */
  label: string;
  /** The English label, for example `Authorization denied`. */
  en: string;
}

/** The registered API of a transaction. */
export interface TransactionApi {
  /** Providing subject, for example `Ente`. */
  provider: string;
  /** API name, for example `PetStore`. */
  name: string;
  /** API version number. */
  version: number;
}

/** Who called: the main data taken from the token (docs/console.md, "The record"). */
export interface TransactionSender {
  /** `sub` of the token. */
  subject?: string;
  /** `azp` when present, else `client_id`. */
  clientId?: string;
  /** `username` (or `preferred_username`). */
  username?: string;
  /** `iss` of the token. */
  issuer?: string;
  /** The client's registered application (`applications` of the configuration), when it has one. */
  application?: {
    /** Application name. */
    readonly name: string;
    /** Consuming organization, when registered. */
    readonly organization?: string;
    /** Roles, when registered. */
    readonly roles?: readonly string[];
  };
}

/**
 * What the gateway learned about the token: every claim as the authorization server returned it.
 * The token itself is never part of it.
 */
export interface TransactionTokenInfo {
  /** Where the client put the token. */
  method?: TokenMethod;
  /** The token policy (realm) that validated it. */
  policy?: string;
  /** Claims of the introspection response, as returned (including `scope`). */
  introspection?: Record<string, unknown>;
  /** Claims of the validated JWT, when JWT validation is on. */
  jwt?: Record<string, unknown>;
  /** The UserInfo response, when UserInfo is on. */
  userInfo?: Record<string, unknown>;
}

/** A token's sender constraint as the gateway checked it on the request (see `TokenBinding`). */
export interface TransactionBinding {
  /** `x5t#S256`: a certificate-bound token (RFC 8705); `jkt`: a DPoP-bound token (RFC 9449). */
  kind: string;
  /** The thumbprint the token is bound to (base64url). */
  thumbprint: string;
  /** `verified`, `refused` or `ignored`. */
  result: 'verified' | 'refused' | 'ignored';
  /** Why it was refused (`no_certificate`, `unverified_certificate`, `bad_certificate_header`, `mismatch`, `invalid_cnf`; see `BindingRefusalReason`). */
  reason?: string;
  /** The thumbprint of the client certificate the request came with, when it came with one. */
  presented?: string;
}

/** One attribute of a {@link RecordedXacmlRequest}. */
export interface RecordedXacmlAttribute {
  /** `AttributeId`, for example `org:gateway:subject:token:clientId`. */
  id: string;
  /** The values in their lexical form (several make a bag). */
  values: string[];
  /** `DataType`, when it is not `http://www.w3.org/2001/XMLSchema#string`. */
  dataType?: string;
  /** `Issuer`, when the attribute has one. */
  issuer?: string;
  /** The subject category of a subject attribute, when it is not `access-subject`. */
  subjectCategory?: string;
}

/**
 * The XACML request of a transaction as the record keeps it: the attributes by category, values
 * as the evaluator read them. Turn it back into a request for the evaluator with `xacmlRequestOf`.
 */
export interface RecordedXacmlRequest {
  /** Subject attributes. */
  subject: RecordedXacmlAttribute[];
  /** Resource attributes (`resource-id`). */
  resource: RecordedXacmlAttribute[];
  /** Action attributes (operation, service, URL, headers, token claims...). */
  action: RecordedXacmlAttribute[];
  /** Environment attributes (current time, when the policy reads it). */
  environment: RecordedXacmlAttribute[];
  /**
   * Set when the record does not hold the request exactly: a credential-bearing header's value
   * redacted, or values cut by the record's bounds. A replay of such a request may decide differently.
   */
  incomplete?: true;
}

/**
 * The XACML decision of a transaction. For a decision that is not Permit, also why (the
 * evaluator's explanation) and the request's attributes.
 */
export interface TransactionAuthorization extends Omit<AuthorizationContext, 'request' | 'explanation'> {
  /** Which policy and rule decided, which target section or condition failed (not for a Permit). */
  explanation?: XacmlExplanation;
  /** The XACML request's attributes, never a token (not for a Permit). */
  request?: RecordedXacmlRequest;
}

/** One traffic policy that covered a transaction, where it stood after the decision. */
export interface TransactionTrafficPolicy {
  /** The policy's name. */
  policy: string;
  /** `enforce`, or `warningOnly` (never refuses). */
  mode: 'enforce' | 'warningOnly';
  /** `requests` (per window) or `concurrentRequests`. */
  metric: 'requests' | 'concurrentRequests';
  /** The request's group, as `clientId=client1, operation=getPet`, or `*` without `groupBy`. */
  group: string;
  /** The limit applied (under `localShare`, this instance's share). */
  limit: number;
  /** `requests` only: the window, in seconds. */
  windowSeconds?: number;
  /** What was left after this request (0 when refused). */
  remaining: number;
  /** Whether this request went past the limit: refused under `enforce`, a warning under `warningOnly`. */
  exceeded: boolean;
}

/**
 * What traffic control decided on a transaction (see docs/traffic-control.md): the result, the
 * policy that refused and its group, and every policy that covered the request.
 */
export interface TransactionTraffic {
  /** `allowed`, `limited` (429: `policy` refused) or `unavailable` (503: Redis unreachable under `onStoreUnavailable: "deny"`). */
  result: 'allowed' | 'limited' | 'unavailable';
  /** The enforced policy that refused, with `result: 'limited'`. */
  policy?: string;
  /** Its group. */
  group?: string;
  /** Set when Redis could not be reached: the `onStoreUnavailable` mode the decision followed. */
  storeUnavailable?: 'localShare' | 'allow' | 'deny';
  /** The `warningOnly` policies this request went past the limit of. */
  warnings?: string[];
  /** Every policy that covered the request, in configuration order (top-level first). */
  policies: TransactionTrafficPolicy[];
}

/**
 * One recorded exchange, as stored by a {@link TransactionStore} and served by the console API.
 * Plain JSON data: times are epoch milliseconds. It never contains a token value: the URL has its
 * `access_token` parameter removed, credential-bearing headers are redacted and any string that
 * would contain the token is replaced by `[redacted]`.
 */
export interface TransactionRecord {
  /** The transaction id (`Gateway-Transaction-ID`). */
  id: string;
  /** The message id (`Gateway-Message-ID`). */
  messageId: string;
  /** The id of the gateway instance that handled it, when instances are named. */
  nodeId?: string;
  /**
   * The W3C trace id of the exchange (32 hex digits), to find its trace: the client's valid
   * `traceparent`'s, or the gateway's own trace when an OpenTelemetry SDK is registered.
   */
  traceId?: string;
  /** Epoch milliseconds at which the gateway took the request. */
  startedAt: number;
  /** Epoch milliseconds at which the response finished (or the client went away). */
  endedAt: number;
  /** `endedAt - startedAt`. */
  durationMs: number;
  /** The registered API, when the request went through one. */
  api?: TransactionApi;
  /** The invoked operation, when known. */
  operation?: string;
  /** HTTP method of the request. */
  method: string;
  /** The request URL as received (path and query), without any `access_token` parameter. */
  url: string;
  /** The client's address (`req.ip`, which honours Express's `trust proxy`). */
  clientAddress?: string;
  /** HTTP status answered; `null` when the client went away before a response was started. */
  status: number | null;
  /** The outcome. */
  outcome: TransactionOutcome;
  /** Whether the client went away before the response was complete. */
  aborted: boolean;
  /** The error code of the catalogue the request ended with, for example `ERR_TOKEN_INVALID`. */
  errorCode?: string;
  /** `gateway_status` of the error answer, for example `protocol:GATEWAY-1367`. */
  gatewayStatus?: string;
  /** The problem+json `detail` the client received with an error answer (in the gateway's message set). */
  problemDetail?: string;
  /** Sender information taken from the token. */
  sender: TransactionSender;
  /** Token claims, when a token was validated. */
  tokenInfo?: TransactionTokenInfo;
  /**
   * The token's sender constraint, when its `cnf` names one: which kind (`x5t#S256`, a
   * certificate-bound token), the thumbprint it is bound to, what the check found
   * (`verified`, `refused` with its `reason`, or `ignored` by the token policy) and the
   * thumbprint of the client certificate the request came with.
   */
  binding?: TransactionBinding;
  /** The XACML decision, when authorization ran (with its explanation and request when not Permit). */
  authorization?: TransactionAuthorization;
  /** What traffic control decided, when a policy covered the request. */
  traffic?: TransactionTraffic;
  /** Diagnostics collected along the chain (decision text of a denial, cause of a 503, ...). */
  diagnostics: Diagnostic[];
  /**
   * What the gateway sent to the backend, only when the API's message recording asks for the
   * outgoing headers and the gateway produced headers for the backend (a request stopped by a 4xx
   * has none). Credential-bearing headers are redacted.
   */
  outgoing?: {
    /**
     * Header name to value as the backend received them (`Host` included; the names the gateway
     * wrote in their own case, the client's in lower case), credential-bearing values `[redacted]`.
     */
    headers: Record<string, string>;
  };
  /**
   * The headers the client sent, as it sent them, only when the API's message recording asks for
   * the incoming headers. Credential-bearing values (`Authorization`, `Cookie`...) are `[redacted]`.
   */
  incoming?: {
    /** Header name (as sent) to value; repeated headers joined. */
    headers: Record<string, string>;
  };
  /** The request body the backend received (its first bytes), when the API's recording asks for it. */
  requestBody?: RecordedBody;
  /** The backend's response body (its first bytes), when the API's recording asks for it. */
  responseBody?: RecordedBody;
}

/**
 * A recorded body: its first `maxBodyBytes` bytes, as text when its content type is textual and
 * the bytes are UTF-8, else as base64; the client's token never (replaced by `[redacted]`).
 */
export interface RecordedBody {
  /** Bytes that went through the relay (the whole body once the exchange completed). */
  size: number;
  /** Bytes kept (at most the API's `maxBodyBytes`). */
  kept: number;
  /** How `content` holds the kept bytes. */
  encoding: 'utf8' | 'base64';
  /** The kept bytes: text, or base64. */
  content: string;
  /** The body's `content-type`, when it had one. */
  contentType?: string;
  /** Set when only the first bytes are kept. */
  truncated?: true;
}

/**
 * Filters of a {@link TransactionStore.query}. Every field given must match (AND). Results are
 * newest first (in the order the records were saved, that is by completion).
 *
 * Text filters (`api`, `subject`, `clientId`, `nodeId`, `operation`, `gatewayStatus`, `username`,
 * `issuer`, `clientAddress`, `trafficPolicy`, the value of `claim`) match case-insensitively by prefix: `subject:
 * 'Cli'` finds `client1` and `CLIENT3`. `method` and `messageId` match exactly.
 */
export interface TransactionFilter {
  /** Earliest `startedAt` (epoch ms, inclusive). */
  from?: number;
  /** Latest `startedAt` (epoch ms, inclusive). */
  to?: number;
  /** Outcome code. */
  outcome?: OutcomeCode;
  /** Any of these outcome codes (with `outcome` too: both must hold). An empty list matches nothing. */
  outcomes?: readonly OutcomeCode[];
  /** Status class: `4` for 4xx (with `status` too: both must hold). */
  statusClass?: number;
  /** Least `durationMs` (inclusive). */
  minDurationMs?: number;
  /**
   * A token claim and a value: matches when the introspection, JWT or UserInfo claims have the
   * claim with that value as text (case-insensitive prefix), or, for an array, an item with it.
   */
  claim?: {
    /** The claim's name, for example `scope`. */
    readonly name: string;
    /** The start of its value (or of an item of an array value), for example `read`. */
    readonly value: string;
  };
  /** API as `<provider>/<name>/v<version>`, for example `Ente/PetStore/v1` (see {@link apiKey}). */
  api?: string;
  /** Token subject (`sub`). */
  subject?: string;
  /** Client id (`azp` / `client_id`). */
  clientId?: string;
  /** HTTP status. */
  status?: number;
  /** Id of the gateway instance that handled it ({@link TransactionRecord.nodeId}). */
  nodeId?: string;
  /** Invoked operation. */
  operation?: string;
  /** HTTP method, as recorded (upper case). */
  method?: string;
  /** `gateway_status` of the error answer, for example `protocol:GATEWAY-1367`. */
  gatewayStatus?: string;
  /** Username of the token (`username` / `preferred_username`). */
  username?: string;
  /** Issuer of the token (`iss`). */
  issuer?: string;
  /** The client's address. */
  clientAddress?: string;
  /** Message id (`Gateway-Message-ID`). */
  messageId?: string;
  /** A traffic policy that covered the request (its {@link TransactionTrafficPolicy.policy}). */
  trafficPolicy?: string;
}

/** A {@link TransactionFilter} plus paging. */
export interface TransactionQuery extends TransactionFilter {
  /** Page size. Default 50, at most 500. */
  limit?: number;
  /** The `next` cursor of the previous page (opaque). */
  cursor?: string;
}

/** One page of a query: records newest first, and the cursor of the next page when there is one. */
export interface TransactionPage {
  /** The records of this page, newest first. */
  items: TransactionRecord[];
  /** Cursor of the next (older) page; absent on the last page. */
  next?: string;
}

/**
 * Where a store that keeps a record journal (`PostgresTransactionStore`'s `journal`) takes an
 * answer about to end: at the end of the turn it builds the answer's record with `build`, writes it
 * down, then runs `send` (the answer's end). The recorder saves the record `build` returned once
 * the exchange is over.  @internal
 */
export const RECORD_JOURNAL = Symbol.for('express-access-gateway.recordJournal');

/**
 * The journal entry point of a store (see {@link RECORD_JOURNAL}): `cut` ends the answer without
 * its last bytes, instead of `send`, when the record cannot be journaled and the journal refuses.
 * @internal
 */
export type JournalEntry = (build: () => TransactionRecord, send: () => void, cut?: () => void) => void;

/**
 * A dependency of a store that can be unavailable: the database, the record journal. Told by
 * `onAvailability` of a store that has it (`PostgresTransactionStore`), with what the store does
 * meanwhile.
 */
export type StoreDependency = 'postgresql' | 'record_journal';

/** A listener of a store's dependencies (see {@link StoreDependency}). */
export type StoreAvailabilityListener = (dependency: StoreDependency, available: boolean, cause?: string, action?: string) => void;

/**
 * Where records go. Implement it to keep records elsewhere (a database, a log pipeline); every
 * method may be synchronous or return a promise. `save` is called after the response is finished
 * and its failures are logged and counted, never thrown into a request. `docs/console.md` shows a
 * complete example.
 */
export interface TransactionStore {
  /** Stores one record (its `id` is unique). */
  save(record: TransactionRecord): void | Promise<void>;
  /** The record with that transaction id, or `undefined`. */
  get(id: string): TransactionRecord | undefined | Promise<TransactionRecord | undefined>;
  /** Records matching the filters, newest first, one page at a time. */
  query(query: TransactionQuery): TransactionPage | Promise<TransactionPage>;
  /**
   * Counts of the records matching the filters over a whole time window, by outcome and time
   * bucket (optional: a store without it has no statistics).
   *
   * @throws TypeError when the window is not bounded or has too many buckets.
   */
  stats?(query: TransactionStatsQuery): TransactionStats | Promise<TransactionStats>;
  /**
   * Calls `listener` at each change of the store's dependencies (optional: a store with none has
   * none to tell). Returns the function that stops it.
   */
  onAvailability?(listener: StoreAvailabilityListener): () => void;
  /**
   * Why the store refuses new exchanges now (optional): a journal that cannot be written under
   * `onUnavailable: "refuse"`. `undefined` while it does not.
   */
  readonly refusing?: string | undefined;
}

/**
 * A {@link TransactionFilter} over a bounded window, for {@link TransactionStore.stats}. `from` and
 * `to` (epoch ms, inclusive, on `startedAt`) are required.
 */
export interface TransactionStatsQuery extends TransactionFilter {
  /** Start of the window (epoch ms, inclusive). */
  from: number;
  /** End of the window (epoch ms, inclusive). */
  to: number;
  /**
   * Width of a bucket in milliseconds (whole). Default: chosen to give about 60 buckets, rounded to
   * 1 s, 10 s, 1 min, 5 min, 15 min, 1 h or a whole number of days. At most 1,000 buckets.
   */
  bucketMs?: number;
}

/** Records counted by outcome. */
export type OutcomeCounts = Partial<Record<OutcomeCode, number>>;

/** One bucket of {@link TransactionStats}. */
export interface TransactionStatsBucket {
  /** Start of the bucket (epoch ms, a multiple of `bucketMs`). */
  start: number;
  /** Records started in `[start, start + bucketMs)` by outcome (outcomes without records absent). */
  counts: OutcomeCounts;
}

/** Totals of {@link TransactionStats}, over the whole window. */
export interface TransactionStatsTotals {
  /** Records in the window. */
  count: number;
  /** Records by outcome. */
  byOutcome: OutcomeCounts;
  /** Mean `durationMs`; `null` when there is no record. */
  meanDurationMs: number | null;
  /** 95th percentile of `durationMs` (linear interpolation between ranks); `null` when there is no record. */
  p95DurationMs: number | null;
}

/** One value of a {@link TransactionStatsTop} list: the value and its records in the window. */
export interface TransactionStatsEntry {
  /** The value (an API key, an operation, a client id, a status as text, a `gateway_status`). */
  value: string;
  /** Records with it. */
  count: number;
}

/**
 * The most frequent values over the window, at most 10 each, most records first
 * (ties by value); records without the value are not counted in its list.
 */
export interface TransactionStatsTop {
  /** APIs, as {@link apiKey}. */
  api: TransactionStatsEntry[];
  /** Operations. */
  operation: TransactionStatsEntry[];
  /** Client ids. */
  clientId: TransactionStatsEntry[];
  /** HTTP statuses (as text). */
  status: TransactionStatsEntry[];
  /** `gateway_status` of error answers. */
  gatewayStatus: TransactionStatsEntry[];
}

/** Longest list of a {@link TransactionStatsTop}. */
export const STATS_TOP_SIZE = 10;

/** The answer of {@link TransactionStore.stats}. */
export interface TransactionStats {
  /** Start of the window, as asked. */
  from: number;
  /** End of the window, as asked. */
  to: number;
  /** Width of each bucket (ms). */
  bucketMs: number;
  /**
   * Every bucket of the window, oldest first, empty ones included: from the bucket holding `from`
   * to the one holding `to`. Bucket starts are multiples of `bucketMs` since the epoch (UTC).
   */
  buckets: TransactionStatsBucket[];
  /** Totals over the window. */
  totals: TransactionStatsTotals;
  /** The most frequent APIs, operations, clients, statuses and `gateway_status` (optional for other stores). */
  top?: TransactionStatsTop;
}

/** The key of an API in filters: `<provider>/<name>/v<version>`. */
export function apiKey(api: TransactionApi): string {
  return `${api.provider}/${api.name}/v${api.version}`;
}

/** Default page size of a query. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page size of a query. */
export const MAX_PAGE_SIZE = 500;
