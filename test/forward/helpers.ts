/**
 * Moved to test/token/forward/helpers.ts (test/ mirrors src/). Kept as a re-export until the
 * authorize and xacml security tests import it from there.
 */
export * from '../token/forward/helpers.js';
