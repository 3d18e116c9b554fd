/**
 * `express-access-gateway serve` with the standard `OTEL_*` variables: the gateway's spans reach an
 * OTLP/HTTP collector (here an in-process receiver of `POST /v1/traces`), flushed at the stop.
 */
import { createServer, type Server } from 'node:http';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { close, echoBackend, exampleCopy, listen, openConfig } from '../gateway/helpers.js';
import { serve, stop } from './support.js';

interface ExportedSpan {
  name: string;
  traceId: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}
interface Export {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ scope: { name: string }; spans: ExportedSpan[] }>;
  }>;
}

/** A collector's traces endpoint: keeps every export it receives. */
async function collector(): Promise<{ url: string; server: Server; exports: Array<{ path: string; type: string; body: Export }> }> {
  const exports: Array<{ path: string; type: string; body: Export }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      exports.push({
        path: req.url ?? '',
        type: String(req.headers['content-type']),
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Export,
      });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  return { url: await listen(server), server, exports };
}

describe('express-access-gateway serve: OpenTelemetry traces', function () {
  this.timeout(60_000);
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let otlp: Awaited<ReturnType<typeof collector>>;

  before(async () => {
    [echo, copy, otlp] = await Promise.all([echoBackend(), exampleCopy(), collector()]);
  });
  after(async () => {
    await Promise.all([echo.stop(), copy.remove(), close(otlp.server)]);
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT: the spans of an exchange reach the collector with OTEL_SERVICE_NAME, the last ones flushed at SIGTERM', async () => {
    const open = path.join(copy.dir, 'traced.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const served = serve(['serve', '--config', open, '--port', '0', '--admin-port', '0'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'gateway-under-test',
      // Long enough that only the stop's flush sends them.
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    });
    try {
      await served.waitFor(new RegExp(`exporting spans to ${otlp.url}/v1/traces`));
      const [, api] = await served.waitFor(/serving APIs at (http:\/\/\S+)/);
      const res = await fetch(`${api}/gateway/Ente/Echo/v1/pet?access_token=never-in-a-span`, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      });
      expect(res.status).to.equal(201);
      expect(otlp.exports).to.have.length(0);
      served.child.kill('SIGTERM');
      expect(await served.exited()).to.equal(0);
    } finally {
      await stop(served);
    }
    expect(otlp.exports.length).to.be.greaterThan(0);
    expect(otlp.exports[0]).to.include({ path: '/v1/traces', type: 'application/json' });
    const resources = otlp.exports.flatMap((e) => e.body.resourceSpans);
    const service = resources[0]!.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
    expect(service).to.equal('gateway-under-test');
    const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const names = spans.map((s) => s.name);
    expect(names).to.include('GET Ente/Echo/v1');
    // The client's trace is continued, and the relay to the backend is a span of it.
    expect(spans.filter((s) => s.traceId === traceId).length).to.be.greaterThan(1);
    expect(JSON.stringify(otlp.exports)).not.to.include('never-in-a-span');
  });

  it('OTEL_SDK_DISABLED=true, or no endpoint: no SDK, nothing exported', async () => {
    const open = path.join(copy.dir, 'untraced.json');
    await writeFile(open, JSON.stringify(openConfig(echo.url)));
    const before = otlp.exports.length;
    for (const env of [{ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SDK_DISABLED: 'true' }, {}] as Array<Record<string, string>>) {
      const served = serve(['serve', '--config', open, '--port', '0', '--admin-port', '0'], env);
      try {
        const [, api] = await served.waitFor(/serving APIs at (http:\/\/\S+)/);
        expect((await fetch(`${api}/gateway/Ente/Echo/v1/pet`)).status).to.equal(201);
        served.child.kill('SIGTERM');
        expect(await served.exited()).to.equal(0);
        expect(served.output()).not.to.include('exporting spans');
      } finally {
        await stop(served);
      }
    }
    expect(otlp.exports.length).to.equal(before);
  });
});
