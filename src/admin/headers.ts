/**
 * The security headers of every answer of the consoles and the operators' routes: a strict
 * Content-Security-Policy (the page's own script, style and API only, no framing, no inline code),
 * no sniffing, no referrer, no framing, no caching.
 *
 * @module
 */
import type { NextFunction, Request, Response } from 'express';

/** Content-Security-Policy of the consoles' pages and their APIs. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Sets the headers on `res`. */
export function setPageHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', PAGE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cache-Control', 'no-store');
}

/** The headers as middleware, in front of a router's routes. */
export function pageHeaders(_req: Request, res: Response, next: NextFunction): void {
  setPageHeaders(res);
  next();
}
