/**
 * What a route of the admin listener tells the audit trail about the request it answered (why a
 * reset failed, say), kept on the response (`res.locals`) so that it lives as long as the request.
 * The operators' audit trail writes it as the entry's `detail`. A detail never holds a secret.
 *
 * @module
 */
import type { Response } from 'express';

const KEY = 'gatewayAuditDetail';

/** Sets the audit entry's detail of the request `res` answers. */
export function setAuditDetail(res: Response, detail: string): void {
  (res.locals as Record<string, unknown>)[KEY] = detail;
}

/** The audit entry's detail a route set on `res`, if any. */
export function auditDetailOf(res: Response): string | undefined {
  const detail = (res.locals as Record<string, unknown> | undefined)?.[KEY];
  return typeof detail === 'string' ? detail : undefined;
}
