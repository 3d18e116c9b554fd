/**
 * `recordTransaction`: the first middleware of the chain. Ids, response headers, and one record
 * per exchange in a {@link TransactionStore}.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { gatewayContext, type GatewayContext, type Middleware, type RecordingContext } from '../context.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import { DEFAULT_MAX_VALUE_LENGTH, recordLimits } from './bounds.js';
import { buildRecord, tokenSectionCache } from './build.js';
import { hookIdentityHead } from '../exchange/head.js';
import { MemoryTransactionStore } from './memory-store.js';
import { DEFAULT_REDACTED_HEADERS, stripAccessToken } from './redact.js';
import { RECORD_JOURNAL, type JournalEntry, type TransactionRecord, type TransactionStore } from './types.js';
import { setAnswerGate } from '../exchange/answer-end.js';

const log = logger('record');

/** The recording of the `recordOutgoingHeaders` option: one shared object. */
const OUTGOING_HEADERS: RecordingContext = Object.freeze({ outgoingHeaders: true });

/** Options of {@link recordTransaction}. */
export interface RecordTransactionOptions {
  /** Where records go. Default: a new {@link MemoryTransactionStore} (10,000 records). */
  store?: TransactionStore;
  /**
   * Record the headers the backend received (as `createRelay` sent them; without the relay, the
   * headers the gateway produced for it, `req.gateway.outgoing.headers`), as the API's message
   * recording does. A function decides per request, when the request arrives. A recording set on
   * the request (`req.gateway.recording`, by `createGateway` from the API's configuration, or by a
   * middleware of yours: incoming headers, bodies) overrides it. Default `false`.
   */
  recordOutgoingHeaders?: boolean | ((req: Request) => boolean);
  /**
   * Names of outgoing headers whose value is replaced by `[redacted]` (case-insensitive).
   * Default: `authorization`, `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`,
   * `gateway-jwt`. A header whose value contains the client's token is always redacted.
   */
  redactHeaders?: readonly string[];
  /**
   * Longest string kept whole in a record: the URL, each outgoing header value, each claim value,
   * each diagnostic. A longer one is cut and ends with `…[truncated N characters]`. Claims are also
   * kept to 8 levels of nesting and 100 items or members per array or object, diagnostics and
   * outgoing headers to 100, each claims set and the diagnostics with the headers to 16 times this
   * many characters in all: a record stays small whatever the client or the authorization server
   * sends. Default `2048`.
   */
  maxValueLength?: number;
  /** Called when building or saving a record fails (after it was logged and counted). */
  onError?: (error: unknown, record: TransactionRecord | undefined) => void;
  /**
   * Put `Gateway-Transaction-ID` and `Gateway-Message-ID` on every answer, whoever writes it (the
   * host's own handlers included). `createRelay` and `sendProblem` put them on their answers
   * themselves: `false` suits a chain whose every answer is theirs (as in `createGateway`), and
   * spares each answer the `writeHead` hook. Default `true`.
   */
  idHeaders?: boolean;
  /**
   * The client's address for the record. Default: Express's `req.ip` (which follows the app's
   * `trust proxy` setting), else the connection's peer. `createGateway` passes the address its
   * `trustProxy` option lets it believe, so that the record and the invalid-token throttle agree.
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /** The id of this gateway instance, written on every record (`nodeId`). Default: none. */
  nodeId?: string;
  /** Watches each exchange: its start, and its record (metrics, traces).  @internal */
  observer?: ExchangeObserver;
}

/** What watches the exchanges of a recorder (`createGateway`'s metrics and traces).  @internal */
export interface ExchangeObserver {
  /** The exchange starts (the recorder is first on the request path). */
  start(req: IncomingMessage, context: GatewayContext): void;
  /** The exchange is over and its record built and handed to the store; `seconds` since its start. */
  end(record: TransactionRecord, context: GatewayContext, seconds: number): void;
}

/** Counters of a {@link recordTransaction} middleware. */
export interface RecordTransactionStats {
  /** Records saved. */
  recorded: number;
  /** Records lost because building or saving failed. */
  failed: number;
}

/** The middleware returned by {@link recordTransaction}, with its store and counters. */
export interface RecordTransactionMiddleware extends Middleware {
  /** The store records go to (give it to `monitoringConsole`). */
  readonly store: TransactionStore;
  /** Saved and failed counts. */
  readonly stats: Readonly<RecordTransactionStats>;
}

const RECORD_TRANSACTION_KEYS = optionKeys<RecordTransactionOptions>({
  store: true,
  recordOutgoingHeaders: true,
  redactHeaders: true,
  maxValueLength: true,
  onError: true,
  idHeaders: true,
  clientAddress: true,
  nodeId: true,
  observer: true,
});

/**
 * Records every exchange. Put it first in the chain: it gives the request its transaction and
 * message ids (`req.gateway`), sets `Gateway-Transaction-ID` on every response and
 * `Gateway-Message-ID` on success (status below 400), and when the response finishes, or the
 * client goes away (outcome `ABORTED`), saves one {@link TransactionRecord}. Saving happens after
 * the response is sent and its failures are logged (`DEBUG=express-access-gateway:record`),
 * counted in `stats.failed` and passed to `onError`; they never reach the request.
 *
 * The id headers are set when the head is written (the final status is known then) by a
 * `writeHead` installed once on the Express app's response prototype (`app.response`, and its mount
 * parents'); it leaves responses of requests the recorder did not see alone. Outside Express, or on
 * a response whose `writeHead` something else replaced, that response's own `writeHead` is wrapped.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { monitoringConsole, recordTransaction } from 'express-access-gateway';
 *
 * const app = express();
 * const record = recordTransaction({ recordOutgoingHeaders: true });
 * app.use(record);
 * app.use('/console', monitoringConsole({ store: record.store, basicAuth: { username: 'admin', password: 's3cret!' } }));
 * ```
 */
export function recordTransaction(options: RecordTransactionOptions = {}): RecordTransactionMiddleware {
  const check = optionChecks('recordTransaction');
  check.object(options, '');
  check.known(options, '', RECORD_TRANSACTION_KEYS);
  const store = options.store ?? new MemoryTransactionStore();
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof store.save !== 'function' ||
    typeof store.get !== 'function' ||
    typeof store.query !== 'function'
  ) {
    check.fail('store', 'must implement TransactionStore (save, get, query)');
  }
  const recordOutgoing = options.recordOutgoingHeaders ?? false;
  if (typeof recordOutgoing !== 'boolean' && typeof recordOutgoing !== 'function')
    check.fail('recordOutgoingHeaders', 'must be a boolean or a function');
  const redactList = options.redactHeaders ?? DEFAULT_REDACTED_HEADERS;
  if (!Array.isArray(redactList)) check.fail('redactHeaders', 'must be an array of header names');
  redactList.forEach((name: unknown, i) => check.headerName(name, `redactHeaders[${i}]`));
  const redactedHeaders: ReadonlySet<string> = new Set(redactList.map((h) => h.toLowerCase()));
  const maxValueLength = check.positive(options.maxValueLength, 'maxValueLength', DEFAULT_MAX_VALUE_LENGTH, true);
  if (maxValueLength < 64) check.fail('maxValueLength', 'must be an integer of at least 64');
  const limits = recordLimits(maxValueLength);
  const addressOf =
    check.optionalFunction<(req: IncomingMessage) => string | undefined>(options.clientAddress, 'clientAddress') ?? clientAddressOf;
  const onError = check.optionalFunction<(error: unknown, record: TransactionRecord | undefined) => void>(options.onError, 'onError');
  const setsIdHeaders = check.boolean(options.idHeaders, 'idHeaders', true);
  const nodeId = options.nodeId === undefined ? undefined : check.string(options.nodeId, 'nodeId');
  const observer = options.observer;
  const journal = (store as { [RECORD_JOURNAL]?: JournalEntry })[RECORD_JOURNAL];

  const stats: RecordTransactionStats = { recorded: 0, failed: 0 };
  // Token sections of records, built once per cached token validation (see buildRecord).
  const tokenSections = tokenSectionCache(limits);
  const fail = (error: unknown, record: TransactionRecord | undefined): void => {
    stats.failed++;
    log('record %s not saved: %s', record?.id ?? '(unbuilt)', error instanceof Error ? error.message : String(error));
    if (onError === undefined) return;
    try {
      onError(error, record);
    } catch (hookError) {
      log('onError threw: %O', hookError);
    }
  };

  const middleware = (request: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    // Express's request when there is one (originalUrl, ip); a plain node:http one works too.
    const req = request as ExpressLike;
    const context = gatewayContext(req);
    const url = stripAccessToken(req.originalUrl ?? req.url ?? '/');
    // Read now: once the response is finished the socket may already be detached from the request.
    const clientAddress = addressOf(req);
    if (setsIdHeaders) hookIdentityHead(res, context);
    const started = observer === undefined ? 0 : performance.now();
    observer?.start(req, context);
    // Decided now, so that the relay knows to keep what it sends; a later middleware that knows
    // the API (createGateway) may still set the request's recording.
    if (
      recordOutgoing !== false &&
      context.recording === undefined &&
      (recordOutgoing === true || recordOutgoing(req as Request) === true)
    ) {
      context.recording = OUTGOING_HEADERS;
    }

    let done = false;
    const build = (aborted: boolean): TransactionRecord =>
      buildRecord(req, res, context, {
        url,
        clientAddress,
        aborted,
        endedAt: Date.now(),
        recordOutgoingHeaders: context.recording?.outgoingHeaders === true,
        redactedHeaders,
        limits,
        tokenSections,
        nodeId,
      });
    // With a journal, the record of an answer the gateway ends is built at the end of the turn in
    // which it ends (all that makes it is known then), written down, and then the answer ends (see
    // endAnswer); that record is saved as it is once the answer is sent.
    let answered: TransactionRecord | undefined;
    if (journal !== undefined) {
      // Cut, the answer's end never leaves: its client sees no complete answer, and its record says
      // so. The refusal of a journal that cannot be written is not journaled: it could not be.
      setAnswerGate(context, (send) =>
        context.error?.code === 'ERR_RECORDING_UNAVAILABLE'
          ? send()
          : journal(
              () => (answered = build(false)),
              send,
              () => res.destroy(),
            ),
      );
    }
    // A server response always emits 'close': right after 'finish' (on the next tick) when it was
    // sent, or alone when the client went away first. One listener covers both (no 'once'
    // wrappers, one closure: the record is built at most once anyway).
    res.on('close', () => {
      if (done) return;
      done = true;
      const aborted = !res.writableFinished;
      let record: TransactionRecord | undefined;
      try {
        record = answered !== undefined && !aborted ? answered : build(aborted);
        const saved = store.save(record);
        if (saved !== undefined && typeof (saved as Promise<void>).then === 'function') {
          const built = record;
          (saved as Promise<void>).then(
            () => void stats.recorded++,
            (error: unknown) => fail(error, built),
          );
        } else {
          stats.recorded++;
        }
      } catch (error) {
        fail(error, record);
      }
      if (observer !== undefined && record !== undefined) {
        try {
          observer.end(record, context, (performance.now() - started) / 1000);
        } catch (error) {
          log('exchange observer failed: %s', error instanceof Error ? error.message : String(error));
        }
      }
    });
    next();
  };
  return Object.assign(middleware, { store, stats });
}

/** The parts of Express's request the recorder reads, absent outside Express. */
type ExpressLike = IncomingMessage & { originalUrl?: string; readonly ip?: string };

function clientAddressOf(req: ExpressLike): string | undefined {
  // Without X-Forwarded-For, `req.ip` is the socket's address whatever `trust proxy` says: skip
  // Express's proxy-addr walk.
  if (req.headers['x-forwarded-for'] === undefined) return req.socket?.remoteAddress;
  try {
    return req.ip ?? req.socket?.remoteAddress;
  } catch {
    // `req.ip` of a request that did not come through an Express app (no `trust proxy` setting).
    return req.socket?.remoteAddress;
  }
}
