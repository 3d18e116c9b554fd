import { expect } from 'chai';
import { InvalidOptionError } from '../../src/options.js';
import { tokenPolicySettings } from '../../src/token/policy-settings.js';
import type { TokenPolicyOptions } from '../../src/token/policy.js';

const base: TokenPolicyOptions = { name: 'idp', issuer: 'https://idp.example.org', clientId: 'gateway', clientSecret: 'secret' };

function refusal(options: Partial<TokenPolicyOptions> & Record<string, unknown>): string {
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
});
