/**
 * No client is left hanging when a worker of `serve --workers` dies (docs/deployment.md,
 * "`--workers`"): every connection made around the kill is answered or reset, never left open
 * until the client's own timeout. Node's round-robin scheduling hands each connection from the
 * primary to a worker and keeps it open until the worker says it took it: a connection handed to a
 * worker that has just died is never closed. The workers take their connections from the shared
 * socket themselves instead: one that dies takes only what it had accepted with it, and those
 * connections are reset by the system.
 *
 * 20 kills of a worker of real `serve --workers 2` (four instances at once, five kills each) under a
 * load of new connections.
 */
import { request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { echoBackend, openConfig } from '../gateway/helpers.js';
import { serve, stop, type Served } from './support.js';

/** How long a client waits before it calls an exchange left hanging. */
const CLIENT_TIMEOUT_MS = 8_000;
const KILLS = 20;

type Outcome = 'answered' | 'reset' | 'hanging';

describe('serve --workers: a worker killed under load leaves no client hanging', function () {
  this.timeout(300_000);
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let dir: string;
  const running: Served[] = [];

  before(async () => {
    echo = await echoBackend();
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-worker-crash-'));
    await writeFile(path.join(dir, 'open.json'), JSON.stringify(openConfig(echo.url)));
  });
  after(async () => {
    await Promise.all(running.map((one) => stop(one)));
    await echo?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** One request on a connection of its own: answered, reset, or still open after CLIENT_TIMEOUT_MS. */
  function call(port: number): Promise<Outcome> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: Outcome): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        resolve(outcome);
      };
      const req = request(
        { host: '127.0.0.1', port, path: '/gateway/Ente/Echo/v1/ping', agent: false, headers: { connection: 'close' } },
        (res) => {
          res.resume();
          res.on('end', () => settle('answered'));
          res.on('error', () => settle('reset'));
          res.on('aborted', () => settle('reset'));
        },
      );
      req.on('error', () => settle('reset'));
      const timer = setTimeout(() => settle('hanging'), CLIENT_TIMEOUT_MS);
      req.end();
    });
  }

  /**
   * One instance of serve with two workers under load, killed `kills` times, a slot after the
   * other (each kill of a slot that served under 10 s counts toward its start limit of 5, and its
   * restart waits 1, 2, 4 s), each time until the replacement serves.
   */
  async function run(kills: number, outcomes: Outcome[]): Promise<void> {
    const one = serve(['serve', '--config', path.join(dir, 'open.json'), '--port', '0', '--admin-port', '0', '--workers', '2']);
    running.push(one);
    await one.waitFor(/(worker \d+ serving[\s\S]*){2}/);
    const port = Number(/worker \d+ serving APIs at http:\/\/[^:]+:(\d+)/.exec(one.output())![1]);
    let loading = true;
    // Four clients making new connections one after the other, for the whole run.
    const clients = Array.from({ length: 4 }, async () => {
      while (loading) outcomes.push(await call(port));
    });
    try {
      for (let kill = 1; kill <= kills; kill++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        // The worker that has served longest: the slots take turns.
        const serving = [...one.output().matchAll(/worker (\d+) serving/g)].map((m) => Number(m[1]));
        process.kill(serving[serving.length - 2]!, 'SIGKILL');
        await one.waitFor(new RegExp(`(worker \\d+ serving[\\s\\S]*){${2 + kill}}`), 120_000);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      loading = false;
      await Promise.all(clients);
      await stop(one);
    }
  }

  it(`${KILLS} kills of a worker under load: every connection answered or reset`, async () => {
    const outcomes: Outcome[] = [];
    // Four instances of five kills, at the same time: most of a run is the restarts' delays.
    await Promise.all(Array.from({ length: 4 }, () => run(KILLS / 4, outcomes)));
    const count = (outcome: Outcome): number => outcomes.filter((o) => o === outcome).length;
    console.log(
      `      ${KILLS} kills: ${outcomes.length} connections, ${count('answered')} answered, ${count('reset')} reset, ${count('hanging')} left hanging`,
    );
    expect(count('hanging'), 'connections neither answered nor reset').to.equal(0);
    expect(count('answered')).to.be.greaterThan(KILLS * 10);
  });
});
