/**
 * Issue 25, finding 4: the login throttle (5 failures a minute per address) was checked before
 * the password's scrypt and counted after it, so a burst of concurrent guesses all passed the
 * check; and it counted per address only, so guesses spread over addresses never met it. Played
 * against a real `serve` with a users file: concurrent guesses from one address, then guesses of
 * one account from several loopback addresses (127.0.0.x).
 */
import { writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import { hashPassword } from '../../src/operators/passwords.js';
import { echoBackend, exampleCopy, openConfig } from '../gateway/helpers.js';
import { stop, type Served } from '../server/support.js';
import { serveOnFreePorts } from './support/serve-ports.js';

interface Answer {
  status: number;
  cookie: string | undefined;
}

/** `POST /gateway/operators/session` from `localAddress`, on a connection of its own. */
function signIn(admin: string, username: string, password: string, localAddress: string): Promise<Answer> {
  const body = JSON.stringify({ username, password });
  return new Promise((resolve, reject) => {
    const req = request(
      `${admin}/gateway/operators/session`,
      {
        method: 'POST',
        agent: false,
        localAddress,
        headers: { 'content-type': 'application/json', 'x-gateway-console': '1', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, cookie: res.headers['set-cookie']?.[0] }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `GET /gateway/admin/status` with Basic credentials from `localAddress`. */
function basicStatus(admin: string, username: string, password: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    const req = request(
      `${admin}/gateway/admin/status`,
      { agent: false, localAddress, headers: { authorization, 'x-gateway-console': '1' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const tally = (answers: Answer[]): Record<number, number> =>
  answers.reduce<Record<number, number>>((t, a) => ({ ...t, [a.status]: (t[a.status] ?? 0) + 1 }), {});

describe('security: concurrent or spread password guesses meet the login throttle (issue 25, finding 4)', function () {
  this.timeout(60_000);
  let echo: Awaited<ReturnType<typeof echoBackend>>;
  let copy: Awaited<ReturnType<typeof exampleCopy>>;
  let served: Served | undefined;
  let admin: string;

  before(async () => {
    [echo, copy] = await Promise.all([echoBackend(), exampleCopy()]);
    const users = path.join(copy.dir, 'users.json');
    await writeFile(
      users,
      JSON.stringify({
        users: [
          { username: 'otto', role: 'operator', passwordHash: await hashPassword('otto-right-password') },
          { username: 'vera', role: 'viewer', passwordHash: await hashPassword('vera-right-password') },
          { username: 'ada', role: 'admin', passwordHash: await hashPassword('ada-right-password') },
        ],
      }),
    );
    const config = path.join(copy.dir, 'open.json');
    await writeFile(config, JSON.stringify(openConfig(echo.url)));
    ({ served, admin } = await serveOnFreePorts(['serve', '--config', config, '--users', users], {
      ADMIN_PASSWORD: 'race-admin-password',
    }));
  });
  after(async () => {
    await stop(served);
    await Promise.all([echo.stop(), copy.remove()]);
  });

  it('41 concurrent guesses from one address: 5 are verified, the others refused unverified, the right password among them too', async () => {
    const wrong = Array.from({ length: 40 }, (_, i) => signIn(admin, 'otto', `guess-${i}`, '127.0.0.1'));
    // The right one goes while the wrong ones are still being hashed.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const right = await signIn(admin, 'otto', 'otto-right-password', '127.0.0.1');
    const answers = await Promise.all(wrong);
    expect(tally([...answers, right]), 'answers: 401 verified and wrong, 429 refused unverified').to.deep.equal({ 401: 5, 429: 36 });
    expect(right.status, 'the right password, past the allowance').to.equal(429);
    expect(right.cookie).to.equal(undefined);
    // The same throttle guards Basic logins: the address is refused there too, unverified.
    expect(await basicStatus(admin, 'otto', 'otto-right-password', '127.0.0.1')).to.equal(429);
  });

  it('concurrent Basic guesses on the admin routes: 5 verified, the others refused unverified', async () => {
    const answers = await Promise.all(
      Array.from({ length: 41 }, (_, i) => basicStatus(admin, 'ada', i === 40 ? 'ada-right-password' : `guess-${i}`, '127.0.0.10')),
    );
    const verified = answers.filter((s) => s === 401 || s === 200).length;
    expect(verified, `statuses ${answers.join(',')}`).to.be.at.most(5);
    expect(answers.filter((s) => s === 429)).to.have.length(41 - verified);
  });

  it('guesses of one account spread over addresses lock that account (20 a minute), not its owner at an address it signed in from, nor other accounts', async () => {
    // Vera signed in from her workstation before the attack.
    expect((await signIn(admin, 'vera', 'vera-right-password', '127.0.0.20')).status).to.equal(200);
    // 4 guesses from each of 5 addresses: under every address's allowance of 5.
    const guesses: number[] = [];
    for (let a = 21; a <= 25; a++)
      for (let i = 0; i < 4; i++) guesses.push((await signIn(admin, 'vera', `guess-${a}-${i}`, `127.0.0.${a}`)).status);
    expect(guesses, 'each guess verified and refused').to.deep.equal(Array(20).fill(401));
    // The account is locked: the right password from a new address is refused unchecked, as sign-in and as Basic.
    expect((await signIn(admin, 'vera', 'vera-right-password', '127.0.0.26')).status).to.equal(429);
    expect(await basicStatus(admin, 'vera', 'vera-right-password', '127.0.0.27')).to.equal(429);
    // Vera, from the address she signed in from, still gets in; another account from the guessing addresses too.
    const owner = await signIn(admin, 'vera', 'vera-right-password', '127.0.0.20');
    expect(owner.status).to.equal(200);
    expect(owner.cookie).to.match(/^eag_session=/);
    expect((await signIn(admin, 'ada', 'ada-right-password', '127.0.0.21')).status).to.equal(200);
  });
});
