/** Password hashes and the users file: scrypt round trip, refusals, every bad field named. */
import { expect } from 'chai';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../src/operators/passwords.js';
import { UserDirectory, usersIssues } from '../../src/operators/users.js';
import { ConfigError } from '../../src/config/errors.js';
import { testUsers } from './helpers.js';

describe('operator passwords', () => {
  it('hashes with scrypt and a random salt, and verifies only the same password', async () => {
    const a = await hashPassword('s3cret pass');
    const b = await hashPassword('s3cret pass');
    expect(a).to.match(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(a).not.to.equal(b);
    expect(a).not.to.include('s3cret');
    expect(await verifyPassword('s3cret pass', a)).to.equal(true);
    expect(await verifyPassword('s3cret pasS', a)).to.equal(false);
    expect(await verifyPassword('', a)).to.equal(false);
    expect(await verifyPassword('s3cret pass', undefined), 'unknown user').to.equal(false);
  });

  it('refuses hashes it did not write, or with a cost out of bounds, and passwords too long', async () => {
    expect(parsePasswordHash('plain-text')).to.equal(undefined);
    expect(parsePasswordHash('scrypt$3$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).to.equal(undefined);
    expect(parsePasswordHash(`scrypt$${2 ** 24}$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`)).to.equal(
      undefined,
    );
    expect(await verifyPassword('x', 'plain-text')).to.equal(false);
    const hash = await hashPassword('p');
    expect(await verifyPassword('p'.repeat(2000), hash)).to.equal(false);
    try {
      await hashPassword('');
      expect.fail('an empty password was hashed');
    } catch (err) {
      expect((err as Error).message).to.match(/non-empty/);
    }
  });

  it('checks a users document, naming each bad field', () => {
    const issues = usersIssues({
      users: [
        { username: 'ok', role: 'viewer', passwordHash: 'nope' },
        { username: 'bad:name', role: 'root', passwordHash: 'nope', password: 'x' },
        { username: 'OK', role: 'admin', passwordHash: 'nope' },
      ],
      extra: 1,
    });
    const paths = issues.map((i) => i.path);
    expect(paths).to.include.members([
      'extra',
      'users[0].passwordHash',
      'users[1].username',
      'users[1].role',
      'users[1].password',
      'users[2].username',
    ]);
    expect(issues.find((i) => i.path === 'users[1].role')!.message).to.equal(
      'this user has the role "root": must be one of viewer, operator, admin',
    );
    expect(usersIssues({ users: [{ username: 'ada', passwordHash: 'nope' }] }).find((i) => i.path === 'users[0].role')!.message).to.equal(
      'user ada has no role: must be one of viewer, operator, admin',
    );
    expect(usersIssues([])).to.deep.equal([{ path: '', message: 'must be an object { "users": [...] }' }]);
  });

  it('verifies users, the fixed admin of ADMIN_PASSWORD as an admin, and nobody else', async () => {
    const directory = new UserDirectory({ users: await testUsers(), fixedAdmin: { username: 'admin', password: 'pw' } });
    expect(await directory.verify('vera', 'viewer-pass-1')).to.deep.equal({ username: 'vera', role: 'viewer' });
    expect(await directory.verify('VERA', 'viewer-pass-1'), 'user names ignore case').to.deep.equal({ username: 'vera', role: 'viewer' });
    expect(await directory.verify('admin', 'pw')).to.deep.equal({ username: 'admin', role: 'admin' });
    expect(await directory.verify('admin', 'PW')).to.equal(undefined);
    expect(await directory.verify('vera', 'wrong')).to.equal(undefined);
    expect(await directory.verify('nobody', 'viewer-pass-1')).to.equal(undefined);
    expect(directory.list().map((u) => `${u.username}:${u.role}`)).to.deep.equal([
      'admin:admin',
      'vera:viewer',
      'otto:operator',
      'ada:admin',
    ]);
  });

  it('refuses a users file that cannot be read or is invalid, naming the file and the field', () => {
    expect(() => new UserDirectory({ file: '/nonexistent/users.json' })).to.throw(
      ConfigError,
      'invalid users file (/nonexistent/users.json): cannot read the file (ENOENT)',
    );
    expect(() => new UserDirectory({ users: [{ username: 'x', role: 'boss', passwordHash: '' }] as never })).to.throw(
      ConfigError,
      'users[0].role: user x has the role "boss": must be one of viewer, operator, admin',
    );
  });
});
