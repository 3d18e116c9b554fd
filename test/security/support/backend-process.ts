/**
 * Starts a test backend in a process of its own (backend-process-main.ts), for the tests that
 * bound how long an unrelated API call waits: the latency measured is then the gateway's, not the
 * test runner's.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** A backend running in a child process. */
export interface BackendProcess {
  /** Its base URL, `http://127.0.0.1:<port>`. */
  url: string;
  /** Stops it and waits for its process to exit. */
  stop(): Promise<void>;
}

/** Starts the echo backend or the example's petstore in a child process. */
export async function backendProcess(kind: 'echo' | 'petstore'): Promise<BackendProcess> {
  const main = fileURLToPath(new URL('backend-process-main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main, kind], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  let output = '';
  child.stdout.setEncoding('utf8');
  for await (const chunk of child.stdout) {
    output += chunk as string;
    if (output.includes('\n')) break;
  }
  const url = output.trim();
  if (!url.startsWith('http://')) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`the ${kind} backend did not start: ${output}`);
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      await exited;
    },
  };
}
