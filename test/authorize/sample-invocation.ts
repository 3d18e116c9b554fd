/**
 * A sample invocation with every kind of input the request builder handles: query token, headers,
 * URL parameters (one repeated), introspection, JWT and UserInfo claims (objects and arrays of
 * objects among them). Shared by the builder tests.
 */
import { createTokenContext } from '../../src/context.js';
import type { GatewayContext } from '../../src/context.js';
import type { XacmlInvocation } from '../../src/authorize/request-builder.js';

export const SAMPLE_TOKEN = 'tok-SECRET-0123456789abcdef';

export function sampleContext(): Pick<GatewayContext, 'token'> {
  const token = createTokenContext(SAMPLE_TOKEN, 'query', 'demo-idp');
  token.introspection = {
    active: true,
    iss: 'http://127.0.0.1:9000',
    sub: 'client1',
    aud: ['petstore-api', 'other-api'],
    azp: 'client1',
    client_id: 'client1',
    scope: 'read write',
    exp: 1795273445,
    iat: 1795269845,
    'org.example.tenant': 'acme',
    realm_access: { roles: ['pet-reader', 'pet-writer'] },
    addresses: [{ city: 'Roma' }, { city: 'Milano', zip: 20100 }],
    verified: true,
    nickname: null,
  };
  token.jwt = { jti: 'jwt-id-1', sub: 'client1', cnf: { 'x5t#S256': 'abc' } };
  token.userInfo = { sub: 'client1', name: 'Mario Rossi', given_name: 'Mario', family_name: 'Rossi', email: 'mario@example.org' };
  return { token };
}

export function sampleInvocation(): XacmlInvocation {
  return {
    method: 'PUT',
    url: `http://127.0.0.1:8080/gateway/Ente/PetStore/v1/pet?status=available&tag=a&tag=b&access_token=${SAMPLE_TOKEN}`,
    headers: {
      host: '127.0.0.1:8080',
      accept: 'application/json',
      'content-type': 'application/json',
      'x-forwarded-for': ['10.0.0.1', '10.0.0.2'],
      soapaction: '"urn:updatePet"',
      authorization: `Bearer ${SAMPLE_TOKEN}`,
      'x-copied-token': `copy ${SAMPLE_TOKEN}`,
    },
    operation: 'PUT /pet',
    service: { name: 'PetStore', version: 1 },
    provider: { name: 'Ente' },
    subject: { organization: 'Comune' },
    now: new Date('2026-11-21T15:04:05.678Z'),
  };
}
