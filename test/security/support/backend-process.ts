/**
 * Starts a test backend in a process of its own (backend-process-main.ts), for the tests that
 * bound how long an unrelated API call waits: the latency measured is then the gateway's, not the
 * test runner's.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A request as the echo backend received it. */
export interface SeenRequest {
  method: string;
  url: string;
}

/** A backend running in a child process. */
export interface BackendProcess {
  /** Its base URL, `http://127.0.0.1:<port>`. */
  url: string;
  /** The requests the echo backend has received so far, in their order (the petstore's: none). */
  seen(): Promise<SeenRequest[]>;
  /** Stops it and waits for its process to exit. */
  stop(): Promise<void>;
}

/** Starts the echo backend or the example's petstore in a child process. */
export async function backendProcess(kind: 'echo' | 'petstore'): Promise<BackendProcess> {
  const main = fileURLToPath(new URL('backend-process-main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main, kind], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  // Each line the child writes answers, in order, the oldest question waiting for one.
  const waiting: Array<(line: string) => void> = [];
  const gone = (): Error => new Error(`the ${kind} backend process exited`);
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
  const nextLine = (): Promise<string> =>
    new Promise((resolve, reject) => {
      waiting.push(resolve);
      void exited.then(() => reject(gone()));
    });
  const url = await nextLine().catch(() => '');
  if (!url.startsWith('http://')) {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    throw new Error(`the ${kind} backend did not start`);
  }
  return {
    url,
    async seen() {
      const answer = nextLine();
      child.stdin.write('seen\n');
      return JSON.parse(await answer) as SeenRequest[];
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      await exited;
    },
  };
}
