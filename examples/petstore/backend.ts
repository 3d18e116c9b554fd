/**
 * The petstore backend of the example: the API the gateway protects, with the pet payload
 * (`id`, `category`, `name`, `photoUrls`, `tags`, `status`). In memory, plain `node:http`, so that it
 * costs little in benchmarks.
 *
 * - `POST /pet` adds a pet, `PUT /pet` updates (or adds) one: both answer the pet as stored;
 * - `GET /pet/{petId}` answers it (404 when unknown), `DELETE /pet/{petId}` removes it;
 * - every answer carries `Access-Control-Allow-Origin: *`, the "cross-origin headers that the
 *   backend adds", which the gateway relays unchanged.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A pet. */
export interface Pet {
  id: number;
  category?: { id: number; name: string };
  name: string;
  photoUrls: string[];
  tags?: Array<{ id: number; name: string }>;
  status?: string;
}

/** Options of {@link startPetstoreBackend}. */
export interface PetstoreBackendOptions {
  /** TCP port; `0` (default) picks an ephemeral one; the example uses 9001. */
  port?: number;
  /** Interface. Default `127.0.0.1`. */
  host?: string;
}

/** A running backend. */
export interface PetstoreBackend {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The pets, by id. */
  readonly pets: Map<number, Pet>;
  /** Headers of the last request received (to show what the gateway forwards). */
  readonly lastRequest: { method?: string; url?: string; headers?: IncomingMessage['headers'] };
  /** Closes the server and its connections. */
  stop(): Promise<void>;
}

/** The pet of the reference scenario. */
export const doggie: Pet = {
  id: 10,
  category: { id: 1, name: 'Dogs' },
  name: 'doggie',
  photoUrls: ['https://example.org/photos/doggie.png'],
  tags: [{ id: 1, name: 'friendly' }],
  status: 'available',
};

const MAX_BODY = 1024 * 1024;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Access-Control-Allow-Origin': '*',
  });
  res.end(text);
}

function isPet(value: unknown): value is Pet {
  const pet = value as Pet;
  return (
    typeof pet === 'object' &&
    pet !== null &&
    Number.isSafeInteger(pet.id) &&
    typeof pet.name === 'string' &&
    Array.isArray(pet.photoUrls) &&
    pet.photoUrls.every((u) => typeof u === 'string')
  );
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error('too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

/** Starts the petstore backend, with the scenario's pet already in it. */
export async function startPetstoreBackend(options: PetstoreBackendOptions = {}): Promise<PetstoreBackend> {
  const pets = new Map<number, Pet>([[doggie.id, structuredClone(doggie)]]);
  const lastRequest: PetstoreBackend['lastRequest'] = {};
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    lastRequest.method = req.method;
    lastRequest.url = req.url;
    lastRequest.headers = req.headers;
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/pet' && (req.method === 'POST' || req.method === 'PUT')) {
      let body: unknown;
      try {
        body = await readJson(req);
      } catch {
        send(res, 400, { code: 400, type: 'error', message: 'Invalid JSON' });
        return;
      }
      if (!isPet(body)) {
        send(res, 405, { code: 405, type: 'error', message: 'Invalid input' });
        return;
      }
      pets.set(body.id, body);
      send(res, 200, body);
      return;
    }
    const match = /^\/pet\/(\d{1,15})$/.exec(path);
    if (match !== null && (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE')) {
      const id = Number(match[1]);
      const pet = pets.get(id);
      if (pet === undefined) {
        send(res, 404, { code: 404, type: 'error', message: 'Pet not found' });
        return;
      }
      if (req.method === 'DELETE') pets.delete(id);
      send(res, 200, pet);
      return;
    }
    send(res, 404, { code: 404, type: 'error', message: 'Not found' });
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { code: 500, type: 'error', message: 'Internal error' });
      else res.destroy();
    });
  });
  // Longer than the gateway's keep-alive, so the gateway is the side that closes idle connections.
  server.keepAliveTimeout = 65_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    pets,
    lastRequest,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
