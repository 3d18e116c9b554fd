/**
 * Operator roles: who may look, who may use the runtime tools, who may change the configuration.
 *
 * @module
 */

/**
 * An operator's role. `viewer`: the monitoring console and read-only views; `operator`: also the
 * runtime tools (ResetAllCaches, forget) and the audit log; `admin`: also the configuration.
 */
export type OperatorRole = 'viewer' | 'operator' | 'admin';

/** The roles, from the least to the most allowed. */
export const OPERATOR_ROLES: readonly OperatorRole[] = ['viewer', 'operator', 'admin'];

/** Whether `role` is at least `needed`. */
export function roleAllows(role: OperatorRole, needed: OperatorRole): boolean {
  return OPERATOR_ROLES.indexOf(role) >= OPERATOR_ROLES.indexOf(needed);
}

/** Whether `value` names a role. */
export function isRole(value: unknown): value is OperatorRole {
  return typeof value === 'string' && (OPERATOR_ROLES as readonly string[]).includes(value);
}
