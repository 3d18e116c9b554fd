/**
 * The token cache holds what it says (docs/token-policies.md, "The cache"): its byte bound
 * (`cacheMaxBytes`) counts each cached token's result and what the requests derived from it (XACML
 * attributes, forwarded headers, the record's token part, remembered decisions), so that the heap
 * the cached tokens hold, measured with a forced collection, is the bound's within 20%.
 *
 * The example's gateway (scenario policy, forwarding, records) in this process, the demo
 * authorization server issuing one token per client call.
 */
import { createServer, type Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { startDemoAuthServer, type DemoAuthServer } from '../../examples/petstore/auth-server.js';
import { createGateway, type Gateway, type GatewayConfig, type TransactionStore } from '../../src/index.js';
import { close, echoBackend, exampleConfig, exampleDir, listen } from '../gateway/helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after full collections. */
function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Keeps no record: the records' memory is not the token cache's. */
const discard: TransactionStore = {
  save: async () => undefined,
  get: async () => undefined,
  query: async () => ({ items: [], total: 0 }),
} as unknown as TransactionStore;

const TOKENS = 1000;

describe('token cache: its byte bound is the heap its tokens hold', function () {
  this.timeout(300_000);
  let as: DemoAuthServer;
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  const tokens: string[] = [];

  before(async () => {
    [as, echo] = await Promise.all([startDemoAuthServer({ port: 0 }), echoBackend()]);
    for (let i = 0; i < TOKENS; i++) tokens.push(await as.issueToken('client1', 'client1-secret'));
  });
  after(async () => {
    await Promise.all([as?.stop(), echo?.stop()]);
  });

  /** The example's gateway with `maxBytes` for its token cache (default: the default). */
  async function gatewayWith(maxBytes?: number): Promise<{ gateway: Gateway; server: Server; base: string }> {
    const config: GatewayConfig = await exampleConfig(as.issuer, echo.url);
    if (maxBytes !== undefined) config.tokenPolicies!['DemoIdP']!.cacheMaxBytes = maxBytes;
    const gateway = createGateway({ config, baseDir: exampleDir, store: discard });
    const server = createServer((req, res) => gateway.handler(req, res));
    return { gateway, server, base: await listen(server) };
  }

  /** Each token twice (the second time every per-token value is made); the heap the cache's tokens hold. */
  async function heapOfTokens(gateway: Gateway, base: string): Promise<{ heap: number; estimated: number; cached: number }> {
    const call = async (token: string): Promise<number> => {
      const res = await fetch(`${base}/gateway/Ente/PetStore/v1/pet/1`, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await call(tokens[0]!)).to.equal(201);
    for (const token of tokens) expect(await call(token)).to.equal(201);
    for (const token of tokens) await call(token);
    echo.seen.length = 0;
    const metrics = await gateway.metrics!.registry.getSingleMetricAsString('gateway_token_cache_bytes');
    const estimated = Number(/gateway_token_cache_bytes\{[^}]*\} (\d+)/.exec(metrics)?.[1]);
    const cached = Number(
      /gateway_token_cache_entries\{[^}]*kind="valid"[^}]*\} (\d+)/.exec(
        await gateway.metrics!.registry.getSingleMetricAsString('gateway_token_cache_entries'),
      )?.[1],
    );
    // Every token is client1's: forgetting its results empties the cache, and nothing else.
    const held = heapUsed();
    expect(gateway.forget({ clientId: 'client1' })).to.equal(cached);
    const heap = held - heapUsed();
    return { heap, estimated, cached };
  }

  it(`${TOKENS} cached tokens of the scenario: the bound's count is their heap within 20%`, async () => {
    const { gateway, server, base } = await gatewayWith();
    try {
      const { heap, estimated, cached } = await heapOfTokens(gateway, base);
      console.log(
        `      ${cached} tokens cached: heap ${(heap / cached).toFixed(0)} B per token, counted ${(estimated / cached).toFixed(0)} B (${((100 * estimated) / heap).toFixed(0)}%)`,
      );
      expect(cached).to.equal(TOKENS);
      expect(estimated / heap).to.be.within(0.8, 1.2);
    } finally {
      await close(server);
      await gateway.close();
    }
  });

  it('a bound of 1 MiB: the tokens it keeps hold 1 MiB of heap within 20%', async () => {
    const bound = 1024 * 1024;
    const { gateway, server, base } = await gatewayWith(bound);
    try {
      const { heap, estimated, cached } = await heapOfTokens(gateway, base);
      console.log(
        `      bound 1 MiB: ${cached} of ${TOKENS} tokens kept, ${(heap / 1024).toFixed(0)} KiB of heap, ${(estimated / 1024).toFixed(0)} KiB counted`,
      );
      expect(cached).to.be.below(TOKENS);
      expect(estimated).to.be.at.most(bound);
      expect(heap / bound).to.be.within(0.8, 1.2);
    } finally {
      await close(server);
      await gateway.close();
    }
  });
});
