/**
 * Following a guide as a reader does: its fenced blocks in order (files to write, shell commands to
 * run, answers to expect), and a shell in which `npm` works offline: `npm ci` in the checkout is
 * already done (the tests run in it), `npm pack` hands over the tarball the test packed, and
 * `npm install` installs it and links the other packages from this repository's node_modules
 * (test/package/support/npm-install-offline.ts). Every other command runs as written, in bash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One fenced block of a guide. */
export interface GuideBlock {
  /** The fence's language (`sh`, `ts`, `json`, `http`, `xml`...). */
  lang: string;
  text: string;
  /** The file the guide says to save the block as: the line before the block ends with `name`: */
  file?: string;
  /** The number of the `## <n>. ...` part the block is in (-1 before the first). */
  part: number;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced blocks of a guide, in order. */
export function guideBlocks(markdown: string): GuideBlock[] {
  const lines = markdown.split('\n');
  const blocks: GuideBlock[] = [];
  let part = -1;
  let lastText = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heading = /^## (\d+)\./.exec(line);
    if (heading) part = Number(heading[1]);
    const fence = /^```(\w*)\s*$/.exec(line);
    if (!fence) {
      if (line.trim() !== '') lastText = line;
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const file = /`([\w.-]+\.\w+)`:\s*$/.exec(lastText)?.[1];
    blocks.push({ lang: fence[1]!, text: `${body.join('\n')}\n`, part, line: start + 1, ...(file ? { file } : {}) });
    lastText = '';
  }
  return blocks;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** `npm`, for the guide's commands: offline, with the test's tarball. */
const PRELUDE = `set -euo pipefail
npm() {
  case "\${1:-}" in
    ci) ;;
    pack) cp "$GUIDE_TARBALL" . && basename "$GUIDE_TARBALL" ;;
    install | i) shift; "$GUIDE_NODE" --import "$GUIDE_TSX" "$GUIDE_NPM_INSTALL" "$@" ;;
    *) command npm "$@" ;;
  esac
}
`;

/** The environment of the guide's shell: the test's tarball and the offline installer. */
export function guideShellEnv(tarball: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return {
    ...env,
    DEBUG: '',
    GUIDE_TARBALL: tarball,
    GUIDE_NODE: process.execPath,
    GUIDE_TSX: pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href,
    GUIDE_NPM_INSTALL: path.join(here, '..', '..', 'package', 'support', 'npm-install-offline.ts'),
    ...extra,
  };
}

/** What a command printed, and how it ended. */
export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function spawnShell(script: string, cwd: string, env: Record<string, string>): ChildProcess {
  // detached: its own process group, so that stopping it stops npx and the node it started.
  return spawn('bash', ['-c', PRELUDE + script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs commands to completion; resolves with their output whatever their exit code. */
export function runShell(script: string, cwd: string, env: Record<string, string>, timeoutMs = 45_000): Promise<ShellResult> {
  const child = spawnShell(script, cwd, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`did not finish within ${timeoutMs} ms:\n${script}\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A server a guide's command started. */
export interface RunningServer {
  /** The first group of each `ready` pattern, in order (the URLs the server printed). */
  readonly urls: string[];
  /** Everything it wrote so far. */
  output(): string;
  /** Stops it (its whole process group: SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a long-running command and resolves once its output matched every `ready` pattern. */
export function startServer(
  script: string,
  cwd: string,
  env: Record<string, string>,
  ready: RegExp[],
  timeoutMs = 45_000,
): Promise<RunningServer> {
  const child = spawnShell(script, cwd, env);
  let text = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const signal = (name: NodeJS.Signals): void => {
      try {
        process.kill(-child.pid!, name);
      } catch {
        // the group is gone already
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`no ${ready.join(', ')} within ${timeoutMs} ms from:\n${script}\noutput:\n${text}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('utf8');
      const urls = ready.map((pattern) => pattern.exec(text)?.[1]);
      if (urls.every((u) => u !== undefined)) {
        clearTimeout(timer);
        resolve({ urls: urls as string[], output: () => text, stop });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}) before it was ready:\n${script}\noutput:\n${text}`));
    });
  });
}
