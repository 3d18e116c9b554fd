/**
 * The token caches of a policy, directly: `forget` (one caller's results, valid and refused), the
 * refusal cache's bounds, the size estimate; and the per-token memo and token facts helpers.
 */
import { expect } from 'chai';
import { createTokenContext, type TokenContext } from '../../src/context.js';
import { TokenCache, estimateSize } from '../../src/token/cache.js';
import { tokenFacts } from '../../src/token/facts.js';
import { createTokenPolicy, type TokenPolicy } from '../../src/token/policy.js';
import { memoPerToken, shareTokenData, type SharedTokenData } from '../../src/token/validated-data.js';
import { toTokenInfo } from '../../src/token/normalize.js';
import { InvalidOptionError } from '../../src/options.js';
import { json, nowSeconds, startPeer, tokenOf, type Peer } from './peer.js';

function shared(claims: Record<string, unknown>): SharedTokenData & { exp: number | undefined } {
  const info = toTokenInfo({ introspection: claims });
  return shareTokenData({ exp: info.expiresAt, info, introspection: claims });
}

describe('token policy caches', function () {
  this.timeout(30_000);

  describe('TokenPolicy.forget', () => {
    let peer: Peer;
    let policy: TokenPolicy;

    beforeEach(async () => {
      peer = await startPeer();
      // tokens "<sub>:<client>[:bad]": active; ":bad" ones for another audience (a refusal that names them).
      peer.introspection = (_req, res, body) => {
        const [sub, client, bad] = tokenOf(body).split(':');
        json(res, { active: true, sub, client_id: client, aud: bad === 'bad' ? 'another-api' : 'petstore-api', exp: nowSeconds() + 3600 });
      };
      policy = createTokenPolicy({
        name: 'idp',
        issuer: peer.issuer,
        clientId: 'gateway',
        clientSecret: 'gateway-secret',
        audience: 'petstore-api',
      });
    });
    afterEach(async () => {
      policy.close();
      await peer.stop();
    });

    const calls = () => peer.calls['/introspect'] ?? 0;

    it('drops the valid and refused results of one subject, and only those, and says how many', async () => {
      await policy.validate('alice:app1');
      await policy.validate('alice:app2');
      await policy.validate('bob:app1');
      await policy.validate('alice:app1:bad').catch(() => undefined);
      expect(calls()).to.equal(4);
      expect(policy.forget({ subject: 'alice' })).to.equal(3);
      expect(policy.cacheSize).to.equal(1);
      // bob is still cached; alice's tokens are validated again.
      await policy.validate('bob:app1');
      expect(calls()).to.equal(4);
      await policy.validate('alice:app1');
      await policy.validate('alice:app1:bad').catch(() => undefined);
      expect(calls()).to.equal(6);
    });

    it('drops by client id, or by both (both must match)', async () => {
      await policy.validate('alice:app1');
      await policy.validate('bob:app1');
      await policy.validate('bob:app2');
      expect(policy.forget({ subject: 'bob', clientId: 'app1' })).to.equal(1);
      expect(policy.forget({ clientId: 'app1' })).to.equal(1);
      expect(policy.forget({ clientId: 'app1' })).to.equal(0);
      expect(policy.cacheSize).to.equal(1);
    });

    it('refuses an empty selector instead of forgetting everyone', () => {
      expect(() => policy.forget({})).to.throw(InvalidOptionError, /TokenPolicy\.forget: options must name a subject or a clientId/);
      expect(() => policy.forget({ subject: '' })).to.throw(TypeError, /options\.subject must be a non-empty string/);
    });

    it('a validation running while forget() is called does not cache its result', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      peer.introspection = async (_req, res) => {
        await held;
        json(res, { active: true, sub: 'carol', aud: 'petstore-api', exp: nowSeconds() + 3600 });
      };
      const running = policy.validate('carol:app');
      await new Promise((resolve) => setTimeout(resolve, 50));
      policy.forget({ subject: 'carol' });
      release();
      await running;
      expect(policy.cacheSize).to.equal(0);
    });
  });

  describe('TokenCache', () => {
    it('estimates an entry from the heap of its data, and refuses an entry larger than the byte bound', () => {
      const small = shared({ sub: 'a', exp: nowSeconds() + 60 });
      const big = shared({ sub: 'b', exp: nowSeconds() + 60, padding: 'x'.repeat(10_000) });
      // A one-byte string of 10,000 characters: 10,000 bytes and its header.
      expect(estimateSize(big) - estimateSize(small)).to.be.within(10_000, 10_100);
      const cache = new TokenCache({ ttl: 60, maxEntries: 10, maxBytes: 5_000, staleIfError: 0 }, undefined);
      cache.set('small', small, cache.generation, Date.now());
      cache.set('big', big, cache.generation, Date.now());
      expect(cache.fresh('small', Date.now())).to.equal(small);
      expect(cache.fresh('big', Date.now())).to.equal(undefined);
      expect(cache.bytes).to.equal(estimateSize(small));
    });

    it('bounds the refusals on their own, least recently used forgotten first', () => {
      const cache = new TokenCache(undefined, { ttl: 30, maxEntries: 2 });
      for (const key of ['a', 'b', 'c']) cache.refuse(key, { code: 'ERR_TOKEN_INVALID', diagnostic: key }, cache.generation);
      expect(cache.refusal('a')).to.equal(undefined);
      expect(cache.refusal('c')?.diagnostic).to.equal('c');
    });

    it('keys by a hash of the token, never the token', () => {
      const cache = new TokenCache(undefined, undefined);
      const key = cache.key('secret-token-value');
      expect(key).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(key).to.not.include('secret');
    });
  });

  describe('memoPerToken and tokenFacts', () => {
    function contextOf(data: SharedTokenData): TokenContext {
      const token = createTokenContext('raw-token', 'header', 'idp');
      token.info = data.info;
      if (data.introspection !== undefined) token.introspection = data.introspection as Record<string, unknown>;
      return token;
    }

    it('computes once per shared token result, and every time for a context that holds none', () => {
      let runs = 0;
      const memo = memoPerToken((token) => ({ n: ++runs, subject: token?.info?.subject }));
      const data = shared({ sub: 'alice', exp: nowSeconds() + 60 });
      const first = memo(contextOf(data));
      expect(memo(contextOf(data))).to.equal(first);
      expect(runs).to.equal(1);
      const own = createTokenContext('raw', 'header', 'idp');
      own.info = { ...data.info };
      memo(own);
      memo(own);
      expect(runs).to.equal(3);
      memo(undefined);
      expect(runs).to.equal(4);
    });

    it('recomputes when the memoized value is not reusable for this request', () => {
      const memo = memoPerToken(
        (token) => ({ method: token?.method }),
        (value, token) => value.method === token.method,
      );
      const data = shared({ sub: 'alice' });
      const header = memo(contextOf(data));
      const query = createTokenContext('raw-token', 'query', 'idp');
      query.info = data.info;
      query.introspection = data.introspection as Record<string, unknown>;
      expect(memo(query)).to.not.equal(header);
      expect(memo(query).method).to.equal('query');
    });

    it('tokenFacts: the context info when set, else the claims normalized, else empty facts', () => {
      const data = shared({ sub: 'alice', azp: 'app', aud: 'petstore api', scope: 'read write', iss: 'https://idp' });
      expect(tokenFacts(contextOf(data))).to.equal(data.info);
      const claimsOnly = createTokenContext('raw', 'header', 'idp');
      claimsOnly.introspection = { sub: 'bob', client_id: 'app2', aud: 'x y', scope: 'a b' };
      expect(tokenFacts(claimsOnly)).to.deep.include({ subject: 'bob', clientId: 'app2', audience: ['x y'], scopes: ['a', 'b'] });
      expect(tokenFacts(undefined)).to.deep.include({ audience: [], scopes: [], roles: [] });
      expect(Object.isFrozen(tokenFacts(undefined))).to.equal(true);
    });
  });
});
