/**
 * `express-access-gateway users ...`: the users file of the admin listener's operators, edited
 * without ever writing a password down (it is read from standard input, without echo on a
 * terminal, and only its scrypt hash is stored).
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseJsonText } from '../config/json-syntax.js';
import { commandLineProblem, nearestKey } from '../options.js';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';
import { isRole, OPERATOR_ROLES } from './roles.js';
import { USERNAME, usersIssues, type UsersDocument } from './users.js';

/** The usage text of `users`. */
export const USERS_USAGE = `Usage: express-access-gateway users <command> [options]

Edits the users file of the operators of the admin listener (serve --users <file>, or
GATEWAY_USERS_FILE). Passwords are read from standard input (without echo on a terminal) and
stored as scrypt hashes only; a password has at least ${MIN_PASSWORD_LENGTH} characters.

Commands:
  add --file <users.json> --username <name> --role <viewer|operator|admin>
                          adds a user, or sets the password and role of an existing one
  remove --file <users.json> --username <name>
                          removes a user
  list --file <users.json>
                          prints the users and their roles
  hash                    prints the hash of the password read from standard input

Roles: viewer (monitoring console), operator (also ResetAllCaches, forget, the audit log),
admin (also the configuration).`;

/** The first line of {@link USERS_USAGE}: what `users` prints when run without arguments. */
const USERS_SHORT_USAGE = `${USERS_USAGE.slice(0, USERS_USAGE.indexOf('\n'))}

express-access-gateway users --help lists the commands and their options.`;

const FLAGS = {
  file: { type: 'string' },
  username: { type: 'string' },
  role: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const COMMANDS = ['add', 'remove', 'list', 'hash'];

class UsageError extends Error {}

async function readPassword(): Promise<string> {
  const input = process.stdin;
  if (input.isTTY) {
    process.stderr.write('Password: ');
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    const password = await new Promise<string>((resolve, reject) => {
      let typed = '';
      const onData = (chunk: string): void => {
        for (const c of chunk) {
          if (c === '\r' || c === '\n') {
            input.off('data', onData);
            resolve(typed);
            return;
          }
          if (c === '\u0003') {
            input.off('data', onData);
            reject(new UsageError('cancelled'));
            return;
          }
          if (c === '\u007f') typed = typed.slice(0, -1);
          else typed += c;
        }
      };
      input.on('data', onData);
    });
    input.setRawMode(false);
    input.pause();
    process.stderr.write('\n');
    return password;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(chunk as Buffer);
  // One line: the trailing line break of `echo` is not part of the password.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** The password read, refused when too short or too long; the message never holds it. */
async function newPassword(): Promise<string> {
  const password = await readPassword();
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH)
    throw new UsageError(
      `the password must be at least ${MIN_PASSWORD_LENGTH} characters, got ${length === 0 ? 'none' : length}: operators sign in with it alone (a few words make one easily)`,
    );
  if (password.length > MAX_PASSWORD_LENGTH) throw new UsageError(`the password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  return password;
}

async function readUsers(file: string): Promise<UsersDocument> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return { users: [] };
    throw err;
  }
  let document: unknown;
  try {
    document = parseJsonText(text);
  } catch (err) {
    throw new UsageError(`${file} is not a valid users file: not valid JSON ${(err as Error).message}`);
  }
  const issues = usersIssues(document);
  if (issues.length > 0)
    throw new UsageError(`${file} is not a valid users file: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  return document as UsersDocument;
}

/** Writes the file whole or not at all (a temporary file renamed over it), readable by its owner only. */
async function writeUsers(file: string, document: UsersDocument): Promise<void> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/** Runs `users <argv>`; resolves with the exit code. */
export async function usersMain(argv: string[], out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(`${USERS_SHORT_USAGE}\n`);
    return 2;
  }
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, allowPositionals: true, options: FLAGS });
    } catch (err) {
      throw new UsageError(commandLineProblem(err, argv, FLAGS));
    }
    const { values, positionals } = parsed;
    if (values.help === true) {
      out(USERS_USAGE);
      return 0;
    }
    const command = positionals[0];
    if (command !== undefined && !COMMANDS.includes(command)) {
      const nearest = nearestKey(command, COMMANDS);
      throw new UsageError(
        `unknown command ${JSON.stringify(command.slice(0, 40))} (${nearest === undefined ? `commands: ${COMMANDS.join(', ')}` : `did you mean ${nearest}?`})`,
      );
    }
    if (positionals.length !== 1) throw new UsageError(`expected one command: ${COMMANDS.join(', ')}`);
    if (command === 'hash') {
      out(await hashPassword(await newPassword()));
      return 0;
    }
    if (values.file === undefined || values.file === '') throw new UsageError('--file <users.json> is required');
    const file = path.resolve(values.file);
    const document = await readUsers(file);
    if (command === 'list') {
      for (const user of document.users) out(`${user.username}\t${user.role}`);
      return 0;
    }
    const username = values.username;
    if (username === undefined || !USERNAME.test(username)) throw new UsageError('--username must be 1 to 64 letters, digits or ._@-');
    const index = document.users.findIndex((u) => u.username.toLowerCase() === username.toLowerCase());
    if (command === 'remove') {
      if (index === -1) throw new UsageError(`no user ${username} in ${file}`);
      document.users.splice(index, 1);
      await writeUsers(file, document);
      out(`removed ${username}`);
      return 0;
    }
    if (!isRole(values.role)) throw new UsageError(`--role must be one of ${OPERATOR_ROLES.join(', ')}`);
    const user = { username, role: values.role, passwordHash: await hashPassword(await newPassword()) };
    if (index === -1) document.users.push(user);
    else document.users[index] = user;
    await writeUsers(file, document);
    out(`${index === -1 ? 'added' : 'updated'} ${username} (${values.role}) in ${file}`);
    return 0;
  } catch (err) {
    process.stderr.write(
      `express-access-gateway users: ${(err as Error).message}${err instanceof UsageError ? '; see express-access-gateway users --help' : ''}\n`,
    );
    return 2;
  }
}
