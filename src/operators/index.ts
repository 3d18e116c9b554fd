/**
 * Operators of the admin listener: users with roles, sign-in sessions with a CSRF token, the
 * audit log.
 *
 * @module
 */
export { MemoryAuditLog } from './audit.js';
export type { AuditEntry, AuditInput, AuditLog, AuditResult, MemoryAuditLogOptions } from './audit.js';
export type { OperatorsOptions } from './access.js';
export { hashPassword } from './passwords.js';
export type { OperatorRole } from './roles.js';
export type { SessionOptions, SessionRevocations } from './sessions.js';
export type { OperatorUser, UsersDocument } from './users.js';
