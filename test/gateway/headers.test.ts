/**
 * Header hygiene of the relay, unit by unit (the attacks over HTTP are in
 * test/security/backend-headers.test.ts).
 */
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { requestHeadersForBackend, responseHeadersForClient, writeProxyHeaders } from '../../src/gateway/headers.js';
import { compileTrust } from '../../src/trust-proxy.js';
import { optionChecks } from '../../src/options.js';

function request(headers: IncomingMessage['headers'], remoteAddress = '198.51.100.7'): IncomingMessage {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: remoteAddress });
  return { headers, socket } as unknown as IncomingMessage;
}

describe('backend header hygiene', () => {
  it('drops hop-by-hop headers, Connection-listed names, host, expect, underscore names and proxy headers', () => {
    const out = requestHeadersForBackend(
      {
        host: 'gw',
        connection: 'keep-alive, x-hop',
        'x-hop': '1',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        expect: '100-continue',
        gateway_token_subject: 'admin',
        'x-forwarded-for': '10.0.0.1',
        forwarded: 'for=10.0.0.1',
        'x-kept': 'yes',
      },
      { keepUnderscoreHeaders: false },
    );
    expect(out).to.deep.equal({ 'x-kept': 'yes' });
    expect(requestHeadersForBackend({ x_custom: '1' }, { keepUnderscoreHeaders: true })).to.deep.equal({ x_custom: '1' });
  });

  it("replaces the backend's Server and id headers and drops hop-by-hop ones", () => {
    const out = responseHeadersForClient({
      server: 'b',
      'gateway-transaction-id': 'x',
      'gateway-message-id': 'y',
      connection: 'close, x-b',
      'x-b': '1',
      'content-type': 'text/plain',
    });
    expect(out).to.deep.equal({ 'content-type': 'text/plain' });
  });

  it('writes the proxy headers from the connection, continuing a trusted peer only', () => {
    const check = optionChecks('test');
    const sent = { host: 'gw.example', 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https', forwarded: 'for=203.0.113.9' };
    const untrusted: Record<string, string | string[]> = {};
    writeProxyHeaders(request(sent), untrusted, compileTrust(false, check, 'trustProxy'));
    expect(untrusted).to.deep.equal({
      'x-forwarded-for': '198.51.100.7',
      'x-forwarded-host': 'gw.example',
      'x-forwarded-proto': 'http',
      forwarded: 'for=198.51.100.7;host=gw.example;proto=http',
    });
    const trusted: Record<string, string | string[]> = {};
    writeProxyHeaders(request(sent), trusted, compileTrust('198.51.100.0/24', check, 'trustProxy'));
    expect(trusted).to.deep.include({ 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'x-forwarded-proto': 'https' });
    expect(trusted.forwarded).to.equal('for=203.0.113.9, for=198.51.100.7;host=gw.example;proto=http');
    const ipv6: Record<string, string | string[]> = {};
    writeProxyHeaders(request({ host: 'a b' }, '::1'), ipv6, compileTrust(false, check, 'trustProxy'));
    expect(ipv6.forwarded).to.equal('for="[::1]";host="a b";proto=http');
  });
});
