/** Starts recorded-gateway.ts in a child process, and stops it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { routeLoopDelay, type LoopDelaySource } from './loop-delay.js';

/** A gateway process of recorded-gateway.ts. */
export interface RecordedGateway {
  url: string;
  adminUrl: string;
  /** Its event-loop delay. */
  loopDelay: LoopDelaySource;
  /** The listener that checks policies on the event loop (with `policyCheckOnTheLoop`). */
  workUrl?: string;
  stop(): Promise<void>;
}

/** The options of {@link recordedGateway}: its environment (see recorded-gateway.ts). */
export interface RecordedGatewayOptions {
  configFile: string;
  adminPassword: string;
  usersFile?: string;
  records?: number;
  policyCheckOnTheLoop?: boolean;
}

export async function recordedGateway(options: RecordedGatewayOptions): Promise<RecordedGateway> {
  const main = fileURLToPath(new URL('recorded-gateway.ts', import.meta.url));
  const env: Record<string, string | undefined> = {
    ...process.env,
    DEBUG: '',
    CONFIG: options.configFile,
    ADMIN_PASSWORD: options.adminPassword,
    RECORDS: String(options.records ?? 0),
    USERS: options.usersFile,
    POLICY_CHECK_ON_THE_LOOP: options.policyCheckOnTheLoop === true ? '1' : undefined,
  };
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', main], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const stopChild = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  };
  type Urls = { url: string; adminUrl: string; loopDelayUrl: string; workUrl?: string };
  const { loopDelayUrl, ...urls } = await new Promise<Urls>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('{"url"'));
      if (line !== undefined && out.includes('\n')) resolve(JSON.parse(line) as Urls);
    });
    child.once('exit', (code) => reject(new Error(`the gateway process exited with ${code}`)));
  }).catch(async (err: unknown) => {
    await stopChild();
    throw err;
  });
  return { ...urls, loopDelay: routeLoopDelay(loopDelayUrl), stop: stopChild };
}
