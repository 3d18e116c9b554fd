/**
 * One exchange with the backend, as undici's dispatch handler: the backend's answer is written to
 * the client as it arrives (head once, body chunk by chunk with backpressure), a client that goes
 * away aborts the backend request, and a failure is answered before the head or noted and cut
 * after it. Driving the response from the dispatch callbacks, rather than through undici's
 * `stream()` (an async resource, a stream-finished watcher and a signal per request), is what keeps
 * the relay's own cost per request small.
 *
 * @module
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Span } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import { addDiagnostic } from '../context.js';
import type { GatewayError } from '../errors.js';
import type { BodyCapture } from '../exchange/capture.js';
import { endAnswer } from '../exchange/answer-end.js';

/** What an exchange needs from its relay, settled once per relay. */
export interface ExchangeSettings {
  /** The client head of the backend's answer: its headers cleaned, the gateway's identity added. */
  head(statusCode: number, headers: Record<string, string | string[] | undefined>, req: IncomingMessage): OutgoingHttpHeaders;
  /** The error answered for a backend failure. */
  failure(err: unknown): GatewayError;
  /** Notes a failure after the head was sent: the record must say the backend failed. */
  noteFailure(req: IncomingMessage, error: GatewayError): void;
  /** Settles the unread upload once the backend is done with the request. */
  settleUpload(req: IncomingMessage, res: ServerResponse): void;
  /** The backend, for diagnostics. */
  readonly label: string;
  /**
   * Called once when the exchange with the backend is over: answered (`error` undefined) or not
   * (metrics and the relay's span). None: nothing timed.
   */
  readonly ended?: ((exchange: BackendExchange, error: unknown) => void) | undefined;
}

/** The reason given to undici when the client went away. */
class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
}

export class BackendExchange implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  /** The client went away before the answer was complete. */
  #gone = false;
  /** The head of the answer was written to the client. */
  #started = false;
  #done = false;
  /**
   * Bytes of the body still due by the backend's `Content-Length` (-1: no length). The chunk that
   * completes the body is held and sent by the answer's end: its last byte leaves with the end,
   * after the exchange was written down (see `endAnswer`).
   */
  #left = -1;
  #held: Buffer | undefined;
  readonly #resume = (): void => this.#controller?.resume();
  readonly #onClose = (): void => this.#clientClosed();
  /** `performance.now()` at the start, when the relay times its exchanges. */
  readonly started: number;
  /** The backend's final status, once it answered. */
  status: number | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly next: (err?: unknown) => void,
    readonly settings: ExchangeSettings,
    /** The client's upload is streamed to the backend (not already read). */
    readonly streamed: boolean,
    /** The relay's span, when the exchange is traced. */
    readonly span?: Span,
    /** Where the response body's first bytes go, when the request's recording asks for them. */
    readonly capture?: BodyCapture,
  ) {
    this.started = settings.ended === undefined ? 0 : performance.now();
    // Prepended, so that the context says what happened before the recorder's own 'close' reads it.
    res.prependListener('close', this.#onClose);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#gone) controller.abort(new ClientGoneError('client gone'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // 1xx informational answers are not relayed: the final one follows.
    if (statusCode < 200 || this.#done) return;
    this.status = statusCode;
    if (this.capture !== undefined) {
      const type = headers['content-type'];
      this.capture.contentType = typeof type === 'string' ? type : undefined;
    }
    const length = headers['content-length'];
    this.#left = typeof length === 'string' && /^\d{1,15}$/.test(length) ? Number(length) : -1;
    this.res.writeHead(statusCode, this.settings.head(statusCode, headers, this.req));
    this.#started = true;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#done) return;
    this.capture?.add(chunk);
    if (this.#held !== undefined) {
      // More than the length said: what was held goes first.
      this.res.write(this.#held);
      this.#held = undefined;
    }
    if (this.#left >= 0 && (this.#left -= chunk.length) <= 0) {
      this.#held = chunk;
      return;
    }
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', this.#resume);
    }
  }

  onResponseEnd(): void {
    if (this.#done) return;
    this.#finish();
    this.settings.ended?.(this, undefined);
    const held = this.#held;
    this.#held = undefined;
    endAnswer(this.res, this.req.gateway, held);
    if (this.streamed) this.settings.settleUpload(this.req, this.res);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#done) return;
    this.#finish();
    const { req, res, settings } = this;
    settings.ended?.(this, this.#gone ? new ClientGoneError('client gone') : err);
    if (this.#gone) {
      // The client left: nothing to answer, only to note.
      addDiagnostic(req, 'info', 'RELAY_ABORTED', `client closed the connection before the backend ${settings.label} answered`);
      return;
    }
    const error = settings.failure(err);
    if (this.#started) {
      // After the status line the answer can only be cut (fail closed), and the record says why.
      settings.noteFailure(req, error);
      if (!res.destroyed) res.destroy();
      return;
    }
    if (this.streamed) settings.settleUpload(req, res);
    this.next(error);
  }

  #finish(): void {
    this.#done = true;
    this.res.removeListener('close', this.#onClose);
  }

  /** The response closed before it was complete: the client went away; the backend request is aborted. */
  #clientClosed(): void {
    if (this.#done || this.res.writableFinished) return;
    this.#gone = true;
    this.#controller?.abort(new ClientGoneError('client gone'));
  }
}
