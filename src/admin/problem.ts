/**
 * The problem+json answers of the admin listener that are no {@link GatewayError}: a status, its
 * title and a detail (`{ type, title, status, detail, ...extra }`), for the admin routes, the
 * consoles, the operators' routes and the admin host check; and the guard's refusals, which are
 * catalogue errors rendered once by `problem/render.ts`.
 *
 * @module
 */
import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import { GatewayError, messageSets, type GatewayErrorCode } from '../errors.js';
import { PROBLEM_CONTENT_TYPE, renderProblem } from '../problem/render.js';

/** The body of a problem answer: `type` names the status (`https://httpstatuses.com/<status>`). */
function problemText(status: number, title: string, detail: string, extra?: Record<string, unknown>): string {
  return JSON.stringify({ type: `https://httpstatuses.com/${status}`, title, status, detail, ...extra });
}

/** Answers problem+json through Express (`send`: charset and ETag as Express gives them). */
export function problem(res: Response, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): void {
  res
    .status(status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problemText(status, title, detail, extra));
}

/** Answers problem+json on a plain `node:http` response, before any router (not stored: `no-store`). */
export function endProblem(res: ServerResponse, status: number, title: string, detail: string): void {
  const body = problemText(status, title, detail);
  res.writeHead(status, { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** Refusals rendered once: a flood of refused requests costs no error (and stack trace) each. */
const refusals = new Map<GatewayErrorCode, { status: number; type: string; body: string }>();

/** Answers the catalogue error `code` (English), with `Retry-After` when given, ended as it is (no ETag). */
export function refuse(res: Response, code: GatewayErrorCode, retryAfterSeconds?: number): void {
  let refusal = refusals.get(code);
  if (refusal === undefined) {
    const { status, headers, body } = renderProblem(new GatewayError(code), messageSets.en);
    refusals.set(code, (refusal = { status, type: headers['content-type']!, body: JSON.stringify(body) }));
  }
  res.status(refusal.status);
  res.setHeader('Content-Type', refusal.type);
  if (retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(retryAfterSeconds));
  res.setHeader('Content-Length', Buffer.byteLength(refusal.body));
  res.end(refusal.body);
}
