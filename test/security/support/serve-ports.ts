/**
 * `serve` (test/server/support.ts) on ports no other test can take first: the APIs' listener on
 * port 0, its URL read from the log; the admin listener on a port found free (port 0 there means no
 * admin listener), started again on another if a test running beside this one took it meanwhile.
 */
import { freePort, serve, stop, type Served } from '../../server/support.js';

/** A `serve` started by {@link serveOnFreePorts}. */
export interface ServedOnPorts {
  served: Served;
  /** The APIs' listener, `http://127.0.0.1:<port>` (or the `--host` given). */
  api: string;
  /** The admin listener, `http://127.0.0.1:<port>`. */
  admin: string;
  adminPort: number;
}

/** Starts `serve` with `args` (no `--port` nor `--admin-port`) and `env`; waits up to `timeoutMs` for it to serve. */
export async function serveOnFreePorts(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<ServedOnPorts> {
  for (let attempt = 1; ; attempt++) {
    const adminPort = await freePort();
    const served = serve([...args, '--port', '0', '--admin-port', String(adminPort)], env);
    try {
      const [, api] = (await served.waitFor(/serving APIs at (http:\/\/[^\s,;]+)/, timeoutMs)) as unknown as [string, string];
      return { served, api, admin: `http://127.0.0.1:${adminPort}`, adminPort };
    } catch (err) {
      await stop(served);
      if (attempt < 5 && /EADDRINUSE/.test(served.output())) continue;
      throw err;
    }
  }
}
