/**
 * What the record files trust (docs/security.md, "Redis and PostgreSQL"): the journal's directory
 * must be the process's own and writable by nobody else, and the files replayed at start (journal
 * segments and spill files left by processes gone) must be regular files of the process's user
 * that grant nothing to group or others. Anyone who can write to a shared directory (the system's
 * temporary one) could otherwise put forged records into the database, or have the journal
 * append to a file of their choosing through a link.
 *
 * @module
 */
import { lstatSync, mkdirSync, statSync, type Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The process's user id; `undefined` where there is none (Windows: no owner or mode checks). */
const ownUid = (): number | undefined => process.getuid?.();

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, '0');

/** The journal's default directory: one of this user's own in the system's temporary directory. */
export function defaultJournalDirectory(): string {
  return join(tmpdir(), `express-access-gateway-journal-${ownUid() ?? 'user'}`);
}

/** Why the directory `info` describes cannot hold the journal; `undefined` when it can. */
function directoryProblem(info: Stats): string | undefined {
  if (info.isSymbolicLink()) return 'is a symbolic link';
  if (!info.isDirectory()) return 'is not a directory';
  const uid = ownUid();
  if (uid === undefined) return undefined;
  if (info.uid !== uid) return `is owned by uid ${info.uid}, not this process's (uid ${uid})`;
  if ((info.mode & 0o022) !== 0) return `is writable by group or others (mode ${octal(info.mode)})`;
  return undefined;
}

/** What a journal directory's refusal adds: what would do. */
const WANTED = "the journal needs a directory of this process's user, writable by it alone (mode 0700)";

/**
 * The directory of a journal, checked: `given` (created with mode 0700 when missing; a link to a
 * directory is followed, as the operator named it), or the default one (created with mode 0700; a
 * link is refused, as anyone may have made it).
 *
 * @throws Error saying what is wrong with the directory, and what would do.
 */
export function journalDirectory(given: string | undefined): string {
  const dir = given ?? defaultJournalDirectory();
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new Error(`${dir} cannot be created (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
  }
  const problem = journalDirectoryProblem(dir, given !== undefined);
  if (problem !== undefined) throw new Error(`${dir} ${problem}: ${WANTED}`);
  return dir;
}

/**
 * Why `dir` cannot hold a journal (it is missing, not a directory, another user's, or writable by
 * group or others), `undefined` when it can. `followLink`: a link to a directory is followed.
 */
export function journalDirectoryProblem(dir: string, followLink: boolean): string | undefined {
  let info: Stats;
  try {
    info = followLink ? statSync(dir) : lstatSync(dir);
  } catch (error) {
    return `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  return directoryProblem(info);
}

/**
 * Why a file found at start (as `lstat` describes it) must not be replayed: a link or not a regular
 * file, another user's, or granting anything to group or others; `undefined` when it may.
 */
export function fileProblem(info: Stats): string | undefined {
  if (info.isSymbolicLink()) return 'is a symbolic link';
  if (!info.isFile()) return 'is not a regular file';
  const uid = ownUid();
  if (uid === undefined) return undefined;
  if (info.uid !== uid) return `is owned by uid ${info.uid}, not this process's (uid ${uid})`;
  if ((info.mode & 0o077) !== 0) return `grants access to group or others (mode ${octal(info.mode)})`;
  return undefined;
}

/** Files already warned about, so that each is named once per process. */
const warned = new Set<string>();

/** Warns (once per file and process) that the file at `path` is left alone, and why. */
export function warnUntrusted(path: string, problem: string): void {
  if (warned.has(path)) return;
  warned.add(path);
  process.emitWarning(
    `record file ${path} not replayed: it ${problem}; left as it is (the gateway replays only files of its own user, mode 0600)`,
    { code: 'EAG_RECORD_FILE_UNTRUSTED' },
  );
}
