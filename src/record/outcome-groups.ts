/**
 * Outcome groups: the console's coarse filter over the outcome codes.
 *
 * @module
 */
import type { OutcomeCode } from '../errors.js';

/** The name of an outcome group. */
export type OutcomeGroup = 'success' | 'token' | 'denied' | 'limited' | 'gateway' | 'backend';

/**
 * The outcome codes of each group: `success` (relayed or handled), `token` (token refused, or short of the scopes, claims or user authentication required),
 * `denied` (authorization refused), `limited` (refused by traffic control), `gateway` (the gateway failed, or the client went away),
 * `backend` (the backend failed or answered an error). Every code is in exactly one group.
 */
export const outcomeGroups: Readonly<Record<OutcomeGroup, readonly OutcomeCode[]>> = Object.freeze({
  success: Object.freeze(['OK'] as const),
  token: Object.freeze(['TOKEN_FAILED', 'INSUFFICIENT_SCOPE', 'INSUFFICIENT_USER_AUTHENTICATION'] as const),
  denied: Object.freeze(['AUTHORIZATION_DENIED'] as const),
  limited: Object.freeze(['RATE_LIMITED'] as const),
  gateway: Object.freeze(['AUTHORIZATION_SERVER_ERROR', 'DEPENDENCY_UNAVAILABLE', 'NOT_FOUND', 'GENERIC_ERROR', 'ABORTED'] as const),
  backend: Object.freeze(['CONNECTION_ERROR', 'BACKEND_4XX', 'BACKEND_5XX'] as const),
});
