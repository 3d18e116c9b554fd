/**
 * Recorded transactions in bulk, for the tests of work over many records (the traffic what-if):
 * the PetStore API's, spread over the last minutes, each with a token's claims and the request's
 * headers as a gateway records them.
 */
import { outcomeLabels } from '../../../src/errors.js';
import type { TransactionRecord } from '../../../src/index.js';

/** `count` records of Ente/PetStore/v1 over the `minutes` before `now`, oldest first, of 200 clients in 20 tenants. */
export function trafficRecords(count: number, now: number, minutes = 30): TransactionRecord[] {
  const records: TransactionRecord[] = [];
  const span = minutes * 60_000;
  for (let i = 0; i < count; i++) {
    const startedAt = now - span + Math.floor((i * span) / count);
    const client = `client-${i % 200}`;
    const tenant = `tenant-${i % 20}`;
    records.push({
      id: `bulk-${now}-${i}`,
      messageId: `bulk-msg-${now}-${i}`,
      startedAt,
      endedAt: startedAt + 15,
      durationMs: 15,
      method: i % 3 === 0 ? 'PUT' : 'GET',
      url: `/gateway/Ente/PetStore/v1/pet/${i}`,
      api: { provider: 'Ente', name: 'PetStore', version: 1 },
      operation: i % 3 === 0 ? 'updatePet' : 'getPetById',
      status: 200,
      outcome: { code: 'OK', label: outcomeLabels.OK.it, en: outcomeLabels.OK.en },
      aborted: false,
      clientAddress: `10.0.${i % 250}.${i % 200}`,
      sender: { clientId: client, subject: `user-${i % 1000}`, issuer: 'https://idp.example/realms/demo', username: `user${i % 1000}` },
      tokenInfo: {
        method: 'header',
        policy: 'DemoIdP',
        introspection: {
          active: true,
          client_id: client,
          sub: `user-${i % 1000}`,
          tenant,
          scope: 'openid profile pets:read pets:write',
          iss: 'https://idp.example/realms/demo',
          exp: Math.floor(startedAt / 1000) + 300,
          iat: Math.floor(startedAt / 1000) - 60,
          roles: ['reader', 'writer'],
        },
      },
      incoming: {
        headers: {
          host: 'gateway.example',
          'user-agent': 'pets-client/2.3 (linux)',
          accept: 'application/json',
          'accept-encoding': 'gzip, deflate, br',
          authorization: '[redacted]',
          'x-tenant': tenant,
          'x-request-id': `req-${now}-${i}`,
          'x-forwarded-for': `192.0.2.${i % 250}`,
        },
      },
      diagnostics: [],
    });
  }
  return records;
}
