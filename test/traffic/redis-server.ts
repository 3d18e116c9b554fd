/**
 * A throwaway Redis of a test's own (`redis-server` on a free port, no persistence), that the test
 * may stop, freeze and start again: what "Redis down" means for the tests of the Redis store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether a Redis answers PONG on `port` (a raw connection: no client's reconnection to wait for). */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(500);
    let reply = '';
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A `redis-server` child process. */
export class ThrowawayRedis {
  readonly port: number;
  #child: ChildProcess | undefined;

  private constructor(port: number) {
    this.port = port;
  }

  /** Starts one on a free port and waits until it answers. */
  static async start(): Promise<ThrowawayRedis> {
    const redis = new ThrowawayRedis(await freePort());
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it again (on the same port) after {@link ThrowawayRedis.kill}; waits until it answers. */
  /** Whether it answers now. */
  answers(): Promise<boolean> {
    return ping(this.port);
  }

  async restart(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      {
        stdio: 'ignore',
      },
    );
    this.#child = child;
    for (let i = 0; i < 100; i++) {
      if (await ping(this.port)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`redis-server did not start on port ${this.port}`);
  }

  /** Kills it at once (SIGKILL): connections drop, nothing answers. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.#child = undefined;
  }

  /** Freezes it (SIGSTOP): connections stay open and nothing answers, until {@link ThrowawayRedis.thaw}. */
  freeze(): void {
    this.#child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.#child?.kill('SIGCONT');
  }
}
