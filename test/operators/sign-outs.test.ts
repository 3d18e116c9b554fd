/**
 * The sign-outs an instance remembers: never one dropped, at most `perUser + 1` per user however
 * many sign-outs come, and the messages that carry them between instances.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { parseSignOut, signOutMessage, SignOutMemory } from '../../src/operators/sign-outs.js';

const HOUR = 3_600_000;
const nonce = (): string => randomBytes(16).toString('base64url');

describe('operators: sign-outs remembered', () => {
  it('keeps every sign-out of 10,050 in at most perUser + 1 entries for that user, and forgets none of another user', () => {
    const memory = new SignOutMemory(10, 12 * HOUR);
    const start = Date.now() - 60_000;
    const ada = { username: 'ada', nonce: nonce(), createdAt: start };
    memory.remember(ada);
    const vera: Array<{ username: string; nonce: string; createdAt: number }> = [];
    for (let i = 0; i < 10_050; i++) {
      const signOut = { username: 'vera', nonce: nonce(), createdAt: start + i };
      vera.push(signOut);
      memory.remember(signOut);
    }
    const admin = { username: 'Ada', nonce: nonce(), createdAt: Date.now() };
    memory.remember(admin);
    expect(memory.size).to.be.at.most(2 * 11);
    for (const signOut of [ada, admin, ...vera])
      expect(memory.ended(signOut.username, signOut.nonce, signOut.createdAt), signOut.nonce).to.equal(true);
    // A session of vera opened after her last sign-out, and ada's other sessions, go on.
    expect(memory.ended('vera', nonce(), start + 10_050)).to.equal(false);
    expect(memory.ended('ada', nonce(), start + 5)).to.equal(false);
  });

  it('past perUser, answers a cutoff at the oldest sign-out, with what it supersedes; a session opened after it goes on', () => {
    const memory = new SignOutMemory(2, HOUR);
    const now = Date.now();
    const message = (letter: string, at: number) => `${letter.repeat(22)}:${at}:otto`;
    const first = memory.remember({ username: 'otto', nonce: 'A'.repeat(22), createdAt: now - 30 })!;
    memory.remember({ username: 'otto', nonce: 'B'.repeat(22), createdAt: now - 10 });
    const third = memory.remember({ username: 'otto', nonce: 'C'.repeat(22), createdAt: now - 20 })!;
    expect(first).to.deep.equal({ publish: [{ message: message('A', now - 30), until: now - 30 + HOUR }], superseded: [] });
    expect(third).to.deep.equal({
      publish: [
        { message: message('C', now - 20), until: now - 20 + HOUR },
        { message: `*:${now - 30}:otto`, until: now - 30 + HOUR },
      ],
      superseded: [{ message: message('A', now - 30), until: now - 30 + HOUR }],
    });
    expect(memory.size).to.equal(3);
    expect(memory.ended('otto', 'S'.repeat(22), now - 25), 'opened between the sign-outs, still open').to.equal(false);
    expect(memory.ended('otto', 'T'.repeat(22), now - 31), 'opened before the oldest sign-out').to.equal(true);
    const fourth = memory.remember({ username: 'otto', nonce: 'D'.repeat(22), createdAt: now - 5 })!;
    expect(fourth).to.deep.equal({
      publish: [
        { message: message('D', now - 5), until: now - 5 + HOUR },
        { message: `*:${now - 20}:otto`, until: now - 20 + HOUR },
      ],
      superseded: [
        { message: `*:${now - 30}:otto`, until: now - 30 + HOUR },
        { message: message('C', now - 20), until: now - 20 + HOUR },
      ],
    });
    expect(memory.size).to.equal(3);
    // Older than every sign-out remembered: the cutoff moves to it, and only the cutoff is told.
    const older = memory.remember({ username: 'otto', nonce: 'F'.repeat(22), createdAt: now - 15 })!;
    expect(older.publish).to.deep.equal([{ message: `*:${now - 15}:otto`, until: now - 15 + HOUR }]);
    expect(memory.ended('otto', 'F'.repeat(22), now - 15)).to.equal(true);
    // Already covered: nothing new to tell.
    expect(memory.remember({ username: 'otto', nonce: 'E'.repeat(22), createdAt: now - 25 })).to.equal(undefined);
    expect(memory.remember({ username: 'otto', before: now - 40 })).to.equal(undefined);
    // Expired: nothing to remember.
    expect(memory.remember({ username: 'otto', nonce: 'E'.repeat(22), createdAt: now - 2 * HOUR })).to.equal(undefined);
  });

  it('reads back only the messages it writes', () => {
    const one = { username: 'a.b@c-d_e', nonce: nonce(), createdAt: 1_700_000_000_000 };
    expect(parseSignOut(signOutMessage(one))).to.deep.equal(one);
    expect(parseSignOut(signOutMessage({ username: 'vera', before: 5 }))).to.deep.equal({ username: 'vera', before: 5 });
    for (const bad of [
      undefined,
      7,
      '',
      one.nonce,
      `${one.nonce}:1:`,
      `${one.nonce}:1:a:b`,
      `*:x:vera`,
      `*:1:${'v'.repeat(65)}`,
      `${one.nonce}:1234567890123456:vera`,
    ]) {
      expect(parseSignOut(bad), String(bad)).to.equal(undefined);
    }
  });
});
