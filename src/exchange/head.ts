/**
 * The head of every gateway response: `Gateway-Transaction-ID` (always), `Gateway-Message-ID`
 * (status below 400 only), `Server`, and the fields the exchange asks for on its answer whatever it
 * is ({@link ANSWER_FIELDS}: traffic control's `RateLimit` fields), which replace any field of
 * their family already in the head (a backend's `X-RateLimit-*`). The one place that decides these
 * headers; the relay, `sendProblem` and `recordTransaction` call it.
 *
 * - {@link addIdentityHead}: into the header object a handler passes to `writeHead` (the relay:
 *   Node then writes the head in one pass, without a `setHeader` per header);
 * - {@link setIdentityHead}: with `setHeader` on a response about to be sent (`sendProblem`);
 * - {@link hookIdentityHead}: at the last moment before the head goes out, whoever writes it (the
 *   recorder, for answers of the host's own handlers). Every way a `ServerResponse` sends its head
 *   (`end`, `write`, `flushHeaders`, `writeHead`) calls `this.writeHead`, so the hook is a
 *   `writeHead`. In an Express app it is installed once on the app's response prototype
 *   (`app.response`, Express's documented extension point, and its mount parents') and acts only on
 *   responses whose `req.gateway` the recorder marked: assigning `res.writeHead` on every response
 *   instead gives each response object one more hidden-class transition, which Node's own HTTP code
 *   then pays for on every call that touches the response (5-8% of the whole chain's throughput).
 *   Outside Express, or when something already replaced `writeHead` on the response, it falls back
 *   to a per-response hook. A head that already carries the exchange's ids (written by the relay)
 *   is left alone.
 *
 * @module
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ANSWER_FIELDS, ID_HEADERS_ON_HEAD, type AnswerFields, type GatewayContext } from '../context.js';

/** The header that carries the exchange's transaction id, on every answer and to the backend. */
export const TRANSACTION_ID_HEADER = 'Gateway-Transaction-ID';
/** The header that carries the relayed message's id, on answers below 400 only. */
export const MESSAGE_ID_HEADER = 'Gateway-Message-ID';

/** The fields the exchange asks for on its answer, if any. */
function answerFieldsOf(context: GatewayContext | undefined): AnswerFields | undefined {
  return (context as { [ANSWER_FIELDS]?: AnswerFields } | undefined)?.[ANSWER_FIELDS];
}

/** Puts the answer's fields into a header object, dropping the other members of their family. */
function addAnswerFields(head: OutgoingHttpHeaders, answer: AnswerFields): void {
  for (const name in head) if (answer.replaces(name)) delete head[name];
  for (const [name, value] of answer.fields) head[name] = value;
}

/**
 * Adds the exchange's identity to `head`, the header object about to be written with
 * `res.writeHead(status, head)`: the ids, `Server` when `server` is given, and the answer's fields.
 * Names as above (`Server`), so that they replace copies under the same names in `head`.
 */
export function addIdentityHead(head: OutgoingHttpHeaders, context: GatewayContext, status: number, server?: string): void {
  if (server !== undefined) head.Server = server;
  head[TRANSACTION_ID_HEADER] = context.transactionId;
  if (status < 400) head[MESSAGE_ID_HEADER] = context.messageId;
  const answer = answerFieldsOf(context);
  if (answer !== undefined) addAnswerFields(head, answer);
}

/**
 * Sets the exchange's identity on `res`, whose head is about to be written with `status`: the ids
 * of `context` (none without one), `Server` when `server` is given, and no message id on an
 * answer of 400 or more, whoever set one before. Does nothing once the head is sent.
 */
export function setIdentityHead(res: ServerResponse, context: GatewayContext | undefined, status: number, server?: string): void {
  if (res.headersSent) return;
  if (server !== undefined) res.setHeader('Server', server);
  // Not set again when already there (sendProblem, then the recorder's hook on the same head).
  if (context !== undefined && res.getHeader(TRANSACTION_ID_HEADER) !== context.transactionId)
    res.setHeader(TRANSACTION_ID_HEADER, context.transactionId);
  if (status >= 400) {
    if (res.hasHeader(MESSAGE_ID_HEADER)) res.removeHeader(MESSAGE_ID_HEADER);
  } else if (context !== undefined) {
    res.setHeader(MESSAGE_ID_HEADER, context.messageId);
  }
  const answer = answerFieldsOf(context);
  if (answer !== undefined) {
    for (const name of res.getHeaderNames()) if (answer.replaces(name)) res.removeHeader(name);
    for (const [name, value] of answer.fields) res.setHeader(name, value);
  }
}

/** Marks a prototype on which {@link installOnPrototype} put its `writeHead`. */
const INSTALLED = Symbol('express-access-gateway.writeHead');

type WriteHead = ServerResponse['writeHead'];
type Marked = GatewayContext & { [ID_HEADERS_ON_HEAD]?: boolean };

/**
 * The header object of a `writeHead(status, [reason], [headers])` call, when it is one (not an
 * array of raw pairs).
 */
function headArgument(args: ArrayLike<unknown>): OutgoingHttpHeaders | undefined {
  const candidate = typeof args[1] === 'string' ? args[2] : args[1];
  return candidate !== null && typeof candidate === 'object' && !Array.isArray(candidate) ? (candidate as OutgoingHttpHeaders) : undefined;
}

/** Puts the ids on `res` at `writeHead`, unless the head being written already carries them. */
function identifyAtWriteHead(res: ServerResponse, args: ArrayLike<unknown>, context: GatewayContext): void {
  const status = args[0] as number;
  const head = headArgument(args);
  if (head !== undefined && head[TRANSACTION_ID_HEADER] === context.transactionId) {
    // Written by addIdentityHead: leave Node its one-pass head write; only a message id set
    // earlier on an error answer must still go.
    if (status >= 400 && res.hasHeader(MESSAGE_ID_HEADER)) res.removeHeader(MESSAGE_ID_HEADER);
    return;
  }
  setIdentityHead(res, context, status);
  // The head's own fields win over those set on the response: the answer's go into it too.
  const answer = answerFieldsOf(context);
  if (head !== undefined && answer !== undefined) addAnswerFields(head, answer);
}

/**
 * Puts a `writeHead` on `proto` that identifies the answers of marked requests, then calls the
 * `writeHead` that `proto` hides (looked up at each call, so a later patch of
 * `ServerResponse.prototype` still runs). Returns false, installing nothing, when `proto` already
 * has a `writeHead` of its own.
 */
function installOnPrototype(proto: object): boolean {
  if (Object.hasOwn(proto, INSTALLED)) return true;
  if (Object.hasOwn(proto, 'writeHead')) return false;
  const hidden = Object.getPrototypeOf(proto) as { writeHead: WriteHead };
  function writeHead(this: ServerResponse): ServerResponse {
    const context = this.req?.gateway;
    // eslint-disable-next-line prefer-rest-params
    if (context !== undefined && (context as Marked)[ID_HEADERS_ON_HEAD] === true) identifyAtWriteHead(this, arguments, context);
    // eslint-disable-next-line prefer-rest-params
    return Reflect.apply(hidden.writeHead, this, arguments) as ServerResponse;
  }
  Object.defineProperty(proto, 'writeHead', { value: writeHead, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(proto, INSTALLED, { value: true });
  return true;
}

/** An Express app, as far as its response prototype and mount parent go. */
interface AppLike {
  response?: object;
  parent?: AppLike;
}

/**
 * Installs on `proto` when it is an Express app's response prototype, and on those of the apps
 * that app is mounted in (a sub-app hands a request back to its parent with the parent's
 * prototype). Whether `proto` carries the hook afterwards.
 */
function installOnApp(proto: object): boolean {
  if (!Object.hasOwn(proto, 'app') || !installOnPrototype(proto)) return false;
  for (let app = (proto as { app?: AppLike }).app?.parent; app !== undefined; app = app.parent) {
    if (app.response !== undefined && Object.hasOwn(app.response, 'app')) installOnPrototype(app.response);
  }
  return true;
}

/**
 * Makes `res` carry the ids of `context` (the request's `req.gateway`) when its head is written,
 * whoever writes it.
 */
export function hookIdentityHead(res: ServerResponse, context: GatewayContext): void {
  const proto = Object.getPrototypeOf(res) as { writeHead: WriteHead } | null;
  if (
    proto !== null &&
    (Object.hasOwn(proto, INSTALLED) || installOnApp(proto)) &&
    res.writeHead === proto.writeHead &&
    res.req?.gateway === context
  ) {
    (context as Marked)[ID_HEADERS_ON_HEAD] = true;
    return;
  }
  // Not Express's response, or writeHead already replaced on this response (another wrapper):
  // wrap this response's own, and set the id now as well in case the head goes out some other way.
  const original = res.writeHead;
  res.setHeader(TRANSACTION_ID_HEADER, context.transactionId);
  const hooked = function (this: ServerResponse, ...args: unknown[]): ServerResponse {
    identifyAtWriteHead(this, args, context);
    return (original as (...rest: unknown[]) => ServerResponse).apply(this, args);
  };
  res.writeHead = hooked as WriteHead;
}
