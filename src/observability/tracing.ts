/**
 * OpenTelemetry spans of the gateway, through `@opentelemetry/api` only: whatever SDK the host
 * registers (none is a dependency) records them; with none, the API's no-op tracer answers and
 * nothing is allocated past the start of an exchange.
 *
 * One server span per exchange (`<method> <provider>/<api>/v<n>`), continuing the client's
 * `traceparent` (or the host's active span, when its own HTTP instrumentation made one), with
 * children for the token validation (and, under it, each call to the authorization server), the
 * XACML evaluation and the relay (a client span whose context goes to the backend as
 * `traceparent`/`tracestate`). Attributes follow the OpenTelemetry HTTP semantic conventions, plus
 * `gateway.api`, `gateway.operation`, `gateway.outcome` and `gateway.transaction_id`. No token,
 * query string or claim is ever an attribute.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import {
  context as otelContext,
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { EXCHANGE_TRACE, type GatewayContext, type Middleware } from '../context.js';
import { isGatewayError } from '../errors.js';
import { apiKey, type TransactionRecord } from '../record/types.js';
import type { TokenPolicyObserver } from '../token/policy.js';
import { formatTraceparent, incomingTrace, type ExchangeTrace, type TraceHeaders } from './trace-context.js';

/** The instrumentation scope of the gateway's spans. */
export const TRACER_NAME = 'express-access-gateway';

type Traced = GatewayContext & { [EXCHANGE_TRACE]?: ExchangeTrace | undefined };

/** The exchange's trace, when it has one. */
export function exchangeTraceOf(context: GatewayContext | undefined): ExchangeTrace | undefined {
  return context === undefined ? undefined : (context as Traced)[EXCHANGE_TRACE];
}

const MAX_ATTRIBUTE = 256;
const clip = (value: string): string => (value.length > MAX_ATTRIBUTE ? value.slice(0, MAX_ATTRIBUTE) : value);

const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);
/** `http.request.method` as the conventions want it: a known method, else `_OTHER`. */
function methodOf(method: string | undefined): string {
  return method !== undefined && KNOWN_METHODS.has(method) ? method : '_OTHER';
}

const SERVER_SPAN = { kind: SpanKind.SERVER } as const;
const NESTED_SERVER_SPAN = { kind: SpanKind.INTERNAL } as const;
const INTERNAL_SPAN = { kind: SpanKind.INTERNAL } as const;
const CLIENT_SPAN = { kind: SpanKind.CLIENT } as const;

/** The spans of one gateway. */
export class GatewayTracing {
  /** Obtained once per gateway: the API's proxy tracer follows an SDK registered later. */
  readonly tracer: Tracer = trace.getTracer(TRACER_NAME);

  /**
   * Starts the exchange's trace, first thing on the request path: validates the client's trace
   * context and, when an SDK is registered, starts the server span. Leaves no trace on the context
   * when there is neither.
   */
  start(req: IncomingMessage, context: GatewayContext): void {
    const headers = req.headers;
    const incoming = headers.traceparent === undefined ? undefined : incomingTrace(headers.traceparent, headers.tracestate);
    const active = otelContext.active();
    // The host's HTTP instrumentation already made the server span (and continued the client's
    // trace context): ours nests under it.
    const hosted = isSpanContextValid(trace.getSpanContext(active) ?? INVALID);
    let parent: Context = active;
    if (!hosted && incoming !== undefined) {
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: incoming.traceId,
        spanId: incoming.spanId,
        traceFlags: incoming.flags & 0xff,
        isRemote: true,
        ...(incoming.tracestate === undefined ? {} : { traceState: createTraceState(incoming.tracestate) }),
      });
    }
    const span = this.tracer.startSpan(methodOf(req.method), hosted ? NESTED_SERVER_SPAN : SERVER_SPAN, parent);
    const own = span.spanContext();
    // The no-op tracer answers the parent's context (or an invalid one): no SDK made a span.
    if (isSpanContextValid(own) && own.spanId !== incoming?.spanId) {
      if (span.isRecording()) span.setAttributes(serverAttributes(req, context));
      const exchange: ExchangeTrace = { traceId: own.traceId, span, context: setSpan(parent, span), incoming };
      (context as Traced)[EXCHANGE_TRACE] = exchange;
    } else if (incoming !== undefined) {
      (context as Traced)[EXCHANGE_TRACE] = { traceId: incoming.traceId, span: undefined, context: undefined, incoming };
    }
  }

  /** Ends the exchange's server span with what the record says. */
  end(context: GatewayContext, record: TransactionRecord): void {
    const span = exchangeTraceOf(context)?.span;
    if (span === undefined) return;
    if (span.isRecording()) {
      const attributes: Attributes = { 'gateway.outcome': record.outcome.code };
      if (record.status !== null) attributes['http.response.status_code'] = record.status;
      if (record.api !== undefined) {
        const key = apiKey(record.api);
        attributes['gateway.api'] = key;
        span.updateName(`${methodOf(record.method)} ${key}`);
      }
      if (record.operation !== undefined) attributes['gateway.operation'] = record.operation;
      if (record.errorCode !== undefined) attributes['gateway.error_code'] = record.errorCode;
      // Server spans: 5xx is an error, 4xx is the client's (the conventions).
      if (record.status !== null && record.status >= 500) {
        attributes['error.type'] = String(record.status);
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else if (record.aborted) {
        attributes['error.type'] = 'aborted';
      }
      span.setAttributes(attributes);
    }
    span.end();
  }

  /**
   * `step` inside a span named `name` (child of the exchange's span, and the active context while
   * the step runs, so that spans the step starts, such as the authorization server's, nest under
   * it). Without a span on the exchange, `step` runs as is.
   */
  step(name: string, step: Middleware, finish?: (span: Span, context: GatewayContext) => void): Middleware {
    const tracer = this.tracer;
    return (req, res, next) => {
      const exchange = exchangeTraceOf(req.gateway);
      if (exchange?.context === undefined) {
        step(req, res, next);
        return;
      }
      const span = tracer.startSpan(name, INTERNAL_SPAN, exchange.context);
      otelContext.with(setSpan(exchange.context, span), () =>
        step(req, res, (err?: unknown) => {
          if (err !== undefined && err !== null) {
            span.setAttribute('error.type', isGatewayError(err) ? err.code : 'error');
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          if (finish !== undefined && req.gateway !== undefined) finish(span, req.gateway);
          span.end();
          next(err);
        }),
      );
    };
  }

  /** Starts the relay's client span, when the exchange has a span. */
  startRelay(context: GatewayContext, method: string | undefined, target: URL, path: string): Span | undefined {
    const exchange = exchangeTraceOf(context);
    if (exchange?.context === undefined) return undefined;
    const span = this.tracer.startSpan(methodOf(method), CLIENT_SPAN, exchange.context);
    if (span.isRecording()) {
      const query = path.indexOf('?');
      span.setAttributes({
        'http.request.method': methodOf(method),
        'server.address': target.hostname,
        'server.port': Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
        // Without the query string: it may carry what a backend gets but a trace must not keep.
        'url.full': clip(target.origin + (query === -1 ? path : path.slice(0, query))),
      });
    }
    return span;
  }
}

const INVALID = { traceId: '', spanId: '', traceFlags: 0 };

function setSpan(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

function serverAttributes(req: IncomingMessage, context: GatewayContext): Attributes {
  // The canonical target as received (`req.url` is below the base path by now).
  const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const query = url.indexOf('?');
  const host = req.headers.host;
  const attributes: Attributes = {
    'http.request.method': methodOf(req.method),
    // The path only: the query may carry an access_token.
    'url.path': clip(query === -1 ? url : url.slice(0, query)),
    'url.scheme': (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http',
    'network.protocol.version': req.httpVersion,
    'gateway.transaction_id': context.transactionId,
  };
  if (host !== undefined) {
    const colon = host.lastIndexOf(':');
    const bracket = host.lastIndexOf(']');
    if (colon > bracket && colon !== -1) {
      attributes['server.address'] = clip(host.slice(0, colon));
      const port = Number(host.slice(colon + 1));
      if (Number.isInteger(port)) attributes['server.port'] = port;
    } else {
      attributes['server.address'] = clip(host);
    }
  }
  const client = req.socket?.remoteAddress;
  if (client !== undefined) attributes['client.address'] = client;
  const agent = req.headers['user-agent'];
  if (agent !== undefined) attributes['user_agent.original'] = clip(agent);
  return attributes;
}

/** Ends the relay's span with the backend's status, or the failure. */
export function endRelaySpan(span: Span, status: number | undefined, error: unknown): void {
  if (span.isRecording()) {
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (error !== undefined) {
      span.setAttribute('error.type', isGatewayError(error) ? error.code : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    } else if (status !== undefined && status >= 400) {
      // Client spans: 4xx and 5xx are errors (the conventions).
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}

/**
 * The trace context the backend gets: the relay span's (an SDK is registered), else the client's
 * as it came (validated), else none. Sets the exchange's trace from the client's headers when
 * nothing did before (a relay used without `createGateway`), so that the record keeps it.
 */
export function traceHeadersFor(req: IncomingMessage, context: GatewayContext, relaySpan: Span | undefined): TraceHeaders | undefined {
  if (relaySpan !== undefined) {
    const own = relaySpan.spanContext();
    if (isSpanContextValid(own))
      return {
        traceparent: formatTraceparent(own.traceId, own.spanId, own.traceFlags),
        tracestate: own.traceState?.serialize() || undefined,
      };
  }
  let exchange = exchangeTraceOf(context);
  if (exchange === undefined) {
    const incoming = req.headers.traceparent === undefined ? undefined : incomingTrace(req.headers.traceparent, req.headers.tracestate);
    if (incoming === undefined) return undefined;
    exchange = { traceId: incoming.traceId, span: undefined, context: undefined, incoming };
    (context as Traced)[EXCHANGE_TRACE] = exchange;
  }
  const span = exchange.span?.spanContext();
  if (span !== undefined && isSpanContextValid(span)) {
    return {
      traceparent: formatTraceparent(span.traceId, span.spanId, span.traceFlags),
      tracestate: span.traceState?.serialize() || undefined,
    };
  }
  return exchange.incoming === undefined
    ? undefined
    : { traceparent: exchange.incoming.traceparent, tracestate: exchange.incoming.tracestate };
}

/**
 * Runs one call to the authorization server in a client span (child of the active context: the
 * token validation's), the call itself in that span's context so that a host's HTTP
 * instrumentation nests under it.
 */
export async function tracedCall<T>(tracer: Tracer, policy: string, endpoint: string, run: () => Promise<T>): Promise<T> {
  const parent = otelContext.active();
  if (!isSpanContextValid(trace.getSpanContext(parent) ?? INVALID)) return run();
  const span = tracer.startSpan(`authorization server ${endpoint}`, CLIENT_SPAN, parent);
  span.setAttributes({ 'gateway.token.policy': policy, 'gateway.authorization_server.endpoint': endpoint });
  try {
    return await otelContext.with(setSpan(parent, span), run);
  } catch (err) {
    span.setAttribute('error.type', isGatewayError(err) ? err.code : err instanceof Error ? err.name : 'error');
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** A token policy observer that only traces the authorization server calls (metrics off). */
export function tracingTokenObserver(tracing: GatewayTracing, policy: string): TokenPolicyObserver {
  return {
    validated() {
      // Counted by the metrics only.
    },
    call: (endpoint, run) => tracedCall(tracing.tracer, policy, endpoint, run),
  };
}
