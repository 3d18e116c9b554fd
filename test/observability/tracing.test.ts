/**
 * Traces: with an in-memory OpenTelemetry SDK registered by the test, the spans of one exchange
 * form one tree and the backend receives a `traceparent` of that trace; an incoming `traceparent`
 * is continued. With no SDK, a valid incoming trace context is validated, kept in the record and
 * passed to the backend unchanged; an invalid one never reaches it.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, serveGateway, type GatewayConfig, type GatewayServer } from '../../src/index.js';
import { echoBackend, editJson, exampleCopy, type Seen } from '../gateway/helpers.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const TRACESTATE = 'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7';

describe('traces', function () {
  this.timeout(60_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let token: string;

  before(async () => {
    [as, echo, copy] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend(), exampleCopy()]);
    await editJson<GatewayConfig>(copy.configFile, (config) => {
      config.tokenPolicies!['DemoIdP']!.issuer = as.issuer;
      config.apis[0]!.backend.url = echo.url;
    });
    token = await as.issueToken('client1', 'client1-secret');
  });
  after(async () => {
    await Promise.all([as.stop(), echo.stop(), copy.remove()]);
  });

  async function start(): Promise<GatewayServer> {
    const gateway = createGateway({ config: copy.configFile, metrics: false });
    await gateway.ready();
    return serveGateway(gateway, { port: 0, adminPort: false });
  }

  /** One exchange: its answer, what the backend saw, and its record. */
  async function exchange(server: GatewayServer, headers: Record<string, string> = {}) {
    const answer = await fetch(`${server.url}/gateway/Ente/PetStore/v1/pet/10`, {
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
    expect(answer.status).to.equal(201);
    const seen = (await answer.json()) as Seen;
    const id = answer.headers.get('gateway-transaction-id')!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const record = await server.gateway.store.get(id);
    expect(record, 'record').to.not.equal(undefined);
    return { id, seen, record: record! };
  }

  describe('without an OpenTelemetry SDK', () => {
    let server: GatewayServer;
    before(async () => {
      server = await start();
    });
    after(() => server.stop());

    it('passes a valid incoming trace context to the backend unchanged and keeps its trace id in the record', async () => {
      const { seen, record } = await exchange(server, { traceparent: TRACEPARENT, tracestate: TRACESTATE });
      expect(seen.headers.traceparent).to.equal(TRACEPARENT);
      expect(seen.headers.tracestate).to.equal(TRACESTATE);
      expect(record.traceId).to.equal(TRACE_ID);
      // The record says what was sent (the example records outgoing headers).
      expect(record.outgoing?.headers['traceparent']).to.equal(TRACEPARENT);
      expect(record.outgoing?.headers['tracestate']).to.equal(TRACESTATE);
    });

    it('drops an invalid traceparent (and its tracestate), and sends none when none came', async () => {
      for (const bad of [
        `00-${'0'.repeat(32)}-${PARENT_ID}-01`,
        TRACEPARENT.toUpperCase(),
        `${TRACEPARENT}-extra`,
        'ff' + TRACEPARENT.slice(2),
        `${TRACEPARENT}, ${TRACEPARENT}`,
        'garbage',
      ]) {
        const { seen, record } = await exchange(server, { traceparent: bad, tracestate: TRACESTATE });
        expect(seen.headers.traceparent, bad).to.equal(undefined);
        expect(seen.headers.tracestate, bad).to.equal(undefined);
        expect(record.traceId, bad).to.equal(undefined);
        expect(record.outgoing?.headers['traceparent'], bad).to.equal(undefined);
      }
      const plain = await exchange(server);
      expect(plain.seen.headers.traceparent).to.equal(undefined);
      expect(plain.record.traceId).to.equal(undefined);
    });

    it('keeps a valid traceparent with an invalid tracestate, without the tracestate', async () => {
      const { seen, record } = await exchange(server, { traceparent: TRACEPARENT, tracestate: 'Bad Key=1' });
      expect(seen.headers.traceparent).to.equal(TRACEPARENT);
      expect(seen.headers.tracestate).to.equal(undefined);
      expect(record.outgoing?.headers['tracestate']).to.equal(undefined);
    });
  });

  describe('with an in-memory OpenTelemetry SDK registered', () => {
    const exporter = new InMemorySpanExporter();
    let provider: BasicTracerProvider;
    let server: GatewayServer;
    before(async () => {
      provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      trace.setGlobalTracerProvider(provider);
      server = await start();
    });
    after(async () => {
      await server.stop();
      trace.disable();
      context.disable();
      await provider.shutdown();
    });
    beforeEach(() => exporter.reset());

    /** The spans of one trace, once the server span has ended. */
    async function spansOf(traceId: string): Promise<ReadableSpan[]> {
      for (
        let i = 0;
        i < 50 && !exporter.getFinishedSpans().some((s) => s.spanContext().traceId === traceId && s.name.startsWith('GET '));
        i++
      ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    }

    /** Checks that `spans` form one tree and gives its root and each span's parent's name. */
    function tree(spans: ReadableSpan[]): { root: ReadableSpan; parentOf: (name: string) => string | undefined } {
      const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
      const roots = spans.filter((s) => !byId.has(s.parentSpanContext?.spanId ?? ''));
      expect(
        roots.map((s) => s.name),
        'one root',
      ).to.have.length(1);
      return {
        root: roots[0]!,
        parentOf: (name) => {
          const span = spans.find((s) => s.name === name);
          expect(span, name).to.not.equal(undefined);
          return byId.get(span!.parentSpanContext?.spanId ?? '')?.name;
        },
      };
    }

    it('makes one tree per exchange, and the backend receives a traceparent of that trace (the relay span)', async () => {
      const { id, seen, record } = await exchange(server);
      const traceId = record.traceId!;
      expect(traceId).to.match(/^[0-9a-f]{32}$/);
      const spans = await spansOf(traceId);
      const { root, parentOf } = tree(spans);
      expect(root.name).to.equal('GET Ente/PetStore/v1');
      expect(root.kind).to.equal(1); // SERVER
      expect(root.attributes['gateway.transaction_id']).to.equal(id);
      expect(root.attributes['gateway.api']).to.equal('Ente/PetStore/v1');
      expect(root.attributes['gateway.outcome']).to.equal('OK');
      expect(root.attributes['http.request.method']).to.equal('GET');
      expect(root.attributes['http.response.status_code']).to.equal(201);
      expect(root.attributes['url.path']).to.equal('/gateway/Ente/PetStore/v1/pet/10');
      expect(parentOf('gateway token validation')).to.equal(root.name);
      expect(parentOf('authorization server introspection')).to.equal('gateway token validation');
      expect(parentOf('gateway xacml evaluation')).to.equal(root.name);
      const relay = spans.find((s) => s.kind === 2 /* CLIENT */ && s.name === 'GET')!;
      expect(parentOf('GET')).to.equal(root.name);
      expect(relay.attributes['http.response.status_code']).to.equal(201);
      expect(spans.find((s) => s.name === 'gateway xacml evaluation')!.attributes['gateway.xacml.decision']).to.equal('Permit');
      // The backend got the relay span's context, and the record says so.
      expect(seen.headers.traceparent).to.equal(`00-${traceId}-${relay.spanContext().spanId}-01`);
      expect(record.outgoing?.headers['traceparent']).to.equal(seen.headers.traceparent);
      // No attribute holds the token.
      expect(JSON.stringify(spans.map((s) => s.attributes))).to.not.include(token);
    });

    it('continues an incoming traceparent (its tracestate carried on), a cached token making no authorization server span', async () => {
      const { seen, record } = await exchange(server, { traceparent: TRACEPARENT, tracestate: TRACESTATE });
      expect(record.traceId).to.equal(TRACE_ID);
      const spans = await spansOf(TRACE_ID);
      const { root } = tree(spans);
      expect(root.parentSpanContext?.spanId).to.equal(PARENT_ID);
      expect(root.parentSpanContext?.isRemote).to.equal(true);
      expect(spans.map((s) => s.name)).to.not.include('authorization server introspection');
      const relay = spans.find((s) => s.kind === 2)!;
      expect(seen.headers.traceparent).to.equal(`00-${TRACE_ID}-${relay.spanContext().spanId}-01`);
      expect(seen.headers.tracestate).to.equal('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    });

    it('starts a new trace for an invalid incoming traceparent, never relaying it', async () => {
      const bad = `00-${TRACE_ID}-${'0'.repeat(16)}-01`;
      const { seen, record } = await exchange(server, { traceparent: bad });
      expect(record.traceId).to.not.equal(TRACE_ID);
      expect(seen.headers.traceparent).to.not.equal(bad);
      expect(seen.headers.traceparent).to.match(new RegExp(`^00-${record.traceId}-[0-9a-f]{16}-01$`));
    });
  });
});
