/**
 * Requests with a request target sent byte for byte (`fetch` normalizes dot segments and escapes,
 * which is exactly what an attacker does not do).
 */
import { request, type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

/** An answer as a client sees it. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Header names as sent on the wire, in order. */
  readonly rawHeaderNames: string[];
  readonly body: string;
}

/** Sends `method target` to `base` (an `http://host:port` URL) with the target as given. */
export function rawRequest(
  base: string,
  target: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: string | Buffer; agent?: Agent } = {},
): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'GET',
        path: target,
        headers: options.headers ?? {},
        ...(options.agent === undefined ? { agent: false } : { agent: options.agent }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaderNames: res.rawHeaders.filter((_, i) => i % 2 === 0),
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
