import { expect } from 'chai';
import { InvalidOptionError } from '../../src/options.js';
import { createTokenPolicy } from '../../src/token/policy.js';
import { tokenPolicyOptionIssues, tokenPolicySettings } from '../../src/token/policy-settings.js';
import type { TokenPolicyOptions } from '../../src/token/policy-options.js';

const base: TokenPolicyOptions = { name: 'idp', issuer: 'https://idp.example.org', clientId: 'gateway', clientSecret: 'secret' };

function refusal(options: Readonly<Record<string, unknown>>): string {
  try {
    tokenPolicySettings({ ...base, ...options } as TokenPolicyOptions);
  } catch (error) {
    expect(error).to.be.instanceOf(InvalidOptionError);
    expect((error as InvalidOptionError).code).to.equal('ERR_INVALID_OPTION');
    return (error as Error).message;
  }
  return 'accepted';
}

describe('token policy settings (the rules createTokenPolicy and the configuration file share)', () => {
  it('applies the defaults', () => {
    const settings = tokenPolicySettings(base);
    expect(settings).to.deep.include({
      introspection: true,
      jwtValidation: false,
      userInfo: false,
      authMethod: 'client_secret_basic',
      maxResponseSize: 262_144,
      maxConcurrentCalls: 64,
      timeoutMs: 5000,
      clockSkew: 5,
      staleIfErrorSeconds: 0,
      insecure: false,
    });
    expect(settings.cache).to.deep.equal({ ttlSeconds: 300, maxEntries: 10_000, maxBytes: 32 * 1024 * 1024 });
    expect(settings.negativeCache).to.deep.equal({ ttlSeconds: 30, maxEntries: 10_000 });
    expect(settings.throttle).to.deep.equal({ maxRefusals: 20, windowSeconds: 10, maxAddresses: 10_000 });
  });

  it('takes only http(s) URLs: an issuer without query or fragment, an endpoint without fragment', () => {
    expect(refusal({ issuer: 'ftp://idp.example.org' })).to.equal('createTokenPolicy: options.issuer must be an http(s) URL');
    expect(refusal({ issuer: 'https://idp.example.org/?tenant=1' })).to.equal(
      'createTokenPolicy: options.issuer must be an http(s) URL without query or fragment',
    );
    expect(refusal({ introspectionEndpoint: 'file:///etc/passwd' })).to.equal(
      'createTokenPolicy: options.introspectionEndpoint must be an http(s) URL',
    );
    expect(refusal({ introspectionEndpoint: 'https://idp.example.org/introspect#x' })).to.equal(
      'createTokenPolicy: options.introspectionEndpoint must be an http(s) URL without fragment',
    );
    expect(refusal({ introspectionEndpoint: 'https://idp.example.org/introspect?realm=a' })).to.equal('accepted');
  });

  it('allows http:// only on loopback unless asked', () => {
    expect(refusal({ issuer: 'http://idp.example.org' })).to.match(/options\.issuer uses http:\/\/ on a non-loopback host/);
    expect(refusal({ issuer: 'http://127.0.0.1:9000' })).to.equal('accepted');
    expect(refusal({ issuer: 'http://idp.example.org', allowInsecureRequests: true })).to.equal('accepted');
  });

  it('normalizes the accepted typ values as RFC 7515 compares them', () => {
    const settings = tokenPolicySettings({ ...base, jwtTypes: ['application/AT+JWT', ' jwt '] });
    expect([...settings.jwtTypes!]).to.deep.equal(['at+jwt', 'jwt']);
    expect(refusal({ jwtTypes: ['  '] })).to.match(/options\.jwtTypes must be a non-empty array of JWT typ values/);
  });

  it('refuses, from plain JavaScript, a key it does not know, in a section too, naming the nearest', () => {
    expect(refusal({ clientSecrt: 'secret' })).to.equal(
      'createTokenPolicy: options.clientSecrt is not an option (did you mean "clientSecret"?)',
    );
    expect(refusal({ clientAuthMethod: 'bearer', bearer: { scopes: 'introspection' } })).to.equal(
      'createTokenPolicy: options.bearer.scopes is not an option (did you mean "scope"?)',
    );
    expect(refusal({ invalidTokenThrottle: { window: 5 } })).to.equal(
      'createTokenPolicy: options.invalidTokenThrottle.window is not an option (did you mean "windowSeconds"?)',
    );
    expect(refusal({ cache: 'on' })).to.equal(
      'createTokenPolicy: options.cache must be false or an object { ttlSeconds?, maxEntries?, maxBytes? }',
    );
    expect(refusal({ clientAuthMethod: 'mtls' })).to.equal(
      'createTokenPolicy: options.clientAuthMethod must be one of client_secret_basic, client_secret_post, private_key_jwt, bearer',
    );
  });

  it('lists every problem of the schema and of the rules, paths below options', () => {
    const issues = tokenPolicyOptionIssues({
      name: '',
      issuer: 'https://idp.example.org',
      clientId: 'gateway',
      clientSecret: 'secret',
      jwtValidation: true,
      jwtTypes: ['at+jwt', ''],
      maxConcurrentCalls: 0,
      cache: false,
      staleIfErrorSeconds: 30,
      shared: {},
    });
    expect(issues.map((i) => `${i.path}: ${i.message}`)).to.have.members([
      'name: must be a non-empty string',
      'maxConcurrentCalls: must be a positive integer',
      'jwtValidation: needs options.audience (or options.anyAudience: true to accept a JWT of the issuer meant for any audience)',
      'jwtTypes: must be a non-empty array of JWT typ values, such as ["at+jwt"]',
      'staleIfErrorSeconds: needs the cache (options.cache is false)',
      'shared: must be a SharedTokenResults (see GatewayCluster.tokenResults)',
    ]);
  });

  it('createTokenPolicy reports every bad option at once: one InvalidOptionError, its message listing each with its path', () => {
    let error: unknown;
    try {
      createTokenPolicy({
        ...base,
        issuer: 'ftp://idp.example.org',
        timeoutMs: -1,
        cache: { ttlSeconds: 'soon' },
      } as unknown as TokenPolicyOptions);
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(InvalidOptionError);
    const refused = error as InvalidOptionError;
    expect(refused.code).to.equal('ERR_INVALID_OPTION');
    expect(refused.issues.map((i) => `${i.option} ${i.message}`)).to.have.members([
      'createTokenPolicy: options.issuer must be an http(s) URL',
      'createTokenPolicy: options.timeoutMs must be a positive number',
      'createTokenPolicy: options.cache.ttlSeconds must be a positive number',
    ]);
    expect(refused.option).to.equal(refused.issues[0]!.option);
    const [first, ...others] = refused.issues;
    expect(refused.message).to.equal(
      [`${first!.option} ${first!.message}`, ...others.map((i) => `${i.option.replace('createTokenPolicy: ', '')} ${i.message}`)].join(
        '; ',
      ),
    );
    for (const path of ['options.issuer', 'options.timeoutMs', 'options.cache.ttlSeconds']) expect(refused.message).to.include(path);
    // DPoP's public origin is one of them, not a refusal of its own after the others are fixed.
    expect(refusal({ dpop: 'required', timeoutMs: 0 })).to.equal(
      "createTokenPolicy: options.timeoutMs must be a positive number; options.publicBaseUrl is required with dpop 'required' (the origin clients call, for the proofs' htu)",
    );
  });

  it('takes URL objects where a URL goes, checked as their href', () => {
    const settings = tokenPolicySettings({
      ...base,
      issuer: new URL('https://idp.example.org'),
      jwksUri: new URL('https://idp.example.org/jwks'),
    });
    expect(settings.issuerUrl.href).to.equal('https://idp.example.org/');
    expect(settings.explicit).to.deep.equal({ jwks_uri: 'https://idp.example.org/jwks' });
    expect(refusal({ introspectionEndpoint: new URL('ftp://idp.example.org/introspect') })).to.equal(
      'createTokenPolicy: options.introspectionEndpoint must be an http(s) URL',
    );
  });
});
