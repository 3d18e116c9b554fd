/**
 * Redaction, unit by unit: what the HTTP tests of the recorder reach only through whole exchanges.
 */
import { expect } from 'chai';
import { DEFAULT_REDACTED_HEADERS, REDACTED, redactHeaders, scrubSecret, stripAccessToken } from '../../src/record/redact.js';

const TOKEN = 'tok_5e4d3c2b1a0918273645';

describe('record redaction', () => {
  describe('stripAccessToken', () => {
    it('removes every access_token parameter and keeps the others as sent', () => {
      expect(stripAccessToken('/pet?x=1&access_token=abc&y=%20b')).to.equal('/pet?x=1&y=%20b');
      expect(stripAccessToken('/pet?access_token=a&access_token=b')).to.equal('/pet');
      expect(stripAccessToken('/pet?access_token=abc')).to.equal('/pet');
    });

    it('recognizes the name percent-encoded, with + for a space, in any case, padded', () => {
      expect(stripAccessToken('/p?access%5Ftoken=abc&k=v')).to.equal('/p?k=v');
      expect(stripAccessToken('/p?ACCESS_TOKEN=abc')).to.equal('/p');
      expect(stripAccessToken('/p?+access_token+=abc')).to.equal('/p');
      expect(stripAccessToken('/p?%E0%A4%A=1&access_token=x')).to.equal('/p?%E0%A4%A=1');
    });

    it('drops the fragment, keeps the other pairs as sent, and leaves a URL without a query alone', () => {
      expect(stripAccessToken('/p?a=1&&access_token=x#frag')).to.equal('/p?a=1&');
      expect(stripAccessToken('/p?access_token[]=x&b=2')).to.equal('/p?b=2');
      expect(stripAccessToken('/pet/1')).to.equal('/pet/1');
      expect(stripAccessToken('/pet?access_token_hint=1')).to.equal('/pet?access_token_hint=1');
    });
  });

  describe('redactHeaders', () => {
    const named = new Set(DEFAULT_REDACTED_HEADERS);

    it('redacts the credential headers by name, case-insensitively, and keeps the rest', () => {
      const out = redactHeaders(
        { Authorization: 'Basic abc', 'X-Api-Key': 'k', 'Gateway-JWT': 'eyJ…', 'Gateway-Token-Subject': 'client1' },
        named,
        undefined,
      );
      expect(out).to.deep.equal({
        Authorization: REDACTED,
        'X-Api-Key': REDACTED,
        'Gateway-JWT': REDACTED,
        'Gateway-Token-Subject': 'client1',
      });
    });

    it('redacts any value that contains the token and drops a name that contains it', () => {
      const out = redactHeaders(
        { 'X-Original-Token': TOKEN, 'X-Note': `was ${TOKEN}!`, [`X-${TOKEN}`]: 'v', 'X-Other': 'plain' },
        named,
        TOKEN,
      );
      expect(out).to.deep.equal({ 'X-Original-Token': REDACTED, 'X-Note': REDACTED, 'X-Other': 'plain' });
    });

    it('returns a copy and treats an empty secret as none', () => {
      const headers = { 'X-A': 'a' };
      const out = redactHeaders(headers, named, '');
      expect(out).to.deep.equal(headers);
      expect(out).not.to.equal(headers);
    });
  });

  describe('scrubSecret', () => {
    it('replaces, in place, every string that contains the secret, at any depth, and removes keys that contain it', () => {
      const value = { a: TOKEN, b: [`x${TOKEN}`, 'ok', { c: TOKEN }], [TOKEN]: 'key', d: 'fine', n: 3 };
      const out = scrubSecret(value, TOKEN);
      expect(out).to.equal(value);
      expect(out).to.deep.equal({ a: REDACTED, b: [REDACTED, 'ok', { c: REDACTED }], d: 'fine', n: 3 });
    });

    it('leaves the skipped objects and values past 32 levels alone, and an empty secret changes nothing', () => {
      const kept = { t: TOKEN };
      expect(scrubSecret({ kept, x: TOKEN }, TOKEN, [kept])).to.deep.equal({ kept: { t: TOKEN }, x: REDACTED });
      expect(scrubSecret({ x: 'abc' }, '')).to.deep.equal({ x: 'abc' });
      let deep: Record<string, unknown> = { leaf: TOKEN };
      for (let i = 0; i < 40; i++) deep = { deep };
      scrubSecret(deep, TOKEN);
      let node: Record<string, unknown> = deep;
      while (node.deep !== undefined) node = node.deep as Record<string, unknown>;
      expect(node.leaf, 'past the depth bound: left for the record builder, which copies within its own bounds').to.equal(TOKEN);
    });
  });
});
