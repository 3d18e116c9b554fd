/**
 * The OpenTelemetry SDK of `express-access-gateway serve`, started from the standard `OTEL_*`
 * variables: a `NodeTracerProvider` whose `BatchSpanProcessor` exports the gateway's spans (see
 * tracing.ts) with OTLP over HTTP (JSON). The library itself never starts one: a host registers its own.
 *
 * @module
 */

/** The started SDK. */
export interface TracingExport {
  /**
   * Where spans go: the traces endpoint, as configured. OpenTelemetry's variables put credentials
   * in `OTEL_EXPORTER_OTLP_HEADERS`, not here.
   */
  readonly endpoint: string;
  /** `service.name` of the spans. */
  readonly serviceName: string;
  /** A protocol asked for (`OTEL_EXPORTER_OTLP_PROTOCOL`) that is not the one used, to warn of. */
  readonly ignoredProtocol: string | undefined;
  /** Exports the spans still queued, then stops. */
  shutdown(): Promise<void>;
}

const DEFAULT_SERVICE_NAME = 'express-access-gateway';

function set(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** The endpoint the exporter will use, as the OTLP specification composes it from the variables. */
function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const traces = set(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) return traces;
  const base = set(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  return base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** A URL for the log: scheme, host, port and path only. */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Starts exporting spans when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * is set and `OTEL_SDK_DISABLED` is not `true`; else does nothing and returns `undefined`. The
 * SDK's packages are loaded only then.
 */
export async function startTracingExport(env: NodeJS.ProcessEnv, serviceVersion: string): Promise<TracingExport | undefined> {
  if (set(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return undefined;
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const serviceName = set(env, 'OTEL_SERVICE_NAME') ?? DEFAULT_SERVICE_NAME;
  // OTEL_RESOURCE_ATTRIBUTES is read (envDetector); the service's name and version win over it.
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': serviceName, 'service.version': serviceVersion }));
  // The exporter reads the endpoint, headers, timeout and compression from the OTEL_* variables.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  provider.register();
  const protocol = set(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? set(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  return {
    endpoint: shownUrl(endpoint),
    serviceName,
    ignoredProtocol: protocol === undefined || protocol === 'http/json' ? undefined : protocol,
    shutdown: () => provider.shutdown(),
  };
}
