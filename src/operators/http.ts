/**
 * Small HTTP pieces of the operator and configuration routers: a bounded JSON body reader, the
 * titles of statuses, the client address of an audit entry (problem+json answers and the headers
 * of every answer are the admin kit's: `admin/problem.ts`, `admin/headers.ts`).
 *
 * @module
 */
import type { Request, Response } from 'express';

/** Why a body was refused: 400 or 413 with this text. */
export class BodyError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads a JSON body of at most `max` bytes (`Content-Type: application/json` required). Rejects
 * with a {@link BodyError}; past `max`, the connection is closed after the answer.
 */
export function readJson(req: Request, res: Response, max: number): Promise<unknown> {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type !== 'application/json') return Promise.reject(new BodyError(415, 'the body must be application/json'));
  const parsed = req as Request & { _body?: boolean };
  if (parsed._body === true) return Promise.resolve(req.body);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        res.setHeader('Connection', 'close');
        settle(() => reject(new BodyError(413, `the body must be at most ${max} bytes`)));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () =>
      settle(() => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new BodyError(400, 'the body is not JSON'));
        }
      }),
    );
    req.on('error', () => settle(() => reject(new BodyError(400, 'the body could not be read'))));
  });
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The title of a status. */
export function titleOf(status: number): string {
  return TITLES[status] ?? 'Error';
}

/** The client address of an audit entry: the connection's (a proxy's header is not the client's to choose). */
export function addressOf(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
