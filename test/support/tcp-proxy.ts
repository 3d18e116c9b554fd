/**
 * A TCP proxy the test controls, put between the gateway and a real server (PostgreSQL, Redis)
 * to cut the server off without stopping the machine's own: `cut()` closes every connection and
 * refuses new ones (the server is unreachable), `restore()` lets connections through again.
 * `stall()` keeps accepting but forwards nothing (a server that hangs).
 */
import net from 'node:net';

export interface TcpProxy {
  /** Loopback port to connect to instead of the server's. */
  readonly port: number;
  /** Closes every open connection and refuses new ones. */
  cut(): void;
  /** Accepts connections but forwards nothing until restored: a server that hangs. */
  stall(): void;
  /** Forwards again. */
  restore(): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const host = target.host ?? '127.0.0.1';
  let state: 'open' | 'cut' | 'stalled' = 'open';
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    accepted++;
    track(client);
    if (state === 'cut') {
      client.destroy();
      return;
    }
    if (state === 'stalled') {
      client.pause();
      return;
    }
    const upstream = net.connect({ host, port: target.port });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    get accepted() {
      return accepted;
    },
    cut() {
      state = 'cut';
      for (const socket of sockets) socket.destroy();
    },
    stall() {
      state = 'stalled';
      for (const socket of sockets) socket.pause();
    },
    restore() {
      state = 'open';
      // Stalled connections stay dead: clients reconnect, as after a real outage.
      for (const socket of sockets) if (socket.isPaused()) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
