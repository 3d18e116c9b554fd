/**
 * Traffic control in the configuration file: refused with every path at load (the schema's rules
 * and those beside it), resolved with its defaults; with `createGateway`'s option, put together at
 * the gateway's load (one place per setting, names unique across every list, `store: "redis"` only
 * with Redis).
 */
import { expect } from 'chai';
import { ConfigError, createGateway, InvalidOptionError, resolveConfig, type GatewayConfig } from '../../src/index.js';

async function issuesOf(document: unknown): Promise<string[]> {
  try {
    await resolveConfig(document);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected a ConfigError');
}

const document = (): GatewayConfig => ({
  apis: [
    {
      provider: 'Ente',
      name: 'PetStore',
      version: 1,
      backend: { url: 'http://127.0.0.1:9001' },
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{id}' },
        { name: 'updatePet', method: 'PUT', path: '/pet' },
      ],
      trafficControl: { policies: [{ name: 'writes', metric: 'requests', limit: 5, windowSeconds: 1, operations: ['updatePet'] }] },
    },
    { provider: 'Ente', name: 'Plain', version: 1, backend: { url: 'http://127.0.0.1:9002' } },
  ],
  trafficControl: {
    maxConcurrentRequests: 200,
    headers: 'ietf',
    policies: [
      { name: 'per-client', metric: 'requests', limit: 100, windowSeconds: 60, groupBy: ['clientId'] },
      { name: 'in-flight', metric: 'concurrentRequests', limit: 10, mode: 'warningOnly' },
    ],
  },
});

/** A gateway's first load, refused: the issues of its ConfigError. */
async function loadIssues(options: Parameters<typeof createGateway>[0]): Promise<string[]> {
  const gateway = createGateway(options);
  try {
    const error = await gateway.ready().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(ConfigError);
    return (error as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  } finally {
    await gateway.close();
  }
}

describe('configuration: trafficControl', () => {
  it('resolves the sections with their defaults; settings not written stay undefined', async () => {
    const config = await resolveConfig(document());
    expect(config.trafficControl).to.deep.equal({
      maxConcurrentRequests: 200,
      store: undefined,
      onStoreUnavailable: undefined,
      headers: 'ietf',
      groups: undefined,
      policies: [
        {
          name: 'per-client',
          metric: 'requests',
          limit: 100,
          windowSeconds: 60,
          window: 'sliding',
          groupBy: ['clientId'],
          mode: 'enforce',
        },
        { name: 'in-flight', metric: 'concurrentRequests', limit: 10, groupBy: [], mode: 'warningOnly' },
      ],
    });
    expect(config.apis[0]!.trafficControl.policies).to.deep.equal([
      {
        name: 'writes',
        metric: 'requests',
        limit: 5,
        windowSeconds: 1,
        window: 'sliding',
        groupBy: [],
        operations: ['updatePet'],
        mode: 'enforce',
      },
    ]);
    expect(config.apis[1]!.trafficControl.policies).to.deep.equal([]);
    const none = await resolveConfig({ apis: [] });
    expect(none.trafficControl.policies).to.deep.equal([]);
    const bounded = await resolveConfig({ apis: [], trafficControl: { groups: { max: 5000, perClient: 50 } } });
    expect(bounded.trafficControl.groups).to.deep.equal({ max: 5000, perClient: 50 });
  });

  it('refuses groups bounds that are not whole numbers above 0, or unknown, each with its path', async () => {
    const error = await resolveConfig({ apis: [], trafficControl: { groups: { max: 0, perClient: 2.5, maxBytes: 10 } } } as never).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).to.include('trafficControl.groups.max').and.include('trafficControl.groups.perClient');
    expect(error?.message).to.match(/trafficControl\.groups[.:\s].*maxBytes|maxBytes.*(unknown|not allowed|maxMegabytes)/s);
  });

  it('refuses a zero, negative or fractional limit, an unknown groupBy and a misspelt key, each with its path', async () => {
    const bad = document();
    const top = bad.trafficControl!.policies!;
    top[0]!.limit = 0;
    top[1]!.limit = 2.5;
    bad.apis[0]!.trafficControl!.policies[0]!.limit = -1;
    top.push({ name: 'by-what', metric: 'requests', limit: 1, windowSeconds: 1, groupBy: ['tenant'] });
    (bad.trafficControl as Record<string, unknown>).maxConcurrentRequest = 5;
    // In document order: apis come first in this one.
    expect(await issuesOf(bad)).to.deep.equal([
      'apis[0].trafficControl.policies[0].limit: must be a positive integer',
      'trafficControl.policies[0].limit: must be a positive integer',
      'trafficControl.policies[1].limit: must be a positive integer',
      'trafficControl.policies[2].groupBy[0]: must be clientId, subject, issuer, clientAddress, api, operation, claim:<name> or header:<name> (a header field name)',
      'trafficControl.maxConcurrentRequest: unknown field (did you mean "maxConcurrentRequests"?)',
    ]);
  });

  it('refuses a name used twice in a list or in both lists, windowSeconds missing, a credential header, operations of no API', async () => {
    const bad = document();
    const top = bad.trafficControl!.policies!;
    top.push({ name: 'per-client', metric: 'requests', limit: 1, windowSeconds: 1, groupBy: ['header:Authorization'] });
    top.push({ name: 'no-window', metric: 'requests', limit: 1, operations: ['getPet', 'deletePet'] });
    const own = bad.apis[0]!.trafficControl!.policies;
    own.push({ name: 'in-flight', metric: 'concurrentRequests', limit: 1, operations: ['getpet'] });
    bad.apis[1]!.trafficControl = { policies: [{ name: 'ops', metric: 'concurrentRequests', limit: 1, operations: ['getPet'] }] };
    expect(await issuesOf(bad)).to.deep.equal([
      'apis[0].trafficControl.policies[1].name: "in-flight" is already the name of another policy',
      'apis[0].trafficControl.policies[1].operations[0]: names no operation of this API (getPet, updatePet)',
      'apis[1].trafficControl.policies[0].operations: this API lists no operations: the policy would cover nothing',
      'trafficControl.policies[2].name: "per-client" is already the name of another policy',
      'trafficControl.policies[2].groupBy[0]: may not name authorization: its values are credentials',
      'trafficControl.policies[3].operations[1]: names no operation of any API (getPet, updatePet)',
      // A missing member comes after those given.
      'trafficControl.policies[3].windowSeconds: is required for a requests policy',
    ]);
  });

  it('createGateway: store "redis" without Redis is refused at load, naming the field', async () => {
    const redis = document();
    redis.trafficControl!.store = 'redis';
    expect(await loadIssues({ config: redis })).to.deep.equal([
      'trafficControl.store: is redis, and the gateway has no Redis (give serve REDIS_URL, or createGateway its redis option)',
    ]);
  });

  it('createGateway: the option is checked at creation, naming the field', () => {
    const create = (trafficControl: unknown) => () =>
      createGateway({ config: document(), trafficControl: trafficControl as Parameters<typeof createGateway>[0]['trafficControl'] });
    expect(create({ policies: [{ name: 'x', metric: 'requests', limit: 0, windowSeconds: 1 }] }))
      .to.throw(InvalidOptionError)
      .with.property('message')
      .that.includes('trafficControl.policies[0].limit must be a positive integer');
    expect(create({ store: 'redis' }))
      .to.throw(InvalidOptionError)
      .with.property('message')
      .that.includes('trafficControl.store is redis, and the gateway has no redis option');
    expect(
      create({
        policies: [
          { name: 'x', metric: 'concurrentRequests', limit: 1 },
          { name: 'x', metric: 'concurrentRequests', limit: 1 },
        ],
      }),
    )
      .to.throw(InvalidOptionError)
      .with.property('message')
      .that.includes('trafficControl.policies[1].name "x" is already the name of another policy');
    expect(create({ maxConcurrentRequest: 1 })).to.throw(InvalidOptionError, /did you mean "maxConcurrentRequests"/);
  });

  it('createGateway: the option and the file give a setting or a name once, and the option filters on operations of some API', async () => {
    expect(
      await loadIssues({
        config: document(),
        trafficControl: {
          maxConcurrentRequests: 5,
          policies: [
            { name: 'writes', metric: 'concurrentRequests', limit: 1 },
            { name: 'other', metric: 'concurrentRequests', limit: 1, operations: ['nothing'] },
          ],
        },
      }),
    ).to.deep.equal([
      "trafficControl.maxConcurrentRequests: is also given in createGateway's trafficControl option: give it in one place",
      `apis[0].trafficControl.policies[0].name: "writes" is already the name of a policy of createGateway's trafficControl option`,
      "createGateway's trafficControl.policies[1].operations[0]: names no operation of any API",
    ]);
    const gateway = createGateway({
      config: document(),
      trafficControl: { onStoreUnavailable: 'deny', policies: [{ name: 'host', metric: 'concurrentRequests', limit: 1 }] },
    });
    try {
      await gateway.ready();
    } finally {
      await gateway.close();
    }
  });
});
