import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, createGateway, loadConfig, resolveConfig, type GatewayConfig, type TokenPolicyOptions } from '../../src/index.js';
import { exampleCopy, exampleDir } from '../gateway/helpers.js';

async function issuesOf(document: unknown): Promise<string[]> {
  try {
    await resolveConfig(document, { baseDir: exampleDir });
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected a ConfigError');
}

const valid = (): GatewayConfig => ({
  tokenPolicies: { idp: { issuer: 'http://127.0.0.1:9000', clientId: 'gateway', clientSecret: 'gateway-secret' } },
  apis: [
    {
      provider: 'Ente',
      name: 'PetStore',
      version: 1,
      backend: { url: 'http://127.0.0.1:9001' },
      tokenManagement: { enabled: true, policy: 'idp', tokenForward: true },
      authorization: { mode: 'xacml-Policy', policy: 'policies/petstore.xml' },
    },
  ],
});

describe('gateway configuration', () => {
  it('loads the example file, resolving the policy from the file folder and applying defaults', async () => {
    const config = await loadConfig(path.join(exampleDir, 'gateway.config.json'));
    expect(config.apis).to.have.length(1);
    const api = config.apis[0]!;
    expect([api.provider, api.name, api.version]).to.deep.equal(['Ente', 'PetStore', 1]);
    expect(api.tokenManagement).to.deep.include({
      enabled: true,
      policy: 'DemoIdP',
      introspection: true,
      jwtValidation: false,
      userInfo: false,
    });
    expect(api.authorization.mode).to.equal('xacml-Policy');
    if (api.authorization.mode !== 'xacml-Policy') throw new Error('unreachable');
    expect(api.authorization.policyFile).to.equal(path.join(exampleDir, 'policies', 'petstore.xml'));
    expect(api.authorization.policyXml).to.contain('<Policy');
    expect(api.recording.outgoingHeaders).to.equal(true);
    expect(api.operations?.map((o) => `${o.method} ${o.path} ${o.name}`)).to.include('GET /pet/{petId} getPetById');
    expect(config.tokenPolicies.DemoIdP).to.deep.include({ cacheTtlSeconds: 300, timeoutMs: 5000, clientId: 'gateway' });
  });

  it('reads the client secret from the environment variable clientSecretEnv names, and says which one is missing', async () => {
    const document = valid();
    delete document.tokenPolicies!['idp']!.clientSecret;
    document.tokenPolicies!['idp']!.clientSecretEnv = 'GATEWAY_SECRET_EAG_TEST';
    process.env['GATEWAY_SECRET_EAG_TEST'] = 'secret-from-env';
    try {
      const config = await resolveConfig(document, { baseDir: exampleDir });
      expect(config.tokenPolicies['idp']?.clientSecret).to.equal('secret-from-env');
    } finally {
      delete process.env['GATEWAY_SECRET_EAG_TEST'];
    }
    const unset = await issuesOf(document);
    expect(unset).to.deep.equal(['tokenPolicies.idp.clientSecretEnv: environment variable GATEWAY_SECRET_EAG_TEST is not set']);
    const both = valid();
    both.tokenPolicies!['idp']!.clientSecretEnv = 'GATEWAY_SECRET_EAG_TEST';
    expect(await issuesOf(both)).to.deep.equal(['tokenPolicies.idp.clientSecretEnv: give clientSecret or clientSecretEnv, not both']);
    const neither = valid();
    delete neither.tokenPolicies!['idp']!.clientSecret;
    expect(await issuesOf(neither)).to.deep.equal(['tokenPolicies.idp.clientSecret: is required']);
  });

  it('names the bad field: backend URL', async () => {
    const document = valid();
    document.apis[0]!.backend.url = 'ftp://example.org';
    expect(await issuesOf(document)).to.deep.equal(['apis[0].backend.url: must be an http(s) URL']);
  });

  it('reads the recording switches and the body limit, refusing a bad one', async () => {
    const document = valid();
    const api = document.apis[0]!;
    expect((await resolveConfig(document, { baseDir: exampleDir })).apis[0]!.recording).to.deep.equal({
      incomingHeaders: false,
      outgoingHeaders: false,
      requestBody: false,
      responseBody: false,
      maxBodyBytes: 4096,
      xacmlRequests: 'denied',
    });
    api.recording = { incomingHeaders: true, requestBody: true, maxBodyBytes: 100, xacmlRequests: 'all' };
    expect((await resolveConfig(document, { baseDir: exampleDir })).apis[0]!.recording).to.deep.equal({
      incomingHeaders: true,
      outgoingHeaders: false,
      requestBody: true,
      responseBody: false,
      maxBodyBytes: 100,
      xacmlRequests: 'all',
    });
    api.recording = {
      responseBody: 'yes',
      maxBodyBytes: 2_000_000,
      headers: true,
      xacmlRequests: 'permits',
    } as unknown as typeof api.recording;
    expect(await issuesOf(document)).to.have.members([
      'apis[0].recording.headers: unknown field (did you mean "incomingHeaders"?)',
      'apis[0].recording.xacmlRequests: must be one of denied, all',
      'apis[0].recording.responseBody: must be a boolean',
      'apis[0].recording.maxBodyBytes: must be at most 1048576',
    ]);
    api.recording = { maxBodyBytes: 0 };
    expect(await issuesOf(document)).to.deep.equal(['apis[0].recording.maxBodyBytes: must be a positive integer']);
  });

  it('reports every bad field at once, with its path', async () => {
    const document = valid() as unknown as { apis: Array<Record<string, unknown>>; tokenPolicies: Record<string, Record<string, unknown>> };
    delete document.apis[0]!.version;
    document.apis[0]!.provider = 'has space';
    (document.apis[0]!.tokenManagement as Record<string, unknown>).policy = 'nope';
    document.apis[0]!.timeout = 5;
    document.tokenPolicies.idp!.clientSecret = '';
    expect(await issuesOf(document)).to.have.members([
      'tokenPolicies.idp.clientSecret: must be a non-empty string',
      'apis[0].timeout: unknown field (allowed: provider, name, version, backend, operations, tokenManagement, authorization, recording, trafficControl, protectedResourceMetadata, requiredScopes, scopeAlternatives, requiredClaims, requiredAcrValues, maxAuthenticationAge)',
      'apis[0].provider: must be a non-empty string of letters, digits, ".", "_", "~" or "-"',
      'apis[0].version: is required',
      'apis[0].tokenManagement.policy: names no token policy (defined: idp)',
    ]);
  });

  it('rejects duplicates, reserved providers, bad operations and unknown authorization modes', async () => {
    const document = valid() as unknown as { apis: unknown[] };
    const api = document.apis[0] as Record<string, unknown>;
    document.apis.push({ ...api });
    document.apis.push({ ...api, provider: 'admin', version: 2 });
    document.apis.push({
      ...api,
      version: 3,
      operations: [{ name: 'x', method: 'FETCH', path: 'pet' }],
      authorization: { mode: 'allow-all' },
    });
    expect(await issuesOf(document)).to.have.members([
      'apis[1]: duplicates apis[0] (Ente/PetStore/v1)',
      'apis[2].provider: "admin" is reserved for the gateway\'s own routes',
      'apis[3].operations[0].method: must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
      'apis[3].operations[0].path: must be a path starting with "/" (no query), "{name}" for a segment',
      'apis[3].authorization.mode: must be "none" or "xacml-Policy"',
    ]);
  });

  it("reserves every path of the admin listener as a provider (the operators' session cookie goes there), as written", async () => {
    const document = valid() as unknown as { apis: Array<Record<string, unknown>> };
    const api = document.apis[0]!;
    const reserved = ['admin', 'operators', 'configuration', 'console', 'metrics', 'health'];
    document.apis = [...reserved, 'Operators', 'adminx'].map((provider, i) => ({ ...api, provider, version: i + 1 }));
    expect(await issuesOf(document)).to.deep.equal(
      reserved.map((provider, i) => `apis[${i}].provider: "${provider}" is reserved for the gateway's own routes`),
    );
  });

  it('keeps the token policy keys anyAudience, jwtTypes and maxResponseSize, and refuses bad ones, naming them', async () => {
    const document = valid();
    Object.assign(document.tokenPolicies!.idp!, { anyAudience: true, jwtTypes: ['at+jwt'], maxResponseSize: 65536 });
    const config = await resolveConfig(document, { baseDir: exampleDir });
    expect(config.tokenPolicies['idp']).to.deep.include({ anyAudience: true, jwtTypes: ['at+jwt'], maxResponseSize: 65536 });
    const bad = valid();
    Object.assign(bad.tokenPolicies!.idp!, { audience: 'petstore-api', anyAudience: true, jwtTypes: [], maxResponseSize: 1.5 });
    expect(await issuesOf(bad)).to.have.members([
      'tokenPolicies.idp.anyAudience: true cannot be given with audience',
      'tokenPolicies.idp.jwtTypes: must be a non-empty array of JWT typ values, such as ["at+jwt"]',
      'tokenPolicies.idp.maxResponseSize: must be a positive integer',
    ]);
    const wrongTypes = valid();
    Object.assign(wrongTypes.tokenPolicies!.idp!, { anyAudience: 'yes', jwtTypes: ['at+jwt', 7] });
    expect(await issuesOf(wrongTypes)).to.have.members([
      'tokenPolicies.idp.anyAudience: must be a boolean',
      'tokenPolicies.idp.jwtTypes: must be a non-empty array of JWT typ values, such as ["at+jwt"]',
    ]);
  });

  it('keeps requiredScopes and requiredClaims of an API and its operations (defaults empty), and refuses bad ones, naming them', async () => {
    const plain = await resolveConfig(valid(), { baseDir: exampleDir });
    expect(plain.apis[0]).to.deep.include({ requiredScopes: [], requiredClaims: {} });
    expect(plain.applications).to.deep.equal({});
    const document = valid();
    Object.assign(document.apis[0]!, {
      requiredScopes: ['read'],
      requiredClaims: { tenant: ['acme'], 'realm_access.roles': ['clerk'] },
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{petId}' },
        { name: 'updatePet', method: 'PUT', path: '/pet', requiredScopes: ['write'], requiredClaims: { tier: ['gold'] } },
      ],
    });
    const config = await resolveConfig(document, { baseDir: exampleDir });
    const api = config.apis[0]!;
    expect(api).to.deep.include({ requiredScopes: ['read'], requiredClaims: { tenant: ['acme'], 'realm_access.roles': ['clerk'] } });
    expect(api.operations![0]).not.to.have.property('requiredScopes');
    expect(api.operations![1]).to.deep.include({ requiredScopes: ['write'], requiredClaims: { tier: ['gold'] } });
    const bad = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(bad.apis[0]!, {
      requiredScopes: ['read', 'two words', 3],
      requiredClaims: { tenant: 'acme', 'realm access': [1] },
      operations: [{ name: 'updatePet', method: 'PUT', path: '/pet', requiredScopes: 'write', requiredClaim: {} }],
    });
    expect(await issuesOf(bad)).to.have.members([
      'apis[0].requiredScopes[1]: must be a scope: 1 to 256 printable ASCII characters, no space, " or \\',
      'apis[0].requiredScopes[2]: must be a scope: 1 to 256 printable ASCII characters, no space, " or \\',
      'apis[0].requiredClaims.tenant: must be a non-empty array of allowed values (strings)',
      'apis[0].requiredClaims["realm access"][0]: must be a string',
      'apis[0].operations[0].requiredScopes: must be an array of at most 64 scopes',
      'apis[0].operations[0].requiredClaim: unknown field (did you mean "requiredClaims"?)',
    ]);
    // A rule is checked on every request and named in every challenge: its size is bounded.
    const large = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(large.apis[0]!, { requiredScopes: [...Array.from({ length: 64 }, (_, i) => `s${i}`), 'x'.repeat(257)] });
    expect(await issuesOf(large)).to.have.members([
      'apis[0].requiredScopes: must be an array of at most 64 scopes',
      'apis[0].requiredScopes[64]: must be a scope: 1 to 256 printable ASCII characters, no space, " or \\',
    ]);
    const open = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(open.apis[0]!, {
      tokenManagement: { enabled: false },
      authorization: { mode: 'none' },
      requiredScopes: ['read'],
      operations: [{ name: 'updatePet', method: 'PUT', path: '/pet', requiredClaims: { tier: ['gold'] } }],
    });
    expect(await issuesOf(open)).to.have.members([
      'apis[0].requiredScopes: needs token management enabled (the rules read the validated token)',
      'apis[0].operations[0]: requiredScopes/scopeAlternatives/requiredClaims need token management enabled (the rules read the validated token)',
    ]);
  });

  it('keeps scopeAlternatives of an API and its operations (a copy), and refuses bad ones, naming them', async () => {
    const document = valid() as GatewayConfig;
    Object.assign(document.apis[0]!, {
      scopeAlternatives: [['read'], ['admin', 'audit']],
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{petId}', scopeAlternatives: [['read'], []] },
        { name: 'updatePet', method: 'PUT', path: '/pet' },
      ],
    });
    const config = await resolveConfig(document, { baseDir: exampleDir });
    const api = config.apis[0]!;
    expect(api.scopeAlternatives).to.deep.equal([['read'], ['admin', 'audit']]);
    expect(api.operations![0]!.scopeAlternatives).to.deep.equal([['read'], []]);
    expect(api.operations![1]).not.to.have.property('scopeAlternatives');
    document.apis[0]!.scopeAlternatives![0]!.push('changed');
    expect(api.scopeAlternatives).to.deep.equal([['read'], ['admin', 'audit']]);
    const bad = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(bad.apis[0]!, {
      scopeAlternatives: [],
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{petId}', scopeAlternatives: [['read'], 'write', ['two words']] },
        { name: 'updatePet', method: 'PUT', path: '/pet', scopeAlternatives: Array.from({ length: 17 }, () => ['x']) },
      ],
    });
    expect(await issuesOf(bad)).to.have.members([
      'apis[0].scopeAlternatives: must be an array of 1 to 16 alternatives, each an array of scopes ([] for none)',
      'apis[0].operations[0].scopeAlternatives[1]: must be an array of at most 64 scopes',
      'apis[0].operations[0].scopeAlternatives[2][0]: must be a scope: 1 to 256 printable ASCII characters, no space, " or \\',
      'apis[0].operations[1].scopeAlternatives: must be an array of 1 to 16 alternatives, each an array of scopes ([] for none)',
    ]);
    const open = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(open.apis[0]!, { tokenManagement: { enabled: false }, authorization: { mode: 'none' }, scopeAlternatives: [['read']] });
    expect(await issuesOf(open)).to.have.members([
      'apis[0].scopeAlternatives: needs token management enabled (the rules read the validated token)',
    ]);
  });

  it('keeps the step-up rules of an API and its operations (default none), and refuses bad ones, naming them', async () => {
    const plain = await resolveConfig(valid(), { baseDir: exampleDir });
    expect(plain.apis[0]).to.deep.include({ requiredAcrValues: undefined, maxAuthenticationAge: undefined });
    const document = valid();
    Object.assign(document.apis[0]!, {
      requiredAcrValues: ['urn:mace:incommon:iap:silver', 'urn:mace:incommon:iap:gold'],
      maxAuthenticationAge: 3600,
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{petId}' },
        { name: 'updatePet', method: 'PUT', path: '/pet', requiredAcrValues: ['urn:mace:incommon:iap:gold'], maxAuthenticationAge: 300 },
      ],
    });
    const api = (await resolveConfig(document, { baseDir: exampleDir })).apis[0]!;
    expect(api).to.deep.include({
      requiredAcrValues: ['urn:mace:incommon:iap:silver', 'urn:mace:incommon:iap:gold'],
      maxAuthenticationAge: 3600,
    });
    expect(api.operations![0]).not.to.have.property('requiredAcrValues');
    expect(api.operations![1]).to.deep.include({ requiredAcrValues: ['urn:mace:incommon:iap:gold'], maxAuthenticationAge: 300 });

    const bad = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(bad.apis[0]!, {
      requiredAcrValues: ['silver', '', 'two words', 'silver', 7],
      maxAuthenticationAge: 0,
      operations: [
        { name: 'getPet', method: 'GET', path: '/pet/{petId}', requiredAcrValues: [], maxAuthenticationAge: 31_536_001 },
        { name: 'updatePet', method: 'PUT', path: '/pet', maxAuthenticationAge: 1.5 },
        { name: 'updatePet', method: 'PATCH', path: '/pet', maxAuthenticationAge: 60 },
        { name: 'deletePet', method: 'DELETE', path: '/pet', requiredAcrValues: 'gold' },
      ],
    });
    const acrValue = 'must be an acr value: 1 to 256 printable ASCII characters, no space, " or \\';
    const age = 'must be a whole number of seconds from 1 to 31536000 (one year)';
    expect(await issuesOf(bad)).to.have.members([
      `apis[0].requiredAcrValues[1]: ${acrValue}`,
      `apis[0].requiredAcrValues[2]: ${acrValue}`,
      'apis[0].requiredAcrValues[3]: duplicates requiredAcrValues[0]',
      `apis[0].requiredAcrValues[4]: ${acrValue}`,
      `apis[0].maxAuthenticationAge: ${age}`,
      'apis[0].operations[0].requiredAcrValues: must be a non-empty array of at most 64 acr values',
      `apis[0].operations[0].maxAuthenticationAge: ${age}`,
      `apis[0].operations[1].maxAuthenticationAge: ${age}`,
      'apis[0].operations[2]: operations[1] of the same name already has step-up rules: give them once',
      'apis[0].operations[3].requiredAcrValues: must be a non-empty array of at most 64 acr values',
    ]);

    const open = valid() as unknown as { apis: Array<Record<string, unknown>> };
    Object.assign(open.apis[0]!, {
      tokenManagement: { enabled: false },
      authorization: { mode: 'none' },
      maxAuthenticationAge: 60,
      operations: [{ name: 'updatePet', method: 'PUT', path: '/pet', requiredAcrValues: ['gold'] }],
    });
    expect(await issuesOf(open)).to.have.members([
      'apis[0].maxAuthenticationAge: needs token management enabled (the rules read the validated token)',
      'apis[0].operations[0]: requiredAcrValues/maxAuthenticationAge need token management enabled (the rules read the validated token)',
    ]);
  });

  it('keeps the registry of client applications (a copy), and refuses a bad one, naming the field', async () => {
    const document = valid() as GatewayConfig;
    document.applications = {
      client1: { name: 'PetShopWeb', organization: 'Comune di Pisa', roles: ['buyer'] },
      client2: { name: 'PetShopApp' },
    };
    const config = await resolveConfig(document, { baseDir: exampleDir });
    expect(config.applications).to.deep.equal(document.applications);
    (document.applications['client1']!.roles as string[]).push('admin');
    expect(config.applications['client1']!.roles).to.deep.equal(['buyer']);
    const bad = valid() as unknown as Record<string, unknown>;
    bad.applications = {
      client1: { organization: 'Comune di Pisa', roles: ['buyer', ''] },
      'my client': { name: 'X', group: 'y' },
      client3: 'PetShop',
    };
    expect(await issuesOf(bad)).to.have.members([
      'applications.client1.name: is required',
      'applications.client1.roles[1]: must be a non-empty string',
      'applications["my client"].group: unknown field (allowed: name, organization, roles)',
      'applications.client3: must be an object { name, organization?, roles? }',
    ]);
    const notAnObject = valid() as unknown as Record<string, unknown>;
    notAnObject.applications = ['client1'];
    expect(await issuesOf(notAnObject)).to.deep.equal(['applications: must be an object mapping client ids to applications']);
  });

  it('createGateway refuses at start-up JWT validation without audience or anyAudience, and passes the keys to the token policy', async () => {
    const document = valid();
    document.apis[0]!.tokenManagement = { enabled: true, policy: 'idp', jwtValidation: true, introspection: false };
    // An object configuration resolves files from the working directory: no policy file here.
    document.apis[0]!.authorization = { mode: 'none' };
    const unbounded = createGateway({ config: document });
    try {
      const error = await unbounded.ready().catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).code).to.equal('ERR_CONFIG_INVALID');
      expect((error as ConfigError).issues.map((i) => `${i.path}: ${i.message}`)).to.deep.equal([
        'tokenPolicies.idp: createTokenPolicy: options.jwtValidation needs options.audience (or options.anyAudience: true to accept a JWT of the issuer meant for any audience)',
      ]);
    } finally {
      await unbounded.close();
    }
    Object.assign(document.tokenPolicies!.idp!, { anyAudience: true, jwtTypes: ['at+jwt'], maxResponseSize: 65536 });
    let seen: TokenPolicyOptions | undefined;
    const gateway = createGateway({ config: document, tokenPolicyOptions: (options) => (seen = options) });
    try {
      await gateway.ready();
      expect(seen).to.deep.include({ anyAudience: true, jwtTypes: ['at+jwt'], maxResponseSize: 65536 });
    } finally {
      await gateway.close();
    }
  });

  it('refuses xacml-Policy without token management and an http issuer off loopback', async () => {
    const document = valid();
    document.apis[0]!.tokenManagement = { enabled: false };
    document.tokenPolicies!.idp!.issuer = 'http://idp.example.org';
    expect(await issuesOf(document)).to.have.members([
      'tokenPolicies.idp.issuer: uses http:// on a non-loopback host: use https or set allowInsecureRequests',
      'apis[0].authorization.mode: xacml-Policy needs token management enabled (the policy decides on token data)',
    ]);
  });

  it('names a policy file that cannot be read', async () => {
    const document = valid();
    document.apis[0]!.authorization = { mode: 'xacml-Policy', policy: 'policies/missing.xml' };
    const issues = await issuesOf(document);
    expect(issues).to.have.length(1);
    expect(issues[0]).to.match(/^apis\[0\]\.authorization\.policy: cannot read .*missing\.xml \(ENOENT\)$/);
  });

  it('says which file is not JSON, and the message names the file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gateway-config-'));
    try {
      const file = path.join(dir, 'broken.json');
      await writeFile(file, '{ "apis": [ }');
      const error = await loadConfig(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).message)
        .to.contain(file)
        .and.to.contain('not valid JSON');
      expect((error as ConfigError).source).to.equal(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('takes an object (copied, so later edits wait for a reload) and an async loader', async () => {
    const document = valid();
    const fromObject = await loadConfig(document, { baseDir: exampleDir });
    document.apis[0]!.name = 'Changed';
    expect(fromObject.apis[0]!.name).to.equal('PetStore');
    const copy = await exampleCopy();
    try {
      const fromLoader = await loadConfig(async () => valid(), { baseDir: copy.dir });
      if (fromLoader.apis[0]!.authorization.mode !== 'xacml-Policy') throw new Error('expected xacml');
      expect(fromLoader.apis[0]!.authorization.policyFile).to.equal(copy.policyFile);
      const failing = await loadConfig(() => Promise.reject(new Error('store down'))).catch((e: unknown) => e);
      expect(failing).to.be.instanceOf(ConfigError);
      expect((failing as Error).message).to.contain('the loader failed: store down');
    } finally {
      await copy.remove();
    }
  });
});
