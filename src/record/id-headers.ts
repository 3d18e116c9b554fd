/**
 * How `recordTransaction` puts `Gateway-Transaction-ID` (always) and `Gateway-Message-ID` (status
 * below 400) on a response: at the last moment before the head goes out, when the final status is
 * known, through `writeHead` (every way a `ServerResponse` sends its head, `end`, `write`,
 * `flushHeaders` or `writeHead`, calls `this.writeHead`).
 *
 * In an Express app the hook is installed once on the app's response prototype (`app.response`,
 * Express's documented extension point, and its mount parents'), and acts only on responses whose
 * `req.gateway` a recorder marked. Assigning `res.writeHead` on every response instead gives each
 * response object one more hidden-class transition, which Node's own HTTP code then pays for on
 * every call that touches the response (measured: 5-8% of the whole chain's throughput). Outside
 * Express, or when something already replaced `writeHead` on the response, it falls back to a
 * per-response hook.
 *
 * @module
 */
import { ServerResponse } from 'node:http';
import { ID_HEADERS_ON_HEAD, type GatewayContext } from '../context.js';

/** Marks a prototype on which {@link installOnPrototype} put its `writeHead`. */
const INSTALLED = Symbol('express-access-gateway.writeHead');

type WriteHead = ServerResponse['writeHead'];

/** The context's ids go on the head of `res`, which is about to be written with `statusCode`. */
function putIds(res: ServerResponse, statusCode: number, context: GatewayContext): void {
  if (res.headersSent) return;
  res.setHeader('Gateway-Transaction-ID', context.transactionId);
  if (statusCode < 400) res.setHeader('Gateway-Message-ID', context.messageId);
  else if (res.hasHeader('Gateway-Message-ID')) res.removeHeader('Gateway-Message-ID');
}

/**
 * Puts a `writeHead` on `proto` that sets the ids of marked requests, then calls the `writeHead`
 * that `proto` hides (looked up at each call, so a later patch of `ServerResponse.prototype` still
 * runs). Returns false, installing nothing, when `proto` already has a `writeHead` of its own.
 */
function installOnPrototype(proto: object): boolean {
  if (Object.hasOwn(proto, INSTALLED)) return true;
  if (Object.hasOwn(proto, 'writeHead')) return false;
  const hidden = Object.getPrototypeOf(proto) as { writeHead: WriteHead };
  function writeHead(this: ServerResponse, statusCode: number): ServerResponse {
    const context = this.req?.gateway;
    if (context !== undefined && (context as Marked)[ID_HEADERS_ON_HEAD] === true) putIds(this, statusCode, context);
    // eslint-disable-next-line prefer-rest-params
    return Reflect.apply(hidden.writeHead, this, arguments) as ServerResponse;
  }
  Object.defineProperty(proto, 'writeHead', { value: writeHead, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(proto, INSTALLED, { value: true });
  return true;
}

type Marked = GatewayContext & { [ID_HEADERS_ON_HEAD]?: boolean };

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
 * Makes `res` carry the ids of `context` (the request's `req.gateway`) when its head is written.
 */
export function hookIdHeaders(res: ServerResponse, context: GatewayContext): void {
  const proto = Object.getPrototypeOf(res) as { writeHead: WriteHead } | null;
  if (proto !== null && (Object.hasOwn(proto, INSTALLED) || installOnApp(proto)) && res.writeHead === proto.writeHead && res.req?.gateway === context) {
    (context as Marked)[ID_HEADERS_ON_HEAD] = true;
    return;
  }
  // Not Express's response, or writeHead already replaced on this response (another wrapper):
  // wrap this response's own, and set the id now as well in case the head goes out some other way.
  const original = res.writeHead;
  res.setHeader('Gateway-Transaction-ID', context.transactionId);
  const hooked = function (this: ServerResponse, statusCode: number, ...rest: unknown[]): ServerResponse {
    putIds(this, statusCode, context);
    return (original as (...args: unknown[]) => ServerResponse).call(this, statusCode, ...rest);
  };
  res.writeHead = hooked as WriteHead;
}
