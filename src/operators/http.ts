/**
 * Small HTTP pieces of the operator and configuration routers: a bounded JSON body reader,
 * problem+json answers, the headers of every answer.
 *
 * @module
 */
import type { NextFunction, Request, Response } from 'express';

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
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
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

/** Answers problem+json. */
export function problem(res: Response, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): void {
  res
    .status(status)
    .type('application/problem+json')
    .send(JSON.stringify({ type: `https://httpstatuses.com/${status}`, title, status, detail, ...extra }));
}

const TITLES: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 413: 'Content Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Content', 500: 'Internal Server Error', 503: 'Service Unavailable' };

/** The title of a status. */
export function titleOf(status: number): string {
  return TITLES[status] ?? 'Error';
}

/**
 * Content-Security-Policy of the configuration page and its API: the page's own script, style and
 * API only, no framing, no inline code (the monitoring console's).
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The headers of every answer of these routers. */
export function pageHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', PAGE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cache-Control', 'no-store');
  next();
}

/** The client address of an audit entry: the connection's (a proxy's header is not the client's to choose). */
export function addressOf(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
