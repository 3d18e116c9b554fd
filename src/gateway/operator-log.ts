/**
 * The operators' audit entries as records of the gateway's structured logger: sign-ins, refusals
 * (as the audit log receives them: the first of an address's window at once, then a summary, so
 * that a flood of guesses cannot flood the log) and actions.
 *
 * @module
 */
import type { GatewayLogger } from '../log.js';
import type { AuditInput } from '../operators/audit.js';

/** Writes one audit entry to `log`. */
export function operatorEvent(log: GatewayLogger, entry: AuditInput): void {
  const fields = {
    actor: entry.actor,
    ...(entry.role === undefined ? {} : { role: entry.role }),
    address: entry.address,
    action: entry.action,
    ...(entry.target === undefined ? {} : { target: entry.target }),
    result: entry.result,
    ...(entry.status === undefined ? {} : { status: entry.status }),
    ...(entry.detail === undefined ? {} : { detail: entry.detail }),
  };
  const who = entry.actor ?? 'nobody';
  if (entry.action === 'sign-in' && entry.result === 'ok') {
    log.info({ event: 'operator_sign_in', ...fields }, `operator ${who} signed in from ${entry.address}`);
  } else if (entry.result === 'refused') {
    log.warn(
      { event: 'operator_refused', ...fields },
      `operator ${who} refused: ${entry.action}${entry.detail === undefined ? '' : ` (${entry.detail})`} from ${entry.address}`,
    );
  } else {
    log.info(
      { event: 'operator_action', ...fields },
      `operator ${who}: ${entry.action}${entry.target === undefined ? '' : ` ${entry.target}`} ${entry.result}`,
    );
  }
}
