/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * headers a client sends, validated, and the trace of one exchange as the gateway keeps it. Needs
 * no OpenTelemetry SDK: without one, a valid incoming trace context is kept in the record and
 * passed to the backend unchanged; an invalid one is dropped, never relayed as it came.
 *
 * @module
 */
import type { Context, Span } from '@opentelemetry/api';

/** A client's trace context, validated. */
export interface IncomingTrace {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The client's span: 16 lower-case hex digits, not all zero. */
  readonly spanId: string;
  /** The trace flags byte (bit 0: sampled). */
  readonly flags: number;
  /** The `traceparent` header as received (valid). */
  readonly traceparent: string;
  /** The `tracestate` header as received, when present and valid. */
  readonly tracestate: string | undefined;
}

/** The trace of one exchange, on its gateway context (see `EXCHANGE_TRACE`). */
export interface ExchangeTrace {
  /** The trace id, for the record. */
  readonly traceId: string;
  /** The exchange's span, when an OpenTelemetry SDK made one (recording or not). */
  readonly span: Span | undefined;
  /** The context the exchange's child spans start in (with `span`), when there is a span. */
  readonly context: Context | undefined;
  /** The client's trace context, when it sent a valid one. */
  readonly incoming: IncomingTrace | undefined;
}

/** The headers of a trace context, as sent to a backend. */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate: string | undefined;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// A later version: its first fields read as version 00's, anything after them behind a `-`.
const LATER_VERSION = /^(0[1-9a-f]|[1-9a-e][0-9a-f]|f[0-9a-e])-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The client's trace context from its `traceparent` (and `tracestate`) headers, or `undefined`
 * when there is none or `traceparent` is not valid (then `tracestate` is ignored too, as the
 * specification requires). Several `traceparent` headers (which Node joins with `, `) are not valid.
 */
export function incomingTrace(
  traceparent: string | string[] | undefined,
  tracestate: string | string[] | undefined,
): IncomingTrace | undefined {
  if (typeof traceparent !== 'string' || traceparent.length < 55 || traceparent.length > 512) return undefined;
  const match = VERSION_00.exec(traceparent) ?? LATER_VERSION.exec(traceparent);
  if (match === null) return undefined;
  const [traceId, spanId, flags] = match[0].startsWith('00-') ? [match[1]!, match[2]!, match[3]!] : [match[2]!, match[3]!, match[4]!];
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  const state = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  return {
    traceId,
    spanId,
    flags: Number.parseInt(flags, 16),
    traceparent,
    tracestate: state !== undefined && validTracestate(state) ? state : undefined,
  };
}

const KEY = /^(?:[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})$/;
// Printable ASCII but `,` and `=`, not ending with a space, at most 256 characters.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Whether `value` is a valid `tracestate`: at most 32 list members `key=value` with unique keys,
 * separated by commas (optional spaces and tabs around them, empty members allowed).
 */
export function validTracestate(value: string): boolean {
  if (value.length > 8192) return false;
  const keys = new Set<string>();
  for (const raw of value.split(',')) {
    const member = raw.replace(/^[ \t]+|[ \t]+$/g, '');
    if (member === '') continue;
    const eq = member.indexOf('=');
    if (eq <= 0) return false;
    const key = member.slice(0, eq);
    if (!KEY.test(key) || !VALUE.test(member.slice(eq + 1)) || keys.has(key)) return false;
    keys.add(key);
    if (keys.size > 32) return false;
  }
  return true;
}

/** A `traceparent` (version 00) for a span context. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}
