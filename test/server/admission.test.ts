/**
 * The admin listener's admission rate, over real HTTP: a burst is admitted at once, the rest at
 * the rate with their connections paused, health checks never wait, and past `maxWaiting` a new
 * request's connection is closed unanswered. "At once" is what the server did, not a time a busy
 * machine can stretch: the request handed to the handler in the same call that received it.
 */
import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
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

  /** A request as the admitted handler saw it. */
  interface Handled {
    readonly url: string;
    /** Handed to the handler in the very call that received it: admitted at once. */
    readonly atOnce: boolean;
    /** When, performance.now(). */
    readonly at: number;
  }

  /** The server's record: the requests in the order they arrived, and in the order they were handled. */
  interface Seen {
    readonly arrived: string[];
    readonly handled: Handled[];
  }

  async function serveAdmitted(settings: {
    ratePerSecond: number;
    burst: number;
    maxWaiting: number;
  }): Promise<{ url: string; seen: Seen }> {
    const seen: Seen = { arrived: [], handled: [] };
    let arriving: IncomingMessage | undefined;
    const listener = admitted((req, res) => {
      seen.handled.push({ url: req.url!, atOnce: req === arriving, at: performance.now() });
      res.end();
    }, settings);
    server = createServer((req, res) => {
      seen.arrived.push(req.url!);
      arriving = req;
      try {
        listener(req, res);
      } finally {
        arriving = undefined;
      }
    });
    return { url: await listen(server), seen };
  }

  it('admits a burst at once and the rest at the rate, in order of arrival', async () => {
    // 4 a second: a token every 250 ms once the burst of 2 is spent.
    const { url, seen } = await serveAdmitted({ ratePerSecond: 4, burst: 2, maxWaiting: 100 });
    const statuses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        fetch(`${url}/gateway/admin/status?${i}`, { headers: { connection: 'close' } }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    expect(statuses).to.deep.equal(Array<number>(6).fill(200));
    const shown = seen.handled
      .map((h) => `${h.url} ${h.atOnce ? 'at once' : 'waited'} at ${(h.at - seen.handled[0]!.at).toFixed(0)} ms`)
      .join('; ');
    // The first two as they arrived; the four others waited, and were handled in their order of arrival.
    expect(
      seen.handled.map((h) => h.atOnce),
      shown,
    ).to.deep.equal([true, true, false, false, false, false]);
    expect(
      seen.handled.slice(2).map((h) => h.url),
      shown,
    ).to.deep.equal(seen.arrived.filter((u) => !seen.handled.slice(0, 2).some((h) => h.url === u)));
    // Four tokens at 250 ms each: the last not before about 1 s after the burst (a busy machine
    // only makes it later).
    expect(seen.handled[5]!.at - seen.handled[0]!.at, shown).to.be.at.least(850);
  });

  it('answers health checks at once while others wait', async () => {
    const { url, seen } = await serveAdmitted({ ratePerSecond: 1, burst: 1, maxWaiting: 100 });
    const first = await fetch(`${url}/gateway/admin/status`);
    expect(first.status).to.equal(200);
    await first.arrayBuffer();
    const waiting = fetch(`${url}/gateway/admin/status?waiting`, { headers: { connection: 'close' } });
    // The second request has arrived: it waits for the next token, a second away.
    for (let i = 0; i < 200 && !seen.arrived.includes('/gateway/admin/status?waiting'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(seen.arrived).to.include('/gateway/admin/status?waiting');
    const health = await fetch(`${url}/gateway/health/ready`);
    expect(health.status).to.equal(200);
    // The health check was handled as it arrived, while the other still waited.
    expect(seen.handled.map((h) => [h.url, h.atOnce])).to.deep.equal([
      ['/gateway/admin/status', true],
      ['/gateway/health/ready', true],
    ]);
    expect((await waiting).status).to.equal(200);
    expect(seen.handled.map((h) => [h.url, h.atOnce])[2]).to.deep.equal(['/gateway/admin/status?waiting', false]);
  });

  it('closes the connection of a request past maxWaiting, unanswered', async () => {
    const { url, seen } = await serveAdmitted({ ratePerSecond: 1, burst: 1, maxWaiting: 1 });
    await (await fetch(`${url}/a`)).text();
    const second = fetch(`${url}/b`, { headers: { connection: 'close' } });
    // The second has arrived, and waits.
    for (let i = 0; i < 200 && !seen.arrived.includes('/b'); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(seen.arrived).to.deep.equal(['/a', '/b']);
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
