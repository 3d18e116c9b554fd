/**
 * The admin listener's admission rate, over real HTTP: a burst is admitted at once, the rest at
 * the rate with their connections paused, health checks never wait, and past `maxWaiting` a new
 * request's connection is closed unanswered.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { admitted, adminAdmissionSettings } from '../../src/server/admission.js';
import { optionChecks } from '../../src/options.js';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('server: the admin listener admission rate', () => {
  let server: Server | undefined;
  afterEach(async () => {
    const closing = server;
    server = undefined;
    if (closing === undefined) return;
    closing.closeAllConnections();
    await new Promise((resolve) => closing.close(resolve));
  });

  function serveAdmitted(settings: { ratePerSecond: number; burst: number; maxWaiting: number }): Promise<string> {
    server = createServer(admitted((_req, res) => res.end(String(performance.now())), settings));
    return listen(server);
  }

  it('admits a burst at once and the rest at the rate, in order of arrival', async () => {
    const url = await serveAdmitted({ ratePerSecond: 20, burst: 2, maxWaiting: 100 });
    const started = performance.now();
    const answered = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        fetch(`${url}/gateway/admin/status?${i}`, { headers: { connection: 'close' } }).then(
          async (res) => Number(await res.text()) - started,
        ),
      ),
    );
    const sorted = [...answered].sort((a, b) => a - b);
    // Two at once; four more at one per 50 ms: the last about 200 ms after the first.
    expect(sorted[1]! - sorted[0]!, `answered at ${sorted.map((t) => t.toFixed(0)).join(', ')} ms`).to.be.below(40);
    expect(sorted[5]! - sorted[0]!, `answered at ${sorted.map((t) => t.toFixed(0)).join(', ')} ms`).to.be.at.least(150);
  });

  it('answers health checks at once while others wait', async () => {
    const url = await serveAdmitted({ ratePerSecond: 1, burst: 1, maxWaiting: 100 });
    const first = await fetch(`${url}/gateway/admin/status`);
    expect(first.status).to.equal(200);
    const waiting = fetch(`${url}/gateway/admin/status`, { headers: { connection: 'close' } });
    const started = performance.now();
    const health = await fetch(`${url}/gateway/health/ready`);
    expect(health.status).to.equal(200);
    expect(performance.now() - started).to.be.below(500);
    expect((await waiting).status).to.equal(200);
  });

  it('closes the connection of a request past maxWaiting, unanswered', async () => {
    const url = await serveAdmitted({ ratePerSecond: 1, burst: 1, maxWaiting: 1 });
    await (await fetch(`${url}/a`)).text();
    const second = fetch(`${url}/b`, { headers: { connection: 'close' } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    let refused: unknown;
    try {
      await fetch(`${url}/c`, { headers: { connection: 'close' } });
    } catch (err) {
      refused = err;
    }
    expect(refused, 'the third request').to.be.instanceOf(TypeError);
    expect((await second).status).to.equal(200);
  });

  it('checks its options, naming them', () => {
    const check = optionChecks('serveGateway');
    expect(adminAdmissionSettings(check, undefined)).to.deep.equal({ ratePerSecond: 500, burst: 100, maxWaiting: 4096 });
    expect(() => adminAdmissionSettings(check, { ratePerSecond: 0 })).to.throw(
      TypeError,
      'serveGateway: options.adminAdmission.ratePerSecond must be a positive integer',
    );
    expect(() => adminAdmissionSettings(check, { rate: 5 })).to.throw(TypeError, /options\.adminAdmission\.rate is not an option/);
  });
});
